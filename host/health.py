"""Is this Fold well right now? The checks behind ``GET /healthz`` and doctor's daemon line.

``health(store_dir, read_store, now)`` answers ``(ok, checks)`` with one
check per part, each ``{"ok": bool, "detail": str}``:

* ``store`` — the store reads (``read_store()`` returns its state);
* ``host_db`` — host.db opens and reads (``host_db_check``; a store that was
  never ticked has none yet, which is fine);
* ``daemon`` — ``daemon_check``: a store only ever ticked (cron) needs no
  daemon; once ``foldctl run`` has run on it, its record in host.db says
  whether it stopped cleanly. A record without a clean stop whose daemon no
  longer holds the host lock is a daemon that died; one whose heartbeat is
  older than ``STALE_AFTER`` hangs. Either fails the check.

Nothing here writes; each check is one look, bounded by SQLite's busy
timeout and the store lock's bounded wait.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from datetime import datetime

from fold_core.timefmt import parse_instant

__all__ = ["HEARTBEAT_EVERY", "STALE_AFTER", "daemon_check", "health", "host_db_check"]

HEARTBEAT_EVERY = 10.0  # seconds between the daemon's heartbeats (and systemd watchdog pings)
STALE_AFTER = 60.0  # seconds: an older heartbeat means the daemon hangs


def daemon_check(record: dict | None, holder: str | None, now: datetime) -> tuple[bool, str]:
    """``(ok, detail)`` for the daemon record of host.db and who holds the host lock now."""
    if record is None:
        if holder:
            return True, f"no daemon has run on this store; now held by {holder}"
        return True, "no daemon has run on this store (ticked by hand or by cron)"
    pid, beat_at = record.get("pid"), record.get("beat_at")
    if record.get("stopped_at"):
        return True, f"the daemon (pid {pid}) stopped cleanly at {record['stopped_at']}"
    if not holder or _holder_pid(holder) != pid:  # free, or held by another process (a new start, a tick)
        now_held = f"; {holder} holds the store now" if holder else ""
        return False, (f"the daemon (pid {pid}) died without a clean stop; its last heartbeat was at {beat_at}"
                       f"{now_held}: start it again (`foldctl run`, or `systemctl --user restart fold`)")
    beat = parse_instant(beat_at)
    age = (now - beat).total_seconds() if beat is not None else float("inf")
    if age > STALE_AFTER:
        return False, (f"the daemon (pid {pid}) holds the store but its last heartbeat is {age:.0f}s old "
                       f"(at {beat_at}): it is stuck")
    return True, f"running (pid {pid}) since {record.get('started_at')}; last heartbeat {max(age, 0):.0f}s ago"


def _holder_pid(holder: str) -> int | None:
    """The pid in the host lock's note (``pid 123: foldctl run``), None when it has none."""
    words = holder.split()
    if len(words) >= 2 and words[0] == "pid" and words[1].rstrip(":").isdigit():
        return int(words[1].rstrip(":"))
    return None


def host_db_check(store_dir: str) -> tuple[bool, str, dict | None]:
    """``(ok, detail, daemon record)``: host.db opens and reads (it may not exist yet)."""
    from fold_core.errors import FoldError
    from fold_host.hostdb import FILE_NAME, open_host_db

    if not os.path.exists(os.path.join(store_dir, FILE_NAME)):
        return True, "no host.db yet: the first cycle creates it", None
    try:
        with open_host_db(store_dir) as db:
            record = db.daemon_record()
            version = db.schema_version
    except (FoldError, OSError) as error:
        return False, f"host.db cannot be read: {error}", None
    except Exception as error:  # sqlite3.DatabaseError on a damaged file: still an answer, never a traceback
        return False, f"host.db cannot be read: {type(error).__name__}: {error}", None
    return True, f"schema {version}", record


def health(store_dir: str, read_store: Callable[[], object], now: datetime) -> tuple[bool, dict]:
    """``(ok, {name: {"ok", "detail"}})`` — see the module docstring."""
    from fold_core.errors import FoldError
    from fold_host.hostlock import host_running

    checks: dict[str, dict] = {}
    try:
        state = read_store()
        checks["store"] = {"ok": True, "detail": f"event {state.event_seq}, revision {state.revision}"}
    except (FoldError, OSError) as error:
        checks["store"] = {"ok": False, "detail": f"the store cannot be read: {error}"}
    db_ok, detail, record = host_db_check(store_dir)
    checks["host_db"] = {"ok": db_ok, "detail": detail}
    if db_ok:
        ok, detail = daemon_check(record, host_running(store_dir), now)
        checks["daemon"] = {"ok": ok, "detail": detail}
    return all(check["ok"] for check in checks.values()), checks
