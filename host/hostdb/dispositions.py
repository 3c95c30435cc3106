"""The editor's dispositions and deferred observations (``HostDB`` part; contract §9, §11.2).

An observation is ``pending`` until a window settles it. The editor's
disposition makes it ``processed`` — or ``deferred``: then it rides along with
later windows (``deferred_events``, in turns), marked ``{"at": first deferral,
"times": N}``, until the editor gives it another disposition or
``defer_for`` has passed since its first deferral, when it becomes
``expired`` with a why (``expire_deferred``). Every disposition, and the
expiry, is kept in ``dispositions`` (what ``foldctl inbox show`` lists).

Marking is exactly once per window: an observation is marked only while it
is pending or deferred, and not again for the ``batch_id`` it was last
marked by. The window's marks, clearing it and noting the last window are
one transaction (``settle_window``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta
from typing import Any

from fold_core.observation import Observation
from fold_core.timefmt import instant_key, parse_instant
from fold_host.hostdb.inbox import retry_pause
from fold_host.hostdb.part import TablePart, marks
from fold_host.hostdb.protocol import Link
from fold_host.hostdb.watch import count_in

__all__ = ["DispositionTables"]


def _pausing(failures: int, failed_at: str | None, now: datetime) -> bool:
    """Whether an observation whose last window failed at ``failed_at`` still waits at ``now``."""
    moment = parse_instant(failed_at) if failed_at else None
    return moment is not None and failures > 0 and moment + retry_pause(failures) > now


def _expired(first: str | None, defer_for: timedelta, now: datetime) -> bool:
    """Whether a deferral first made at ``first`` has run out at ``now`` (one without a readable time has)."""
    moment = parse_instant(first) if first is not None else None
    return moment is None or moment + defer_for <= now


class DispositionTables(TablePart):
    """Marks, deferral, expiry and the disposition history of each observation."""

    # -- settling a window --------------------------------------------------------

    def mark(self, dispositions: Iterable[dict], *, batch_id: str | None, now: str) -> None:
        """Record the editor's dispositions: ``deferred`` stays deferred, the rest become processed.

        Each disposition is ``{"event", "disposition", "why", "related"?}``.
        """
        with self.transaction() as db:
            self._mark_in(db, dispositions, batch_id=batch_id, now=now)

    def _mark_in(self, db: Link, dispositions: Iterable[dict], *, batch_id: str | None,
                 now: str) -> None:
        """``mark`` inside the caller's transaction; each observation changes at most once per batch."""
        for entry in dispositions:
            related = json.dumps(entry.get("related") or [], ensure_ascii=False)
            common = (entry["disposition"], entry.get("why"), related, batch_id, now)
            where = "WHERE id = ? AND status IN ('pending', 'deferred')"
            target: tuple = (entry["event"],)
            if batch_id is not None:
                where += f" AND batch_id {self._distinct} ?"
                target += (batch_id,)
            if entry["disposition"] == "deferred":
                cursor = db.execute(
                    "UPDATE observations SET status = 'deferred', disposition = ?, why = ?, related = ?, "
                    "batch_id = ?, processed_at = ?, deferred_at = coalesce(deferred_at, ?), "
                    f"deferred_times = deferred_times + 1, failed_windows = 0, failed_at = NULL {where}",
                    (*common, now, *target))
            else:
                cursor = db.execute(
                    "UPDATE observations SET status = 'processed', disposition = ?, why = ?, related = ?, "
                    f"batch_id = ?, processed_at = ? {where}", (*common, *target))
            if cursor.rowcount:
                db.execute("INSERT INTO dispositions (observation, at, batch_id, disposition, why, related) "
                           "VALUES (?, ?, ?, ?, ?, ?)", (entry["event"], now, batch_id, entry["disposition"],
                                                         entry.get("why"), related))

    def settle_window(self, dispositions: Iterable[dict], *, batch_id: str, now: str, drop: Sequence[str],
                      note: tuple[str, Any], outcome: str | None = None) -> None:
        """Mark a window's observations, drop the ``drop`` meta keys and set ``note``: one transaction.

        ``outcome`` (committed, checked, acknowledged) is counted in ``windows``.
        """
        with self.transaction() as db:
            self._mark_in(db, dispositions, batch_id=batch_id, now=now)
            if outcome is not None:
                count_in(db, "windows", (outcome,))
            self._drop_meta_in(db, *drop)
            self._set_meta_in(db, *note)

    def fail_window(self, ids: Sequence[str], *, count: bool, now: str, drop: Sequence[str],
                    note: tuple[str, Any], batch_id: str | None = None) -> None:
        """A window the editor could not settle: (``count``: its observations' failures grow), one transaction."""
        with self.transaction() as db:
            count_in(db, "windows", ("failed",))
            if ids and count:
                db.execute(f"UPDATE observations SET failed_windows = failed_windows + 1, failed_at = ? "
                           f"WHERE id IN ({marks(ids)})", (now, *ids))
            self._drop_meta_in(db, *drop)
            self._set_meta_in(db, *note)

    def all_open(self, ids: Sequence[str]) -> bool:
        """Whether every one of ``ids`` is still pending or deferred (a window about them may still settle)."""
        if not ids:
            return True
        count = self.connection.execute(f"SELECT count(*) FROM observations WHERE status IN ('pending', "
                                        f"'deferred') AND id IN ({marks(ids)})", tuple(ids)).fetchone()[0]
        return count == len(ids)

    # -- deferred observations ---------------------------------------------------

    def deferred_events(self, limit: int, now: datetime) -> list[Observation]:
        """At most ``limit`` deferred observations to offer again: the one not seen for the longest first.

        "Seen" is the editor's last disposition of it (ties: arrival order), so
        when more are deferred than a window takes they come back in turn. One
        whose window failed waits like a pending one (1 min, doubling, at most 6 h).
        """
        if limit <= 0:
            return []
        rows = [row for row in self.connection.execute(
            f"SELECT body, processed_at, seq, failed_windows, failed_at FROM observations WHERE status = 'deferred'"
            f"{self._unclaimed}{self._skip_locked}").fetchall() if not _pausing(row[3], row[4], now)]
        rows.sort(key=lambda row: (instant_key(row[1]) if row[1] else 0.0, row[2]))
        return [Observation.from_json(row[0]) for row in rows[:limit]]

    def deferral_marks(self, ids: Sequence[str]) -> dict[str, dict]:
        """``{id: {"at": first deferral, "times": N}}`` for those of ``ids`` that are deferred."""
        if not ids:
            return {}
        rows = self.connection.execute(f"SELECT id, deferred_at, deferred_times FROM observations WHERE "
                                       f"status = 'deferred' AND id IN ({marks(ids)})", tuple(ids)).fetchall()
        return {row[0]: {"at": row[1], "times": row[2]} for row in rows}

    def expire_deferred(self, now: datetime, now_text: str, defer_for: timedelta, spelled: str) -> list[str]:
        """Deferred observations first deferred ``defer_for`` or longer ago become ``expired``; their ids."""
        due = [(row[0], row[1], row[2]) for row in self.connection.execute(
            "SELECT id, deferred_at, deferred_times FROM observations WHERE status = 'deferred'")
            if _expired(row[1], defer_for, now)]
        if not due:
            return []
        with self.transaction() as db:
            for observation, first, times in due:
                why = (f"expired: deferred {times} time(s) since {first} and not taken up within {spelled} "
                       f"([host] defer_for)")
                cursor = db.execute("UPDATE observations SET status = 'expired', why = ?, processed_at = ? "
                                    "WHERE id = ? AND status = 'deferred'", (why, now_text, observation))
                if cursor.rowcount:
                    db.execute("INSERT INTO dispositions (observation, at, batch_id, disposition, why, related) "
                               "VALUES (?, ?, NULL, 'expired', ?, NULL)", (observation, now_text, why))
        return [observation for observation, _, _ in due]

    # -- one observation, as ``foldctl inbox show`` ------------------------------------

    def observation_detail(self, observation_id: str) -> dict | None:
        """``{"observation", "status", "deferred", "dispositions"}``, or None for an unknown id."""
        row = self.connection.execute("SELECT body, status, deferred_at, deferred_times FROM observations "
                                      "WHERE id = ?", (observation_id,)).fetchone()
        if row is None:
            return None
        observation = Observation.from_json(row[0])
        shown = observation.model_dump(mode="json", by_alias=True, exclude={"feedback", "reminder"})
        for key in ("feedback", "reminder"):
            if getattr(observation, key) is not None:
                shown[key] = getattr(observation, key)
        history = [{"at": at, "batch_id": batch_id, "disposition": disposition, "why": why,
                    "related": json.loads(related) if related is not None else None}
                   for at, batch_id, disposition, why, related in self.connection.execute(
                       "SELECT at, batch_id, disposition, why, related FROM dispositions WHERE observation = ? "
                       "ORDER BY seq", (observation_id,))]
        deferred = {"at": row[2], "times": row[3]} if row[2] is not None else None
        return {"observation": shown, "status": row[1], "deferred": deferred, "dispositions": history}
