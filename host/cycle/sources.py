"""Polling the sources (contract §10, §11).

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
  honoured when it asks for longer, up to ``[host] max_backoff`` (default
  one day; ``max-age`` and ``ttl`` too);
* ``disabled`` (a source gone for good, e.g. HTTP 410) stops polling until the
  instance's settings change (a new settings fingerprint lifts it).

A poll that is still running when its source comes due again (a hung thread
left behind by a timeout) is not started twice: the source reports
``failed`` / ``timeout`` until the thread ends.

Several hosts on one store (PostgreSQL) poll each source one at a time: a
poll first takes the source's lease (``source:<name>``; on a store directory
it is always granted), looks again whether the source is due (another host
may just have polled it), and gives the lease back after keeping the result;
a source whose lease another host holds is left to that host.
"""

from __future__ import annotations

import hashlib
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from fold_core.bounded import Hung, Job, Worker, backoff
from fold_core.config import Instance
from fold_core.observation import Health, Poll
from fold_core.plugin_api import Adapter
from fold_core.timefmt import parse_instant
from fold_host.hostdb import ClaimLost, HostDB

__all__ = ["BACKOFF_CAP", "MAX_BACKOFF", "PollOutcome", "Poller", "coverage", "lease_name", "next_delay",
           "server_delay", "settings_digest"]

BACKOFF_CAP = timedelta(hours=1)
MAX_BACKOFF = timedelta(days=1)  # the default of [host] max_backoff


@dataclass(frozen=True)
class PollOutcome:
    """How one poll went: the ``polled`` entry of ``foldctl tick``."""

    source: str
    status: str  # "ok" | "failed"
    observations: int  # new (deduplicated) observations kept
    health: Health

    def to_json(self) -> dict:
        return {"source": self.source, "status": self.status, "observations": self.observations}


def next_delay(every: timedelta, failures: int, health: Health, max_backoff: timedelta = MAX_BACKOFF) -> timedelta:
    """How long to wait before the next poll: ``every``, doubled per failure up to the cap.

    What the source asks for (``Retry-After``, ``max-age``, ``ttl``) is honoured
    up to ``max_backoff`` (``[host] max_backoff``), never more: a far-future or
    absurd value cannot silence a source, nor overflow the clock.
    """
    delay = every if failures <= 0 else backoff(failures, every, max(every, min(BACKOFF_CAP, max_backoff)))
    for asked in (health.retry_after, health.min_interval):
        if asked:
            delay = max(delay, server_delay(asked, max_backoff))
    return delay


def server_delay(seconds: float, max_backoff: timedelta) -> timedelta:
    """A delay a server asked for (seconds, maybe huge, infinite or negative), clamped to ``0 … max_backoff``."""
    if not math.isfinite(seconds) or seconds >= max_backoff.total_seconds():
        return max_backoff if seconds > 0 else timedelta(0)
    return timedelta(seconds=max(seconds, 0.0))


def settings_digest(instance: Any) -> str:
    """A fingerprint of an instance's type and settings (a change lifts ``disabled``)."""
    text = instance.type_name + "\n" + instance.settings.model_dump_json()
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def lease_name(instance: Any) -> str:
    """The lease a host holds while it polls this source."""
    return f"source:{instance.name}"


def coverage(db: HostDB, adapters: Sequence[tuple[Instance, Adapter]]) -> list[dict]:
    """Per configured source, its health (§9 ``coverage``): ``HostDB.source_health``."""
    return db.source_health(instance for instance, _ in adapters)


class Poller:
    """Runs polls on worker threads with a timeout and remembers the ones that outran it."""

    def __init__(self, max_backoff: timedelta = MAX_BACKOFF) -> None:
        self._hung = Hung()
        self.max_backoff = max_backoff

    def due(self, db: HostDB, instance: Any, now: datetime, slack: timedelta = timedelta(0)) -> bool:
        """Whether the source should be polled at ``now`` (backoff, Retry-After, disabled).

        :param slack: how early a poll may come (the daemon's interval job fires at
            ``every`` after the previous job started, a moment before ``next_poll_at``).
        """
        schedule = db.source_schedule(instance.name)
        if schedule is None:
            return True
        next_poll_at, disabled, digest = schedule
        if digest != settings_digest(instance):
            return True  # new settings: whatever was learnt about the old ones no longer holds
        if disabled:
            return False
        moment = parse_instant(next_poll_at) if next_poll_at else None
        return moment is None or moment <= now + slack

    def poll_due(self, db: HostDB, adapters: Sequence[tuple[Instance, Adapter]], now: datetime,
                 now_text: str) -> list[PollOutcome]:
        """Poll every due source at once; keep each result as it comes; never raise for a source."""
        due = [(i, a) for i, a in adapters if self.due(db, i, now)]
        held = [(i, a) for i, a in due if db.take_lease(lease_name(i))]
        try:
            # Another host may have polled a source between the look and the lease.
            polled = [(i, a) for i, a in held if self.due(db, i, now)] if db.shared else held
            return self._poll(db, polled, now, now_text)
        finally:
            for instance, _ in held:
                db.release_lease(lease_name(instance))

    def _poll(self, db: HostDB, due: Sequence[tuple[Instance, Adapter]], now: datetime, now_text: str) -> list[PollOutcome]:
        started = [(instance, time.monotonic() + instance.settings.poll_timeout.total_seconds(),
                    self._start(db, instance, adapter, now)) for instance, adapter in due]
        outcomes = []
        for instance, deadline, running in started:
            poll = self._result(instance, running, deadline - time.monotonic())
            outcomes.append(self._keep(db, instance, poll, now, now_text))
        return outcomes

    def poll_one(self, db: HostDB, instance: Instance, adapter: Adapter, now: datetime, now_text: str,
                 slack: timedelta = timedelta(0), *, force: bool = False) -> PollOutcome | None:
        """Poll one source if it is due (the daemon's per-source job); None when not due.

        :param force: poll even before it is due (the source said it has news: IMAP IDLE).
        """
        if not force and not self.due(db, instance, now, slack):
            return None
        if not db.take_lease(lease_name(instance)):
            return None  # another host polls it now
        try:
            if db.shared and not force and not self.due(db, instance, now, slack):
                return None
            return self._poll(db, [(instance, adapter)], now, now_text)[0]
        finally:
            db.release_lease(lease_name(instance))

    def _start(self, db: HostDB, instance: Instance, adapter: Adapter,
               now: datetime) -> tuple[Worker, Job] | None:
        """The poll's worker and its job; None while the previous poll of the source still hangs."""
        if self._hung.busy(instance.name):
            return None
        cursor = db.cursor(instance.name)
        worker = Worker(f"poll-{instance.name}")
        return worker, worker.submit(lambda: adapter.poll(cursor, now=now))

    def _result(self, instance: Instance, running: tuple[Worker, Job] | None, seconds: float) -> Poll:
        if running is None:
            return Poll(health=Health.failed(
                "timeout", "the previous poll has not finished yet (it hung past poll_timeout)"))
        worker, job = running
        try:
            poll = job.wait(seconds)
        except TimeoutError:
            self._hung.add(instance.name, worker)
            limit = instance.settings.poll_timeout.total_seconds()
            return Poll(health=Health.failed("timeout", f"the poll did not finish within {limit:g}s (poll_timeout)"))
        except Exception as error:  # an adapter bug: still only this source's failure
            worker.stop()
            return Poll(health=Health.failed("crash", f"{type(error).__name__}: {error}"))
        worker.stop()
        if not isinstance(poll, Poll):
            return Poll(health=Health.failed("protocol", f"poll() returned {type(poll).__name__}, expected a Poll"))
        strangers = [o.id for o in poll.observations
                     if o.source != instance.name or not o.id.startswith(instance.name + ":")]
        if strangers:
            return Poll(health=Health.failed(
                "protocol", f"observations must have source {instance.name!r} and ids '{instance.name}:…'; "
                            f"found {strangers[0]!r}; nothing of this poll was kept"))
        return poll

    def _keep(self, db: HostDB, instance: Instance, poll: Poll, now: datetime, now_text: str) -> PollOutcome:
        try:
            added = db.record_poll(instance.name, poll, now=now_text)
        except ClaimLost as lost:  # another host polls it now: it keeps what it finds
            return PollOutcome(instance.name, "failed", 0, Health.failed("lease", str(lost)))
        if added:
            # A poll may land after a cycle learned the store's citations and before it opens its window (the
            # daemon polls on other threads): what the records cite is settled now, never offered as new.
            db.settle_cited(now=now_text)
        health = poll.health
        ok = health.status == "ok"
        error = None if ok else {"at": now_text, "class": health.error_class, "message": health.message}
        db.save_poll_outcome(
            instance.name, digest=settings_digest(instance), ok=ok, now=now_text, error=error,
            disabled=health.disabled, min_interval=health.min_interval,
            schedule=lambda failures: (now + next_delay(instance.settings.every, failures, health, self.max_backoff))
            .isoformat(timespec="seconds"))
        return PollOutcome(instance.name, health.status, added, health)
