"""Untrusted text → clean Unicode, shared by every adapter: ``clean`` (bytes, headers, lines) and ``html``."""
