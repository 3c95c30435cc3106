"""The daemon's jobs that only several hosts need (a store in PostgreSQL; ``daemon.Daemon`` part).

* **Deliveries in a job of their own.** With several hosts, each consumer
  delivers from one host at a time (``hostdb.pg_shared``: its turn). A host
  asks for a delivery after each committed window (requests made while one
  runs are coalesced into one more), so that its windows follow one another
  without waiting for the consumers.
* **Consumers left behind.** A record committed while another host held a
  consumer's turn is delivered by whichever host's watch job sees the
  consumer behind the store's last record next (every ``WATCH_EVERY``).

Each job reads the store through a reader of its own (the cycle's store is
not shared between threads).
"""

from __future__ import annotations

__all__ = ["SharedJobs"]


class SharedJobs:
    """``request_delivery``, ``deliver`` and ``deliveries_behind`` (see the module doc)."""

    def _shared_init(self) -> None:
        from fold_core.store.location import is_url

        self.shared = is_url(self.host.location)  # several hosts: deliveries in a job of their own
        self._delivering = self._delivery_requested = False
        self._deliveries_store = None  # the delivery job's store reader
        self._reader = None  # the watch job's store reader

    def request_delivery(self) -> None:
        """Ask for a delivery; requests made while one runs are coalesced into one more."""
        with self._flags:
            if self._delivering:
                self._delivery_requested = True
                return
            self._delivering = True
        self.scheduler.add_job(self._job(self.deliver), id="deliver", replace_existing=True)

    def deliver(self) -> None:
        from fold_core.store.locate import open_store
        from fold_host.cycle.pipeline import deliver_records

        try:
            while True:
                with self._flags:
                    self._delivery_requested = False
                if self._deliveries_store is None:
                    self._deliveries_store = open_store(self.host.location)
                with self.host.open_db() as db:
                    results = deliver_records(self.host, db, self.clock()[1], store=self._deliveries_store)
                for result in results:
                    if result.get("status") == "failed":
                        self.log("problem", detail=f"consumer {result.get('consumer')} failed: {result.get('error')}")
                with self._flags:
                    if not self._delivery_requested:
                        self._delivering = False
                        return
        except BaseException:
            with self._flags:
                self._delivering = False
            raise

    def deliveries_behind(self, db) -> list[str]:
        """Consumers (not waiting after a failure) behind the store's last record; none on a directory."""
        if not self.shared or not self.host.consumers:
            return []
        from fold_core.store.locate import open_store
        from fold_core.timefmt import parse_instant

        if self._reader is None:
            self._reader = open_store(self.host.location)
        head = self._reader.state().event_seq
        now = self.clock()[0]
        return [row["name"] for row in db.lagging_consumers(head, [c.name for c in self.host.consumers])
                if not row["next_try_at"] or parse_instant(row["next_try_at"]) <= now]
