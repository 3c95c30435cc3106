"""One observation of the inbox at a time: looked up with its fate, or added once under its id (``HostDB`` part).

``observation_entry`` answers what ``foldctl mcp``'s ``fold_observation``
shows: the stored observation and what the editor did with it.
``add_once`` keeps an observation unless one with its id is already there,
and hands back the one that is — in one transaction, so two agents sending
the same report at once store it once and both learn which one was kept.
"""

from __future__ import annotations

import json
import sqlite3

from fold_core.observation import Observation

__all__ = ["EntryTables"]


class EntryTables:
    """Single-observation reads and the add-once write."""

    connection: sqlite3.Connection

    def observation_entry(self, observation_id: str) -> dict | None:
        """``{"observation": §9 event, "status", "disposition", "why", "related", "batch_id", "processed_at",
        "failed_windows"}``, or None for an id the inbox never had."""
        row = self.connection.execute(
            "SELECT body, status, disposition, why, related, batch_id, processed_at, failed_windows "
            "FROM observations WHERE id = ?", (observation_id,)).fetchone()
        if row is None:
            return None
        body, status, disposition, why, related, batch_id, processed_at, failed = row
        return {"observation": Observation.from_json(body).to_event(), "status": status,
                "disposition": disposition, "why": why,
                "related": json.loads(related) if related is not None else None,
                "batch_id": batch_id, "processed_at": processed_at, "failed_windows": failed}

    def add_once(self, observation: Observation) -> tuple[Observation, bool]:
        """``(the stored observation, whether it is the one given)``: an id already kept wins."""
        with self.transaction() as db:
            cursor = db.execute(
                "INSERT OR IGNORE INTO observations (id, source, channel, at, observed_at, body, thread) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                (observation.id, observation.source, observation.channel, observation.at,
                 observation.observed_at, observation.to_json(), observation.thread))
            if cursor.rowcount:
                return observation, True
            body = db.execute("SELECT body FROM observations WHERE id = ?", (observation.id,)).fetchone()[0]
        return Observation.from_json(body), False
