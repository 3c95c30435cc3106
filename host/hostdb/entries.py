"""An observation added once under its id, and the one kept when it was there already (``HostDB`` part).

``add_once`` keeps an observation (indexed for search, as every inbox write
is) unless one with its id is already there, and hands back the one that is
— in one transaction, so two agents sending the same report at once store it
once and both learn which one was kept (``foldctl mcp``'s ``fold_report``).
"""

from __future__ import annotations

from fold_core.observation import Observation
from fold_host.hostdb.part import TablePart

__all__ = ["EntryTables"]


class EntryTables(TablePart):
    """The add-once write of the inbox."""

    def add_once(self, observation: Observation) -> tuple[Observation, bool]:
        """``(the stored observation, whether it is the one given)``: an id already kept wins."""
        with self.transaction() as db:
            if self._insert(db, [observation]):
                return observation, True
            body = db.execute("SELECT body FROM observations WHERE id = ?", (observation.id,)).fetchone()[0]
        return Observation.from_json(body), False
