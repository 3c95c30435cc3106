"""Conformance runner."""
