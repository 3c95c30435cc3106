"""What the store's records cite: the ``cited`` table (``HostDB`` part).

The store keeps every item's sources (``event:<observation id>``); host.db
keeps the inbox. When host.db is lost and built anew — deleted, restored from
an old backup, moved aside after damage — the sources are read again from
their first run and observations the editor settled long ago arrive as new.
Offered to the editor again, they would bring back items it had withdrawn.
So host.db keeps, beside the inbox, which observation ids the store's records
cite (read from the records after ``cited_through``), and a pending
observation that the store already cites is settled as ``used`` without
asking the editor, related to the items that cite it.
"""

from __future__ import annotations

from collections.abc import Iterable

from fold_host.hostdb.part import TablePart

__all__ = ["CITED_THROUGH", "CitedTables"]

CITED_THROUGH = "cited_through"  # host_meta: the event_seq up to which the records' citations are known
WHY = ("already cited by the store's records ({items}); host.db had no record of it (rebuilt), so the editor "
       "was not asked again")


class CitedTables(TablePart):
    """``cited``: (observation id, item id) pairs read from the store's records."""

    def cited_through(self) -> int:
        return int(self.meta(CITED_THROUGH, 0))

    def add_cited(self, pairs: Iterable[tuple[str, str]], *, through: int) -> None:
        """Remember these (observation, item) citations, read from the records up to ``through``."""
        with self.transaction() as db:
            db.executemany("INSERT INTO cited (event, item) VALUES (?, ?) ON CONFLICT DO NOTHING", list(pairs))
            self._set_meta_in(db, CITED_THROUGH, through)

    def forget_cited(self) -> None:
        """Forget every citation (the store is not the one they were read from)."""
        with self.transaction() as db:
            db.execute("DELETE FROM cited")
            self._set_meta_in(db, CITED_THROUGH, 0)

    def settle_cited(self, *, now: str) -> list[str]:
        """Pending observations the store already cites become ``used`` (related: the citing items); their ids.

        Only observations the editor never saw (never deferred): a deferred one is the editor's to settle; and,
        with several hosts, none a window holds (its host, or the one taking it over, settles them with its batch).
        """
        with self.transaction() as db:
            cites: dict[str, set[str]] = {}  # observation -> citing items, in arrival order (SQL both engines read)
            for event, item in db.execute("SELECT o.id, c.item FROM observations o JOIN cited c ON c.event = o.id "
                                          f"WHERE o.status = 'pending' AND o.deferred_times = 0{self._unclaimed} "
                                          "ORDER BY o.seq").fetchall():
                cites.setdefault(event, set()).add(item)
            marks = [{"event": event, "disposition": "used", "why": WHY.format(items=", ".join(sorted(items))),
                      "related": sorted(items)} for event, items in cites.items()]
            self._mark_in(db, marks, batch_id=None, now=now)
        return list(cites)
