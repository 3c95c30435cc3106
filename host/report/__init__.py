"""Periodic reports and the attention figures (contract §12 ``report``; docs/consumers.md)."""
