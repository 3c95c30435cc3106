"""Per-source health and schedule: the ``sources`` table (``HostDB`` part).

``source_health`` is the one reading of it that doctor, the briefing and the
editor's signal share: per configured source ``{source, channel, status:
ok|failed|unknown, last_ok_at}``, plus ``error`` (what went wrong, in words)
when its last poll failed — silence from a failed source is no evidence.
``detail=True`` adds the schedule and doctor's verdict on each source.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from datetime import datetime, timedelta
from typing import Any

from fold_core.timefmt import parse_instant
from fold_host.hostdb.part import TablePart

__all__ = ["AUTH_CLASSES", "FAIL_AFTER", "SourceTables", "last_error", "last_error_text"]

AUTH_CLASSES = frozenset({"auth"})  # the source refused our credentials: retrying will not help
FAIL_AFTER = 3  # failures in a row after which any failing source fails (before: warn)


def last_error(stored: str | None) -> dict | None:
    """A source's kept last error as ``{at, class, message}`` (None when there is none)."""
    if not stored:
        return None
    try:
        error = json.loads(stored)
    except ValueError:
        error = None
    return error if isinstance(error, dict) else {"at": None, "class": None, "message": stored}


def last_error_text(stored: str | None) -> str | None:
    """The message of a source's kept last error."""
    error = last_error(stored)
    return None if error is None else str(error.get("message"))


class SourceTables(TablePart):
    """``sources``: failures, last poll and success, next poll, last error, disabled, settings digest."""

    def source_rows(self) -> dict[str, dict]:
        """The ``sources`` table by source name."""
        return {row["source"]: row for row in self._rows("SELECT * FROM sources")}

    def observation_counts(self, source: str, day_start: datetime, *, id_prefix: str | None = None) -> dict:
        """``{"today": n, "all": n}``: the source's observations (those whose id starts with ``id_prefix``:
        one feed of many), all of them and those observed at or after ``day_start``."""
        where, params = "source = ?", [source]
        if id_prefix is not None:
            escaped = id_prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
            where += " AND id LIKE ? ESCAPE '\\'"
            params.append(escaped + "%")
        total = self.connection.execute(f"SELECT count(*) FROM observations WHERE {where}", tuple(params)).fetchone()
        # observed_at carries its own offset: compare as text only to narrow (a day early), then as instants.
        floor = (day_start - timedelta(days=1)).date().isoformat()
        rows = self.connection.execute(f"SELECT observed_at FROM observations WHERE {where} AND observed_at >= ?",
                                       (*params, floor)).fetchall()
        today = sum(1 for (at,) in rows if (moment := parse_instant(at)) is not None and moment >= day_start)
        return {"today": today, "all": int(total[0])}

    def last_polls(self) -> dict[str, dict]:
        """Each source's latest poll: ``{at, status, error_class, message}`` by source name.

        An ok poll may carry a message: the part of the source that failed while the
        rest was read (one feed of many).
        """
        rows = self.connection.execute(
            "SELECT source, at, status, error_class, message FROM polls "
            "WHERE seq IN (SELECT max(seq) FROM polls GROUP BY source)").fetchall()
        return {row[0]: {"at": row[1], "status": row[2], "error_class": row[3], "message": row[4]} for row in rows}

    def source_schedule(self, source: str) -> tuple[str | None, bool, str | None] | None:
        """``(next_poll_at, disabled, settings_digest)`` of a source, or None before its first poll."""
        row = self.connection.execute("SELECT next_poll_at, disabled, settings_digest FROM sources "
                                      "WHERE source = ?", (source,)).fetchone()
        return None if row is None else (row[0], bool(row[1]), row[2])

    def save_poll_outcome(self, source: str, *, digest: str, ok: bool, now: str, error: dict | None,
                          disabled: bool, min_interval: float | None, schedule: Callable[[int], str | None]) -> int:
        """Count the poll in the source's row; ``schedule(failures)`` gives the next poll. The failures in a row.

        Failures counted under other settings (another digest) are forgotten.
        """
        with self.transaction() as db:
            row = db.execute("SELECT failures, settings_digest FROM sources WHERE source = ?", (source,)).fetchone()
            failures = 0 if row is None or row[1] != digest else row[0]
            failures = 0 if ok else failures + 1
            db.execute(
                "INSERT INTO sources (source, failures, last_poll_at, last_ok_at, next_poll_at, last_error, "
                "disabled, min_interval, settings_digest) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) "
                "ON CONFLICT (source) DO UPDATE SET failures = excluded.failures, "
                "last_poll_at = excluded.last_poll_at, "
                "last_ok_at = coalesce(excluded.last_ok_at, sources.last_ok_at), "
                "next_poll_at = excluded.next_poll_at, "
                "last_error = coalesce(excluded.last_error, sources.last_error), disabled = excluded.disabled, "
                "min_interval = excluded.min_interval, settings_digest = excluded.settings_digest",
                (source, failures, now, now if ok else None, schedule(failures),
                 None if error is None else json.dumps(error, ensure_ascii=False), int(disabled), min_interval,
                 digest))
        return failures

    def source_health(self, instances: Iterable[Any], *, detail: bool = False,
                      now: datetime | None = None) -> list[dict]:
        """Per configured adapter instance: ``{source, channel, status, last_ok_at[, error]}`` (see module doc).

        With ``detail`` each entry also has ``failures``, ``last_poll_at``,
        ``next_poll_at``, ``error_class``, ``error_at``, ``disabled``, and the
        verdict ``severity`` (``ok`` | ``warn`` | ``fail``, ``reason`` saying why):
        a source fails at once when it is disabled, has never succeeded, or its
        last failure is an authentication error (``AUTH_CLASSES``), and after
        ``FAIL_AFTER`` failures in a row otherwise. With ``now`` too,
        ``overdue`` says whether its next poll is more than two intervals past.
        """
        rows = self.source_rows()
        listed = []
        for instance in instances:
            row = rows.get(instance.name)
            entry = {"source": instance.name,
                     "channel": getattr(instance.cls, "channel", None) or instance.type_name,
                     "status": "unknown", "last_ok_at": row["last_ok_at"] if row else None}
            if row is not None and (row["failures"] or row["disabled"]):
                entry["status"] = "failed"
                entry["error"] = last_error_text(row["last_error"]) or "disabled: the source said it is gone"
            elif row is not None and row["last_poll_at"] is not None:
                entry["status"] = "ok"
            if detail:
                entry.update(_detail(row, instance, now))
            listed.append(entry)
        return listed


def _detail(row: dict | None, instance: Any, now: datetime | None) -> dict:
    """The ``detail`` fields of one source and its verdict."""
    error = last_error(row["last_error"]) if row is not None else None
    failures = row["failures"] if row is not None else 0
    found = {"failures": failures, "last_poll_at": row["last_poll_at"] if row else None,
             "next_poll_at": row["next_poll_at"] if row else None,
             "error_class": error.get("class") if error and failures else None,
             "error_at": error.get("at") if error else None, "disabled": bool(row and row["disabled"])}
    if row is None or row["last_poll_at"] is None:
        severity, reason = "warn", "not polled yet"
    elif found["disabled"]:
        severity, reason = "fail", "disabled: the source said it is gone"
    elif failures and row["last_ok_at"] is None:
        severity, reason = "fail", "has never succeeded"
    elif failures and found["error_class"] in AUTH_CLASSES:
        severity, reason = "fail", "the server refused the credentials"
    elif failures:
        severity = "fail" if failures >= FAIL_AFTER else "warn"
        reason = f"{failures} failed poll(s) in a row"
    else:
        severity, reason = "ok", "polled"
    found["overdue"] = False
    if now is not None and found["next_poll_at"] and not found["disabled"]:
        due = parse_instant(found["next_poll_at"])
        every = getattr(instance.settings, "every", None)
        found["overdue"] = bool(due and every and now - due > 2 * every)
    return {**found, "severity": severity, "reason": reason}
