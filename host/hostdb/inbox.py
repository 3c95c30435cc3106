"""The inbox: observations, adapter cursors and polls, windows' marks, reminders (``HostDB`` part).

A poll's observations and its cursor are written in one transaction: a crash
between them can neither lose nor duplicate an observation. Marking a
window's observations, clearing the window and noting the last window are one
transaction too, so an observation is processed exactly once.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta
from typing import Any

from pydantic import ValidationError

from fold_core.observation import Observation, Poll
from fold_core.timefmt import instant_key, instant_key_once, parse_instant
from fold_core.bounded import backoff
from fold_host.hostdb.part import TablePart, marks
from fold_host.hostdb.protocol import Link
from fold_host.hostdb.watch import count_in

__all__ = ["InboxTables", "fair_shares", "retry_pause"]

RETRY_FIRST, RETRY_CAP = timedelta(minutes=1), timedelta(hours=6)


def retry_pause(failures: int) -> timedelta:
    """How long an observation whose window failed ``failures`` times waits: 1 min, 2, 4, … at most 6 h."""
    return backoff(failures, RETRY_FIRST, RETRY_CAP)


def fair_shares(waiting: Sequence[tuple[str, int]], places: int) -> dict[str, int]:
    """How many of ``places`` each source gets: one each in turn, in the order given (the source waiting longest
    first), a source dropping out once all it has is placed. ``waiting``: ``(source, how many wait)``."""
    shares: dict[str, int] = {}
    turn = deque((source, count) for source, count in waiting if count > 0)
    left = places
    while left > 0 and turn:
        source, count = turn.popleft()
        shares[source] = shares.get(source, 0) + 1
        left -= 1
        if shares[source] < count:
            turn.append((source, count))
    return shares


def _pausing(failures: int, failed_at: str | None, now: datetime) -> bool:
    """Whether an observation whose last window failed at ``failed_at`` still waits at ``now``."""
    moment = parse_instant(failed_at) if failed_at else None
    return moment is not None and moment + retry_pause(failures) > now


class InboxTables(TablePart):
    """``observations``, ``cursors``, ``polls`` and ``reminders``."""

    # -- polls, observations, cursors ---------------------------------------

    def record_poll(self, source: str, poll: Poll, *, now: str) -> int:
        """Keep a poll's observations, cursor and health in one transaction; the number new."""
        with self.transaction() as db:
            added = self._insert(db, poll.observations)
            # A failed poll keeps the old cursor unless it consumed some data and says so.
            if poll.health.status == "ok" or poll.cursor is not None:
                db.execute("INSERT INTO cursors (source, cursor, updated_at) VALUES (?, ?, ?) "
                           "ON CONFLICT (source) DO UPDATE SET cursor = excluded.cursor, "
                           "updated_at = excluded.updated_at",
                           (source, json.dumps(poll.cursor, ensure_ascii=False), now))
            health = poll.health
            db.execute("INSERT INTO polls (source, at, status, error_class, message, observations, notes) "
                       "VALUES (?, ?, ?, ?, ?, ?, ?)",
                       (source, now, health.status, health.error_class, health.message, added,
                        json.dumps(list(health.notes), ensure_ascii=False) if health.notes else None))
            count_in(db, "polls", (source, health.status))
        return added

    def add_observations(self, observations: Iterable[Observation]) -> int:
        """Keep observations that did not come from a poll (feedback, reminders); the number new."""
        with self.transaction() as db:
            return self._insert(db, observations)

    def _insert(self, db: Link, observations: Iterable[Observation]) -> int:
        added = 0
        for observation in observations:
            seq = self._insert_seq(
                db, "INSERT INTO observations (id, source, channel, at, observed_at, body, thread) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
                (observation.id, observation.source, observation.channel, observation.at,
                 observation.observed_at, observation.to_json(), observation.thread))
            if seq is not None:
                self._index_text(db, seq, observation.title, observation.text)
                added += 1
        return added

    def cursor(self, source: str) -> Any:
        """The saved cursor of a source (None before its first successful poll)."""
        row = self.connection.execute("SELECT cursor FROM cursors WHERE source = ?", (source,)).fetchone()
        return json.loads(row[0]) if row is not None and row[0] is not None else None

    # -- what a window takes ---------------------------------------------------

    def pending(self, limit: int | None = None) -> list[Observation]:
        """Pending observations in arrival order (at most ``limit``)."""
        sql = "SELECT body FROM observations WHERE status = 'pending' ORDER BY seq"
        params: tuple = ()
        if limit is not None:
            sql += " LIMIT ?"
            params = (limit,)
        return [Observation.from_json(row[0]) for row in self.connection.execute(sql, params)]

    def window_events(self, max_events: int, now: datetime) -> list[Observation]:
        """The observations of the next window: fresh ones first, shared fairly between sources; then failed ones.

        Pending observations that never failed come first, at most
        ``max_events``, listed in arrival order. The places are shared
        between the sources that have some (``fair_shares``: one each in
        turn, the source waiting longest first), so a flood from one source
        — an agent reporting thousands of times — never keeps a few mails
        out of the windows. Within a source's share: its oldest
        observations, except that when its oldest pending poll (observations
        of one poll arrive at one instant) brought more than the share (a
        first run, a backlog after an outage), the window takes that poll's
        newest messages (by their own time) — what is most likely to matter
        now is read and placed first, the older ones follow. Only when
        there are none, those
        whose window failed ``f`` times are taken — once their pause
        (``retry_pause(f)`` after the failure) is over, only those with the
        fewest failures, at most ``max_events >> f`` of them (at least one).
        So an observation the editor cannot settle never holds up the ones
        behind it: each failure halves the group it is in until it is alone,
        and it is retried ever more rarely. It stays pending (nothing is lost);
        ``foldctl doctor`` and ``foldctl inbox`` show it.
        """
        rows = self._fresh_shared(max_events)
        if rows:
            return self._readable([body for _seq, body in sorted(rows)], now)
        group: list[str] = []
        failed = None
        for body, count, failed_at in self.connection.execute(
                f"SELECT body, failed_windows, failed_at FROM observations WHERE status = 'pending' AND "
                f"failed_windows > 0{self._unclaimed} ORDER BY failed_windows, seq{self._skip_locked}").fetchall():
            if failed is not None and (count != failed or len(group) >= max(1, max_events >> min(failed, 30))):
                break
            if _pausing(count, failed_at, now):
                continue
            failed = count
            group.append(body)
        return self._readable(group, now)

    def _fresh_shared(self, max_events: int) -> list[tuple[int, str]]:
        """``(seq, body)`` of the fresh observations a window takes, each source its fair share."""
        waiting = self.connection.execute(
            f"SELECT source, count(*), min(seq) FROM observations WHERE status = 'pending' AND "
            f"failed_windows = 0{self._unclaimed} GROUP BY source").fetchall()
        shares = fair_shares([(source, count) for source, count, _ in sorted(waiting, key=lambda row: row[2])],
                             max_events)
        rows: list[tuple[int, str]] = []
        for source, share in shares.items():
            newest = self._newest_of_first_poll(source, share)
            rows.extend(newest if newest is not None else self.connection.execute(
                f"SELECT seq, body FROM observations WHERE status = 'pending' AND failed_windows = 0 AND "
                f"source = ?{self._unclaimed} ORDER BY seq LIMIT ?{self._skip_locked}", (source, share)).fetchall())
        return [(row[0], row[1]) for row in rows]

    def _readable(self, bodies: Sequence[str], now: datetime) -> list[Observation]:
        """The observations of ``bodies``; one that no longer reads as an observation (kept before a
        check it now fails, such as a time outside the instants Fold accepts) is settled as ``noise``
        with the reason, so it never blocks its window again."""
        kept: list[Observation] = []
        for body in bodies:
            try:
                kept.append(Observation.from_json(body))
            except (ValidationError, ValueError) as problem:
                self._settle_unreadable(body, str(problem).splitlines()[-1][:300], now.isoformat())
        return kept

    def _settle_unreadable(self, body: str, reason: str, now: str) -> None:
        try:
            observation = json.loads(body).get("id")
        except (ValueError, AttributeError):
            return
        why = f"refused by the host: not a valid observation ({reason})"
        with self.transaction() as db:
            cursor = db.execute("UPDATE observations SET status = 'processed', disposition = 'noise', why = ?, "
                                "related = '[]', processed_at = ? WHERE id = ? AND status = 'pending'",
                                (why, now, observation))
            if cursor.rowcount:
                db.execute("INSERT INTO dispositions (observation, at, batch_id, disposition, why, related) "
                           "VALUES (?, ?, NULL, 'noise', ?, '[]')", (observation, now, why))

    def _newest_of_first_poll(self, source: str, share: int) -> list | None:
        """``(seq, body)`` of the ``share`` newest observations (by ``at``, then arrival) of ``source``'s oldest
        pending poll, when that poll brought more than ``share``; else None."""
        fresh = "status = 'pending' AND failed_windows = 0 AND source = ?"
        first = self.connection.execute(f"SELECT observed_at FROM observations WHERE {fresh} ORDER BY seq LIMIT 1",
                                        (source,)).fetchone()
        if first is None:
            return None
        group = self.connection.execute(f"SELECT seq, at FROM observations WHERE {fresh} AND observed_at = ? "
                                        "ORDER BY seq", (source, first[0])).fetchall()
        if len(group) <= share:
            return None
        newest = sorted(group, key=lambda row: (-instant_key(row[1]) if row[1] else float("inf"), -row[0]))
        chosen = sorted(seq for seq, _ in newest[:share])
        return self.connection.execute(f"SELECT seq, body FROM observations WHERE seq IN ({marks(chosen)}) "
                                       "ORDER BY seq", chosen).fetchall()

    def ready_count(self, now: datetime) -> int:
        """How many pending observations a window could take now (not pausing after failed windows)."""
        fresh = self.connection.execute(f"SELECT count(*) FROM observations WHERE status = 'pending' AND "
                                        f"failed_windows = 0{self._unclaimed}").fetchone()[0]
        return fresh + sum(1 for count, failed_at in self.connection.execute(
            f"SELECT failed_windows, failed_at FROM observations WHERE status = 'pending' AND "
            f"failed_windows > 0{self._unclaimed}") if not _pausing(count, failed_at, now))

    def held_back(self) -> tuple[int, dict | None]:
        """How many pending observations failed a window, and the one that failed most (id, failures)."""
        count = self.connection.execute("SELECT count(*) FROM observations WHERE status = 'pending' AND "
                                        "failed_windows > 0").fetchone()[0]
        worst = self.connection.execute("SELECT id, failed_windows, failed_at FROM observations WHERE status = "
                                        "'pending' AND failed_windows > 0 ORDER BY failed_windows DESC, seq "
                                        "LIMIT 1").fetchone()
        return count, ({"id": worst[0], "failures": worst[1], "failed_at": worst[2]} if worst else None)

    def pending_count(self) -> int:
        return self.connection.execute("SELECT count(*) FROM observations WHERE status = 'pending'").fetchone()[0]

    def status_counts(self) -> dict[str, int]:
        """How many observations are pending, processed, deferred, expired."""
        return dict(self.connection.execute("SELECT status, count(*) FROM observations GROUP BY status").fetchall())

    def all_pending(self, ids: Sequence[str]) -> bool:
        """Whether every one of ``ids`` is a pending observation."""
        if not ids:
            return True
        count = self.connection.execute(f"SELECT count(*) FROM observations WHERE status = 'pending' AND "
                                        f"id IN ({marks(ids)})", tuple(ids)).fetchone()[0]
        return count == len(ids)

    def observations_by_id(self, ids: Sequence[str]) -> list[Observation]:
        """These observations, in arrival order."""
        if not ids:
            return []
        rows = self.connection.execute(f"SELECT body FROM observations WHERE id IN ({marks(ids)}) ORDER BY seq",
                                       tuple(ids)).fetchall()
        return [Observation.from_json(row[0]) for row in rows]

    def recent_feedback(self, limit: int) -> list[dict]:
        """The latest ``limit`` feedback observations, oldest first, as consumers see them (``ConsumerContext``)."""
        rows = self.connection.execute("SELECT seq, body FROM observations WHERE channel = 'feedback' "
                                       "ORDER BY seq DESC LIMIT ?", (limit,)).fetchall()
        found = []
        for seq, body in reversed(rows):
            observation = json.loads(body)
            feedback = observation.get("feedback") or {}
            entry = {"seq": seq, "id": observation.get("id"), "at": observation.get("at")}
            entry.update({key: feedback[key] for key in ("target", "meaning", "via", "revision", "option", "digest",
                                                           "until") if key in feedback})
            found.append(entry)
        return found

    def poll_rows(self) -> list[dict]:
        """Every kept poll (``source, at, status, message``), oldest first: the sources' health over a period."""
        return self._rows("SELECT source, at, status, message FROM polls ORDER BY seq")

    def related_in_threads(self, threads: Iterable[str], limit: int) -> set[str]:
        """Item ids the latest ``limit`` settled observations of these threads were related to."""
        threads = tuple(threads)
        if not threads:
            return set()
        rows = self.connection.execute(
            f"SELECT related FROM observations WHERE thread IN ({marks(threads)}) AND related IS NOT NULL "
            f"ORDER BY seq DESC LIMIT ?", (*threads, limit)).fetchall()
        return {item for (related,) in rows for item in json.loads(related) if isinstance(item, str)}

    def observations(self, *, status: str | None = None, source: str | None = None,
                     limit: int = 50, ids: Sequence[str] | None = None, sort: str = "observed") -> list[dict]:
        """The inbox listing of ``foldctl inbox``, newest first (``ids``: only these).

        ``sort="observed"``: by arrival (poll order); ``"date"``: by the message's own ``at``
        (its arrival when it has none), compared as instants whatever their offsets.
        """
        clauses: list[str] = []
        params: list[Any] = []
        if ids is not None:
            clauses.append(f"id IN ({marks(ids)})" if ids else "1 = 0")
            params.extend(ids)
        if status is not None:
            clauses.append("status = ?")
            params.append(status)
        if source is not None:
            clauses.append("source = ?")
            params.append(source)
        where = f"WHERE {' AND '.join(clauses)}" if clauses else ""
        if sort == "date":  # offsets differ between sources: order parsed instants, not the stored texts
            keys = self._rows(f"SELECT seq, at, observed_at FROM observations {where}", params)
            keys.sort(key=lambda row: (_dated(row), row["seq"]), reverse=True)
            order = {row["seq"]: rank for rank, row in enumerate(keys[:limit])}
            if not order:
                return []
            where = f"WHERE seq IN ({marks(list(order))})"
            params = list(order)
        rows = self._rows(f"SELECT seq, body, status, disposition, why, related FROM observations {where} "
                          f"ORDER BY seq DESC LIMIT ?", [*params, limit])
        if sort == "date":
            rows = sorted(rows, key=lambda row: order[row["seq"]])
        listed = []
        for row in rows:
            body = json.loads(row["body"])
            listed.append({"id": body["id"], "source": body["source"], "channel": body["channel"],
                           "from": body.get("from"), "at": body.get("at"), "title": body.get("title"),
                           "status": row["status"], "disposition": row["disposition"], "why": row["why"],
                           "related": json.loads(row["related"]) if row["related"] is not None else None})
        return listed

    def questions(self) -> list[dict]:
        """Agents' questions (work-log ``question`` lines, ``fold_ask``), oldest first.

        Each ``{"observation", "status", "disposition", "related"}``; found by their thread
        ``question:<id>`` (the thread column is indexed), then checked by their ``meta.type``.
        """
        rows = self._rows("SELECT body, status, disposition, related FROM observations "
                          "WHERE thread LIKE 'question:%' ORDER BY seq")
        found = []
        for row in rows:
            observation = Observation.from_json(row["body"])
            if observation.meta.get("type") == "question":
                found.append({"observation": observation, "status": row["status"], "disposition": row["disposition"],
                              "related": json.loads(row["related"]) if row["related"] is not None else None})
        return found

    # -- reminders -------------------------------------------------------------

    def add_feedback(self, observation: Observation, reminder: dict | None, learning: dict | None = None) -> None:
        """A feedback observation, for a snooze its reminder, and what it teaches: one transaction.

        ``learning`` is ``{"at", "before": UTC texts, "item", "meaning", "keys": [(by, key)], "forget": bool}``:
        the keys are noted (``feedback_learning``), or their counts cleared when ``forget``; what is older
        than ``before`` is forgotten.
        """
        with self.transaction() as db:
            added = self._insert(db, [observation])
            if reminder is not None:
                db.execute("INSERT INTO reminders (id, target, feedback, due_at, requested_at) "
                           "VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
                           tuple(reminder[key] for key in ("id", "target", "feedback", "due_at", "requested_at")))
            if learning is not None and added:
                self._prune_learning_in(db, learning["before"])
                if learning["forget"]:
                    self._forget_learning_in(db, learning["keys"])
                else:
                    self._note_learning_in(db, feedback=observation.id, at=learning["at"], item=learning["item"],
                                           meaning=learning["meaning"], keys=learning["keys"])

    def unfired_reminders(self) -> list[dict]:
        """Reminders that have not fired yet (in no particular order)."""
        return self._rows("SELECT id, target, feedback, due_at, requested_at FROM reminders WHERE fired_at IS NULL")

    def reminder_fired(self, reminder_id: str, *, now: str) -> None:
        with self.transaction() as db:
            db.execute("UPDATE reminders SET fired_at = ? WHERE id = ? AND fired_at IS NULL", (now, reminder_id))


def _dated(row: Any) -> float:
    """The message's own date as a sort key; its arrival when it has none (or none that reads)."""
    key = instant_key_once(row["at"]) if row["at"] else float("inf")
    return key if key != float("inf") else instant_key_once(row["observed_at"])
