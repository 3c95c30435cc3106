"""AI-agent work logs: the ``worklog`` adapter (``adapter``) and the line formats it reads (``formats``)."""
