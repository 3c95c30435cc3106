"""An observation added once under its id, and the one kept when it was there already (``HostDB`` part).

``add_once`` keeps an observation (indexed for search, as every inbox write
is) unless one with its id is already there, and hands back the one that is
— in one transaction, so two agents sending the same report at once store it
once and both learn which one was kept (``foldctl mcp``'s ``fold_report``).

``recent_from`` reads, newest first, when one sender's observations of a
source came in since an instant: what ``fold_host.mcp.quota`` counts to bound
an agent's reports per hour.
"""

from __future__ import annotations

import json
from datetime import datetime

from fold_core.observation import Observation
from fold_core.timefmt import parse_instant
from fold_host.hostdb.part import TablePart

__all__ = ["EntryTables"]

SCAN_CHUNK = 500


class EntryTables(TablePart):
    """The add-once write of the inbox."""

    def add_once(self, observation: Observation) -> tuple[Observation, bool]:
        """``(the stored observation, whether it is the one given)``: an id already kept wins."""
        with self.transaction() as db:
            if self._insert(db, [observation]):
                return observation, True
            body = db.execute("SELECT body FROM observations WHERE id = ?", (observation.id,)).fetchone()[0]
        return Observation.from_json(body), False

    def recent_from(self, *, source: str, sender: str, via: str, since: datetime, limit: int) -> list[str]:
        """``observed_at`` of ``source``'s observations from ``sender`` with ``meta.via`` = ``via`` that came in
        after ``since``, newest first, at most ``limit`` of them.

        Read newest first by arrival, a chunk at a time, until one came in at ``since`` or before: the cost is the
        source's last hour, never its history."""
        found: list[str] = []
        before = None
        while len(found) < limit:
            rows = self.connection.execute(
                "SELECT seq, observed_at, body FROM observations WHERE source = ?"
                + ("" if before is None else " AND seq < ?") + " ORDER BY seq DESC LIMIT ?",
                (source, SCAN_CHUNK) if before is None else (source, before, SCAN_CHUNK)).fetchall()
            for seq, observed_at, body in rows:
                moment = parse_instant(observed_at)
                if moment is not None and moment <= since:
                    return found
                data = json.loads(body)
                if data.get("from") == sender and (data.get("meta") or {}).get("via") == via:
                    found.append(observed_at)
                    if len(found) >= limit:
                        return found
            if len(rows) < SCAN_CHUNK:
                return found
            before = rows[-1][0]
        return found
