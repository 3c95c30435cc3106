"""The daemon's runtime (``foldctl run``): the scheduler, watches, reload, presence, locks, systemd, the log, health."""
