"""The hosts sharing a PostgreSQL host database: who runs, their heartbeats (``PgHostDB`` part).

One row per host process (``foldctl run``, ``foldctl tick``): where it runs
(host name, pid, command), when it started, its last heartbeat and, once it
stopped cleanly, when. The heartbeat renews, in one transaction, everything
the host holds: its leases and its windows. ``foldctl doctor`` lists the rows
(``hosts``); a host is ``alive`` while it has not stopped and its last
heartbeat is younger than its lease. Rows of hosts silent for a week are
dropped when a host starts.
"""

from __future__ import annotations

from datetime import datetime

from fold_host.hostdb.pg.connection import PgPart

__all__ = ["HostRows"]

FORGET_AFTER = "7 days"
_UNTIL = "clock_timestamp() + ? * interval '1 second'"


def _text(moment: datetime | None) -> str | None:
    return None if moment is None else moment.isoformat(timespec="seconds")


class HostRows(PgPart):
    """``hosts``: register, heartbeat, stop, list."""

    def register_host(self, *, hostname: str, pid: int, command: str) -> None:
        with self.transaction() as db:
            db.execute(f"DELETE FROM hosts WHERE heartbeat_at < clock_timestamp() - interval '{FORGET_AFTER}'")
            db.execute("INSERT INTO hosts (id, hostname, pid, command, lease) VALUES (?, ?, ?, ?, ?)",
                       (self._holder(), hostname, pid, command, self.lease))

    def heartbeat(self) -> int:
        """Renew this host's row, leases and windows; the number of windows it holds."""
        holder = self._holder()
        with self.replayable() as db:
            db.execute("UPDATE hosts SET heartbeat_at = clock_timestamp() WHERE id = ?", (holder,))
            db.execute(f"UPDATE leases SET expires_at = {_UNTIL} WHERE holder = ?", (self.lease, holder))
            return db.execute(f"UPDATE windows SET expires_at = {_UNTIL} WHERE holder = ?",
                              (self.lease, holder)).rowcount

    def host_stopped(self) -> None:
        """A clean stop: the leases go, the windows may be taken over at once."""
        holder = self._holder()
        with self.transaction() as db:
            db.execute("UPDATE hosts SET stopped_at = clock_timestamp(), heartbeat_at = clock_timestamp() "
                       "WHERE id = ?", (holder,))
            db.execute("DELETE FROM leases WHERE holder = ?", (holder,))
            db.execute("UPDATE windows SET expires_at = clock_timestamp() WHERE holder = ?", (holder,))

    def hosts(self) -> list[dict]:
        """Every known host, the most recent heartbeat first: id, where, since, last heartbeat, alive, windows."""
        rows = self._rows(
            "SELECT h.id, h.hostname, h.pid, h.command, h.started_at, h.heartbeat_at, h.stopped_at, h.lease, "
            "h.stopped_at IS NULL AND h.heartbeat_at + h.lease * interval '1 second' > clock_timestamp() AS alive, "
            "extract(epoch FROM clock_timestamp() - h.heartbeat_at) AS silent, "
            "(SELECT count(*) FROM windows AS w WHERE w.holder = h.id) AS windows "
            "FROM hosts AS h ORDER BY h.heartbeat_at DESC, h.id")
        return [{"id": row["id"], "hostname": row["hostname"], "pid": row["pid"], "command": row["command"],
                 "started_at": _text(row["started_at"]), "heartbeat_at": _text(row["heartbeat_at"]),
                 "stopped_at": _text(row["stopped_at"]), "alive": bool(row["alive"]),
                 "silent_seconds": round(float(row["silent"]), 1), "windows": row["windows"]} for row in rows]
