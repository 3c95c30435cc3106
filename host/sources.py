"""Polling the sources (contract §10, §11; seed 004: incremental sources with cursors, fail-open).

Each due adapter instance is polled in its own thread with its own
``poll_timeout``: a source that fails, raises or hangs never stops the
others, and never stops the cycle. A poll's observations and its cursor are
kept in one host.db transaction (``HostDB.record_poll``); a failed poll keeps
the old cursor, so nothing is consumed that was not stored.

Per-source health and backoff live in the ``sources`` table:

* a success resets the failures; the next poll is ``every`` later (or the
  source's own ``min_interval``, whichever is longer);
* a failure doubles the wait from ``every`` up to a cap of
  ``max(every, 1 h)`` — never "give up": the source keeps being tried and
  shows as failed in the coverage and in ``doctor``; a ``Retry-After`` is
  honoured when it asks for longer;
* ``disabled`` (a source gone for good, e.g. HTTP 410) stops polling until the
  instance's settings change (a new settings fingerprint lifts it).

A poll that is still running when its source comes due again (a hung thread
left behind by a timeout) is not started twice: the source reports
``failed`` / ``timeout`` until the thread ends.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from fold_core.observation import Health, Poll
from fold_core.timefmt import parse_instant

__all__ = ["BACKOFF_CAP", "PollOutcome", "Poller", "coverage", "next_delay", "source_rows"]

BACKOFF_CAP = timedelta(hours=1)


@dataclass(frozen=True)
class PollOutcome:
    """How one poll went: the ``polled`` entry of ``foldctl tick``."""

    source: str
    status: str  # "ok" | "failed"
    observations: int  # new (deduplicated) observations kept
    health: Health

    def to_json(self) -> dict:
        return {"source": self.source, "status": self.status, "observations": self.observations}


def next_delay(every: timedelta, failures: int, health: Health) -> timedelta:
    """How long to wait before the next poll: ``every``, doubled per failure up to the cap."""
    if failures <= 0:
        delay = every
    else:
        delay = min(every * (2 ** min(failures - 1, 30)), max(every, BACKOFF_CAP))
    for asked in (health.retry_after, health.min_interval):
        if asked:
            delay = max(delay, timedelta(seconds=asked))
    return delay


def settings_digest(instance: Any) -> str:
    """A fingerprint of an instance's type and settings (a change lifts ``disabled``)."""
    text = instance.type_name + "\n" + instance.settings.model_dump_json()
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def source_rows(db) -> dict[str, dict]:
    """The ``sources`` table by source name."""
    cursor = db.connection.execute("SELECT * FROM sources")
    names = [column[0] for column in cursor.description]
    return {row[0]: dict(zip(names, row)) for row in cursor.fetchall()}


def coverage(db, adapters: Sequence[tuple[Any, Any]]) -> list[dict]:
    """Per configured source: ``{source, channel, status: ok|failed|unknown, last_ok_at}`` (§9)."""
    rows = source_rows(db)
    listed = []
    for instance, adapter in adapters:
        row = rows.get(instance.name)
        if row is None or row["last_poll_at"] is None:
            status = "unknown"
        elif row["failures"] or row["disabled"]:
            status = "failed"
        else:
            status = "ok"
        listed.append({"source": instance.name, "channel": getattr(adapter, "channel", None) or instance.type_name,
                       "status": status, "last_ok_at": row["last_ok_at"] if row else None})
    return listed


class Poller:
    """Runs polls in threads with a timeout and remembers the ones still running."""

    def __init__(self) -> None:
        self._running: dict[str, threading.Thread] = {}
        self._lock = threading.Lock()

    def due(self, db, instance: Any, now: datetime, slack: timedelta = timedelta(0)) -> bool:
        """Whether the source should be polled at ``now`` (backoff, Retry-After, disabled).

        :param slack: how early a poll may come (the daemon's interval job fires at
            ``every`` after the previous job started, a moment before ``next_poll_at``).
        """
        row = db.connection.execute("SELECT next_poll_at, disabled, settings_digest FROM sources WHERE source = ?",
                                    (instance.name,)).fetchone()
        if row is None:
            return True
        next_poll_at, disabled, digest = row
        if digest != settings_digest(instance):
            return True  # new settings: whatever was learnt about the old ones no longer holds
        if disabled:
            return False
        moment = parse_instant(next_poll_at) if next_poll_at else None
        return moment is None or moment <= now + slack

    def poll_due(self, db, adapters: Sequence[tuple[Any, Any]], now: datetime, now_text: str) -> list[PollOutcome]:
        """Poll every due source at once; keep each result as it comes; never raise for a source."""
        return self._poll(db, [(i, a) for i, a in adapters if self.due(db, i, now)], now, now_text)

    def _poll(self, db, due, now: datetime, now_text: str) -> list[PollOutcome]:
        started = [(instance, time.monotonic() + instance.settings.poll_timeout.total_seconds(),
                    *self._start(db, instance, adapter, now)) for instance, adapter in due]
        outcomes = []
        for instance, deadline, thread, box in started:
            if thread is not None:
                thread.join(max(0.0, deadline - time.monotonic()))
            outcomes.append(self._keep(db, instance, self._result(instance, thread, box), now, now_text))
        return outcomes

    def poll_one(self, db, instance: Any, adapter: Any, now: datetime, now_text: str,
                 slack: timedelta = timedelta(0)) -> PollOutcome | None:
        """Poll one source if it is due (the daemon's per-source job); None when not due."""
        if not self.due(db, instance, now, slack):
            return None
        return self._poll(db, [(instance, adapter)], now, now_text)[0]

    def _start(self, db, instance, adapter, now) -> tuple[threading.Thread | None, dict]:
        box: dict[str, Any] = {}
        with self._lock:
            running = self._running.get(instance.name)
            if running is not None and running.is_alive():
                box["poll"] = Poll(health=Health.failed(
                    "timeout", "the previous poll has not finished yet (it hung past poll_timeout)"))
                return None, box
            cursor = db.cursor(instance.name)

            def work() -> None:
                try:
                    box["poll"] = adapter.poll(cursor, now=now)
                except Exception as error:  # an adapter bug: still only this source's failure
                    box["poll"] = Poll(health=Health.failed("crash", f"{type(error).__name__}: {error}"))

            thread = threading.Thread(target=work, name=f"poll-{instance.name}", daemon=True)
            self._running[instance.name] = thread
            thread.start()
        return thread, box

    @staticmethod
    def _result(instance, thread, box) -> Poll:
        if thread is not None and thread.is_alive():
            seconds = instance.settings.poll_timeout.total_seconds()
            return Poll(health=Health.failed("timeout", f"the poll did not finish within {seconds:g}s (poll_timeout)"))
        poll = box.get("poll")
        if not isinstance(poll, Poll):
            return Poll(health=Health.failed("protocol", f"poll() returned {type(poll).__name__}, expected a Poll"))
        strangers = [o.id for o in poll.observations
                     if o.source != instance.name or not o.id.startswith(instance.name + ":")]
        if strangers:
            return Poll(health=Health.failed(
                "protocol", f"observations must have source {instance.name!r} and ids '{instance.name}:…'; "
                            f"found {strangers[0]!r}; nothing of this poll was kept"))
        return poll

    def _keep(self, db, instance, poll: Poll, now: datetime, now_text: str) -> PollOutcome:
        added = db.record_poll(instance.name, poll, now=now_text)
        health = poll.health
        with db.transaction() as conn:
            row = conn.execute("SELECT failures, settings_digest FROM sources WHERE source = ?",
                               (instance.name,)).fetchone()
            digest = settings_digest(instance)
            failures = 0 if row is None or row[1] != digest else row[0]
            failures = 0 if health.status == "ok" else failures + 1
            wait = next_delay(instance.settings.every, failures, health)
            error = None if health.status == "ok" else json.dumps(
                {"at": now_text, "class": health.error_class, "message": health.message}, ensure_ascii=False)
            conn.execute(
                "INSERT INTO sources (source, failures, last_poll_at, last_ok_at, next_poll_at, last_error, "
                "disabled, min_interval, settings_digest) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) "
                "ON CONFLICT (source) DO UPDATE SET failures = excluded.failures, "
                "last_poll_at = excluded.last_poll_at, "
                "last_ok_at = coalesce(excluded.last_ok_at, sources.last_ok_at), "
                "next_poll_at = excluded.next_poll_at, "
                "last_error = coalesce(excluded.last_error, sources.last_error), disabled = excluded.disabled, "
                "min_interval = excluded.min_interval, settings_digest = excluded.settings_digest",
                (instance.name, failures, now_text, now_text if health.status == "ok" else None,
                 (now + wait).isoformat(timespec="seconds"), error, int(health.disabled), health.min_interval,
                 digest))
        return PollOutcome(instance.name, health.status, added, health)
