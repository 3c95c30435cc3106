"""Inbound adapters (IMAP mail, RSS/Atom, work logs): contract §10. Arrive in later issues."""
