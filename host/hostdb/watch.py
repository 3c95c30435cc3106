"""What monitoring reads from host.db: the counters and the daemon's heartbeat (``HostDB`` part).

* ``counters`` — one row per (name, labels): polls by source and status,
  windows by outcome, editor calls by backend and outcome, editor tokens by
  direction, deliveries by consumer and outcome. Each is counted in the same
  transaction as the thing it counts, so a crash never counts what did not
  happen; they only grow (a restart, or pruning old rows, never resets them).
* the daemon record (``host_meta`` key ``daemon``) — ``{pid, started_at,
  beat_at, stopped_at}``: written when ``foldctl run`` starts, its
  ``beat_at`` moved by the daemon's heartbeat, ``stopped_at`` set on a clean
  stop. A record without ``stopped_at`` whose daemon no longer holds the host
  lock is a daemon that died.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from fold_host.hostdb.part import TablePart
from fold_host.hostdb.protocol import Link

__all__ = ["DAEMON_KEY", "WatchTables", "count_in"]

DAEMON_KEY = "daemon"


def count_in(db: Link, name: str, labels: Sequence[object], by: int = 1) -> None:
    """Add ``by`` to the counter ``name{labels}`` inside the caller's transaction."""
    if by:
        db.execute("INSERT INTO counters (name, labels, value) VALUES (?, ?, ?) ON CONFLICT (name, labels) "
                   "DO UPDATE SET value = counters.value + excluded.value",
                   (name, json.dumps([str(label) for label in labels], ensure_ascii=False), int(by)))


class WatchTables(TablePart):
    """The counters and the daemon record."""

    def counters(self) -> dict[str, list[tuple[tuple[str, ...], int]]]:
        """Every counter: ``{name: [(labels, value), …]}``."""
        summed: dict[str, dict[tuple[str, ...], int]] = {}
        for name, labels, value in self.connection.execute("SELECT name, labels, value FROM counters "
                                                           "ORDER BY name, labels").fetchall():
            # Summed by the labels read: the rows an upgrade started from (SQLite's json_array, no spaces)
            # and those counted since (json.dumps) are one series.
            series = summed.setdefault(name, {})
            key = tuple(json.loads(labels))
            series[key] = series.get(key, 0) + value
        return {name: list(series.items()) for name, series in summed.items()}

    def count(self, name: str, labels: Sequence[object], by: int = 1) -> None:
        """Add to a counter in a transaction of its own."""
        with self.transaction() as db:
            count_in(db, name, labels, by)

    # -- the daemon ---------------------------------------------------------------

    def daemon_started(self, *, pid: int, now: str) -> None:
        self.set_meta(DAEMON_KEY, {"pid": pid, "started_at": now, "beat_at": now, "stopped_at": None})

    def daemon_beat(self, *, pid: int, now: str) -> None:
        """The heartbeat: only the running daemon's own record moves."""
        with self.transaction() as db:
            record = self._daemon_in(db)
            if record is not None and record.get("pid") == pid and record.get("stopped_at") is None:
                self._set_meta_in(db, DAEMON_KEY, {**record, "beat_at": now})

    def daemon_stopped(self, *, pid: int, now: str) -> None:
        with self.transaction() as db:
            record = self._daemon_in(db)
            if record is not None and record.get("pid") == pid:
                self._set_meta_in(db, DAEMON_KEY, {**record, "stopped_at": now})

    def daemon_restored(self, *, now: str) -> None:
        """A restored copy: the daemon that ran while the backup was taken does not run here."""
        with self.transaction() as db:
            record = self._daemon_in(db)
            if record is not None and record.get("stopped_at") is None:
                self._set_meta_in(db, DAEMON_KEY, {**record, "stopped_at": now, "restored_at": now})

    def daemon_record(self) -> dict | None:
        """The last daemon's record, or None when ``foldctl run`` never ran on this store."""
        return self._daemon_in(self.connection)

    @staticmethod
    def _daemon_in(db: Link) -> dict | None:
        row = db.execute("SELECT value FROM host_meta WHERE key = ?", (DAEMON_KEY,)).fetchone()
        record = json.loads(row[0]) if row is not None else None
        return record if isinstance(record, dict) else None
