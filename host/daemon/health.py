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
  older than ``STALE_AFTER`` hangs. Either fails the check. On a store in
  PostgreSQL (``hosts_check``): ok while a daemon runs among the hosts, or
  when the last one stopped cleanly; failed when the last one went silent.

Nothing here writes; each check is one look, bounded by SQLite's busy
timeout and the store lock's bounded wait.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from fold_core.errors import FoldError
from fold_core.state import State
from fold_core.store.location import is_url
from fold_core.timefmt import parse_instant
from fold_host.daemon.hostlock import host_running
from fold_host.hostdb import host_db_exists, open_host_db
from fold_host.words import Sentence

__all__ = ["HEARTBEAT_EVERY", "STALE_AFTER", "daemon_check", "health", "host_db_check", "hosts_check"]

HEARTBEAT_EVERY = 10.0  # seconds between the daemon's heartbeats (and systemd watchdog pings)
STALE_AFTER = 60.0  # seconds: an older heartbeat means the daemon hangs


def daemon_check(record: dict | None, holder: str | None, now: datetime) -> tuple[bool, str]:
    """``(ok, detail)`` for the daemon record of host.db and who holds the host lock now."""
    if record is None:
        if holder:
            return True, Sentence("no daemon has run on this store; now held by {holder}", holder=holder)
        return True, Sentence("no daemon has run on this store (ticked by hand or by cron)")
    pid, beat_at = record.get("pid"), record.get("beat_at")
    if record.get("stopped_at"):
        return True, Sentence("the daemon (pid {pid}) stopped cleanly at {at}", pid=pid, at=record["stopped_at"])
    if not holder or _holder_pid(holder) != pid:  # free, or held by another process (a new start, a tick)
        now_held = Sentence("; {holder} holds the store now", holder=holder) if holder else ""
        return False, Sentence("the daemon (pid {pid}) died without a clean stop; its last heartbeat was at {at}"
                               "{now_held}: start it again (`foldctl run`, or `systemctl --user restart fold`)",
                               pid=pid, at=beat_at, now_held=now_held)
    beat = parse_instant(beat_at)
    age = (now - beat).total_seconds() if beat is not None else float("inf")
    if age > STALE_AFTER:
        return False, Sentence("the daemon (pid {pid}) holds the store but its last heartbeat is {age}s old "
                               "(at {at}): it is stuck", pid=pid, age=f"{age:.0f}", at=beat_at)
    return True, Sentence("running (pid {pid}) since {since}; last heartbeat {age}s ago", pid=pid,
                          since=record.get("started_at"), age=f"{max(age, 0):.0f}")


def _holder_pid(holder: str) -> int | None:
    """The pid in the host lock's note (``pid 123: foldctl run``), None when it has none."""
    words = holder.split()
    if len(words) >= 2 and words[0] == "pid" and words[1].rstrip(":").isdigit():
        return int(words[1].rstrip(":"))
    return None


def host_db_check(store_dir: str) -> tuple[bool, str, dict | None]:
    """``(ok, detail, daemon record)``: host.db opens and reads (it may not exist yet)."""
    try:
        if not host_db_exists(store_dir):
            return True, "no host database yet: the first cycle creates it", None
        with open_host_db(store_dir) as db:
            record = db.daemon_record()
            version = db.schema_version
    except (FoldError, OSError) as error:
        return False, f"host.db cannot be read: {error}", None
    except Exception as error:  # sqlite3.DatabaseError on a damaged file: still an answer, never a traceback
        return False, f"host.db cannot be read: {type(error).__name__}: {error}", None
    return True, f"schema {version}", record


def hosts_check(location: str) -> tuple[bool, str]:
    """``(ok, detail)`` on a store in PostgreSQL: a daemon runs, or the last one stopped cleanly (or none ran)."""
    with open_host_db(location) as db:
        daemons = [row for row in db.hosts() if row["command"] == "foldctl run"]
    running = [row for row in daemons if row["alive"]]
    if running:
        newest = min(row["silent_seconds"] for row in running)
        return True, f"running: {len(running)} host(s); last heartbeat {newest:g}s ago"
    if not daemons:
        return True, "no daemon has run on this store (ticked by hand or by cron)"
    last = daemons[0]
    if last["stopped_at"]:
        return True, f"no daemon runs; the last ({last['id']}) stopped cleanly at {last['stopped_at']}"
    return False, (f"no daemon runs; the last ({last['id']}) went silent at {last['heartbeat_at']} without a clean "
                   "stop: start it again (`foldctl run`)")


def health(store_dir: str, read_store: Callable[[], State], now: datetime) -> tuple[bool, dict]:
    """``(ok, {name: {"ok", "detail"}})`` — see the module docstring."""
    checks: dict[str, dict] = {}
    try:
        state = read_store()
        checks["store"] = {"ok": True, "detail": f"event {state.event_seq}, revision {state.revision}"}
    except (FoldError, OSError) as error:
        checks["store"] = {"ok": False, "detail": f"the store cannot be read: {error}"}
    db_ok, detail, record = host_db_check(store_dir)
    checks["host_db"] = {"ok": db_ok, "detail": detail}
    if db_ok and is_url(store_dir):
        try:
            ok, detail = hosts_check(store_dir)
        except (FoldError, OSError) as error:  # the database went away between the two looks
            ok, detail = False, f"the hosts cannot be read: {error}"
        checks["daemon"] = {"ok": ok, "detail": detail}
    elif db_ok:
        ok, detail = daemon_check(record, host_running(store_dir), now)
        checks["daemon"] = {"ok": ok, "detail": detail}
    return all(check["ok"] for check in checks.values()), checks
