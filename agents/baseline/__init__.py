"""The baseline editor: deterministic rules, no model (``editor`` is the backend; the rest are its parts)."""
