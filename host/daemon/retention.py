"""When the retention pass runs (``[host] keep_observations``; the pass itself is ``HostDB.forget_text``).

Both the daemon (an hourly job) and ``foldctl tick`` (a store run by cron)
call ``retain``; it does the pass at most once per ``RETAIN_EVERY``, noted in
host.db, so a tick every minute does not scan the inbox every minute.

Retention never forgets the evidence of what the state says: an observation
that an active item cites as a source (``event:<id>``), or that an item cites
which stopped being active (withdrawn, merged) less than ``keep`` ago, keeps
its text, title and sender however old it is (``cited_by_live_items``, read
from the store's state when the pass runs). How many were kept for that
reason is noted in host.db (``LAST_PASS_KEY``) and ``foldctl doctor`` says it.
A store that cannot be read skips the pass: nothing is forgotten blind.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from fold_core.errors import StoreError
from fold_core.timefmt import parse_instant
from fold_host.hostdb import HostDB

__all__ = ["LAST_PASS_KEY", "RETAIN_EVERY", "cited_by_live_items", "retain"]

RETAIN_EVERY = timedelta(hours=1)
LAST_KEY = "retained_at"
LAST_PASS_KEY = "last_retention"  # host_meta: {at, dropped, kept_cited} of the last pass
EVENT_REF = "event:"


def cited_by_live_items(state: Any, now: datetime, keep: timedelta) -> frozenset[str]:
    """The observation ids that active items cite, and items that stopped being active less than ``keep`` ago."""
    cited: set[str] = set()
    for item in state.items.values():
        if item.get("status") != "active":
            since = parse_instant(item.get("status_at"))
            if since is None or now - since >= keep:
                continue
        for source in item.get("sources") or ():
            ref = source.get("ref") if isinstance(source, dict) else None
            if isinstance(ref, str) and ref.startswith(EVENT_REF):
                cited.add(ref[len(EVENT_REF):])
    return frozenset(cited)


def retain(db: HostDB, store: Any, keep: timedelta | None, now: datetime, now_text: str) -> int | None:
    """Drop the text of processed observations older than ``keep`` that no live item cites; how many, or None
    when not due (or the store's state could not be read)."""
    if keep is None:
        return None
    last = parse_instant(db.meta(LAST_KEY))
    if last is not None and now - last < RETAIN_EVERY and last <= now:
        return None
    try:
        protect = cited_by_live_items(store.state(), now, keep)
    except StoreError:
        return None
    dropped, kept = db.forget_text(before=(now - keep).isoformat(timespec="seconds"), now=now_text, protect=protect)
    db.set_meta(LAST_KEY, now_text)
    db.set_meta(LAST_PASS_KEY, {"at": now_text, "dropped": dropped, "kept_cited": kept})
    return dropped
