"""Jobs run on request, and the deliveries that only several hosts need (a store in PostgreSQL).

* **Coalesced requests** (``Coalesced``): the daemon's cycle and the
  delivery job run when asked; requests made while one runs are coalesced
  into exactly one more run.
* **Deliveries in a job of their own** (``Deliveries``). With several hosts,
  each consumer delivers from one host at a time (``hostdb.pg.shared``: its
  turn). A host asks for a delivery after each committed window, so that its
  windows follow one another without waiting for the consumers.
* **Consumers left behind.** A record committed while another host held a
  consumer's turn is delivered by whichever host's watch job sees the
  consumer behind the store's last record next (every ``WATCH_EVERY``).

Each job reads the store through a reader of its own (the cycle's store is
not shared between threads).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import datetime
from typing import Protocol

from fold_core.store.base import Store
from fold_core.store.locate import open_store
from fold_core.timefmt import instant
from fold_host.cycle.pipeline import Host, deliver_records
from fold_host.daemon.eventlog import EventLog
from fold_host.hostdb import HostDB

__all__ = ["Coalesced", "Deliveries", "JobHost"]


class Coalesced:
    """A job started on request; requests made while it runs make exactly one more run.

    ``start()`` hands the job to the scheduler; the job calls ``run(step)``.
    """

    def __init__(self, flags: threading.Lock, start: Callable[[], None]) -> None:
        self._flags, self._start = flags, start
        self.running = False  # read under ``flags``
        self._requested = False

    def request(self) -> None:
        with self._flags:
            if self.running:
                self._requested = True
                return
            self.running = True
        self._start()

    def run(self, step: Callable[[], bool | None]) -> None:
        """``step()`` again while it answers True, or False and a request came meanwhile; None stops it."""
        try:
            while True:
                with self._flags:
                    self._requested = False
                again = step()
                with self._flags:
                    if not (again or (again is not None and self._requested)):
                        self.running = False
                        return
        except BaseException:
            with self._flags:
                self.running = False
            raise


class JobHost(Protocol):
    """What the deliveries use of the daemon (its ``host`` is replaced on a reload)."""

    host: Host
    log: EventLog

    def clock(self) -> tuple[datetime, str]: ...

    def start_job(self, function: Callable[[], None], job_id: str) -> None: ...


class Deliveries:
    """``request``, ``deliver`` and ``behind`` for several hosts (see the module doc)."""

    def __init__(self, daemon: JobHost, flags: threading.Lock) -> None:
        self.daemon = daemon
        self._turn = Coalesced(flags, lambda: daemon.start_job(self.deliver, "deliver"))
        self._store: Store | None = None  # the delivery job's store reader
        self._reader: Store | None = None  # the watch job's store reader

    def request(self) -> None:
        """Ask for a delivery; requests made while one runs are coalesced into one more."""
        self._turn.request()

    def deliver(self) -> None:
        self._turn.run(self._deliver_once)

    def _deliver_once(self) -> bool:
        host = self.daemon.host
        if self._store is None:
            self._store = open_store(host.location)
        with host.open_db() as db:
            results = deliver_records(host, db, self.daemon.clock()[1], store=self._store)
        for result in results:
            if result.get("status") == "failed":
                self.daemon.log("problem", detail=f"consumer {result.get('consumer')} failed: {result.get('error')}")
        return False  # again only when asked meanwhile

    def behind(self, db: HostDB) -> list[str]:
        """Consumers (not waiting after a failure) behind the store's last record."""
        host = self.daemon.host
        if not host.consumers:
            return []
        if self._reader is None:
            self._reader = open_store(host.location)
        head = self._reader.state().event_seq
        now = self.daemon.clock()[0]
        return [row["name"] for row in db.lagging_consumers(head, [c.name for c in host.consumers])
                if not row["next_try_at"] or instant(row["next_try_at"]) <= now]
