"""Consumer plugins (briefing, push, log, overview): contract §12-§13. Arrive in later issues."""
