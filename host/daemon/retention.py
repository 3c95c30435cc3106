"""When the retention pass runs (``[host] keep_observations``; the pass itself is ``HostDB.forget_text``).

Both the daemon (an hourly job) and ``foldctl tick`` (a store run by cron)
call ``retain``; it does the pass at most once per ``RETAIN_EVERY``, noted in
host.db, so a tick every minute does not scan the inbox every minute.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from fold_core.timefmt import parse_instant
from fold_host.hostdb import HostDB

__all__ = ["RETAIN_EVERY", "retain"]

RETAIN_EVERY = timedelta(hours=1)
LAST_KEY = "retained_at"


def retain(db: HostDB, keep: timedelta | None, now: datetime, now_text: str) -> int | None:
    """Drop the text of processed observations older than ``keep``; how many, or None when not due."""
    if keep is None:
        return None
    last = parse_instant(db.meta(LAST_KEY))
    if last is not None and now - last < RETAIN_EVERY and last <= now:
        return None
    dropped = db.forget_text(before=(now - keep).isoformat(timespec="seconds"), now=now_text)
    db.set_meta(LAST_KEY, now_text)
    return dropped
