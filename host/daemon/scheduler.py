"""``foldctl run``: the host daemon (contract §11.2).

APScheduler 3 (``BackgroundScheduler``) runs:

* one **poll job** per source instance, every ``every`` with a jitter of up to
  10 % (at most 30 s), so sources never fire in lockstep; the source's own
  backoff (``sources.Poller.due``) decides whether a firing really polls;
* a **cycle** after new observations — requests are coalesced: while a cycle
  runs, any number of requests make exactly one more;
* the **review job**, a date job at the next zero-event review, moved after
  every window;
* one **reminder job** per snooze, at its ``until``;
* the **deadline job**, a date job just after the soonest ``decide_by`` of an
  open decision frame with a fallback (the cycle then records the fallback:
  ``fold_host.cycle.questions``), moved after every window;
* a **watch job** every few seconds that notices what other processes put in
  host.db (``foldctl feedback``, the Pinboard: new observations, new
  reminders) and retries a failed window after the editor's backoff. The
  user's word — feedback and answers (host.db's ``feedback`` source) and
  annotations not yet offered to the editor (the store) — starts the **input
  job**: one cycle ``[host] input_delay`` (default 10 s) after the first one
  noticed, so a few clicks in a row make one window (debounced); other
  pending observations (an agent's report or question) ask for a cycle at
  once;
* one **watcher thread** per source that can say when it has news (IMAP
  IDLE; ``fold_host.daemon.watch``): its news schedules a poll of that source
  ``watch_delay`` later (one poll for mail that arrives together), which
  starts a cycle when it finds something. Two polls of one source never run
  at once (a lock per source);
* the **heartbeat** every 10 s (or twice per systemd ``WatchdogSec``): the
  daemon record in host.db (``/healthz``, doctor) and ``WATCHDOG=1``
  (``systemd``); a clean stop is noted there too;
* the **retention** pass (``[host] keep_observations``, at most hourly).

host.db is guarded (``hostdb.guard``): every connection first checks that it
is still the file found at start, and ``quick_check`` runs at start and every
ten minutes. When host.db was removed, replaced or is damaged, the daemon
stops all its jobs (``halt``: one log line, ``host.db.halted`` for ``doctor``
and ``/healthz``) and waits to be restarted; it never builds a new host.db
under itself.

On a store in PostgreSQL any number of daemons (on any number of machines)
share the work (``presence``, ``hostdb.pg.shared``): a source is polled by
one host at a time (a poll that finds another host polling leaves the source
to it; a watched source's news is tried again ``watch_delay`` later), windows
are claimed, each consumer delivers from one host at a time in a delivery job
of its own (``shared_jobs``); the watch job also notices windows another host
let expire and consumers left behind the store's head. There is no host.db
to guard there, and the hosts table stands for the daemon record.

The process around it — one daemon per store directory, signals, SIGHUP
reload, systemd, the log — is ``service.run``.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from fold_core.bounded import backoff
from fold_core.errors import FoldError
from fold_core.store.location import is_url
from fold_core.store.locate import describe, open_store
from fold_host.cycle.pipeline import CycleReport, Host, deliver_records, run_window
from fold_host.cycle.feedback import FEEDBACK_SOURCE
from fold_host.cycle.inputs import new_annotations
from fold_host.cycle.reminders import unfired
from fold_host.daemon.date_jobs import DateJobs
from fold_host.daemon.eventlog import EventLog
from fold_host.daemon.health import HEARTBEAT_EVERY
from fold_host.daemon.retention import LAST_PASS_KEY, retain
from fold_host.daemon.shared_jobs import Coalesced, Deliveries
from fold_host.daemon.systemd import notify, watchdog_seconds
from fold_host.daemon.watch import Watcher
from fold_host.hostdb.failures import HostDBCorrupt, HostDBLost

__all__ = ["Daemon"]

WATCH_EVERY = 2.0  # seconds between looks at host.db for other processes' work
# Seconds between deliveries without a window (push's deadlines, digests, reports); tests may shorten it.
IDLE_DELIVERY_EVERY = float(os.environ.get("FOLD_IDLE_DELIVERY_EVERY") or 60.0)
DEEP_CHECK_EVERY = 600.0  # seconds between SQLite quick_checks of host.db (its identity is checked at every open)
AGENT_RETRY_FIRST, AGENT_RETRY_CAP = timedelta(seconds=30), timedelta(minutes=30)  # editor backoff after a failed window
RETAIN_EVERY = 600.0  # seconds between looks at retention (the pass itself runs at most hourly)


class Daemon:
    """The scheduler wiring around one ``Host``."""

    def __init__(self, host: Host, log: EventLog) -> None:
        self.host, self.log = host, log
        self.zone = ZoneInfo(host.config.host.timezone)
        self.cycles = 0
        self._flags = threading.Lock()
        self._cycle = Coalesced(self._flags, lambda: self.start_job(self.cycle, "cycle"))
        self.shared = is_url(host.location)  # several hosts: deliveries in a job of their own
        self.deliveries = Deliveries(self, self._flags)
        self._busy = 0  # jobs running now
        self._agent_failures = 0
        self._agent_retry_at: float = 0.0
        self._deep_check_at: float = 0.0
        self._watch_store: Any = None  # watch and retention read their own store: the cycle's may be busy
        self._idle_delivery_at: float = time.monotonic() + IDLE_DELIVERY_EVERY
        self._deliver_only = False  # the next cycle job only delivers (no window is due)
        self.halted: str | None = None  # why the daemon stopped its cycles (host.db lost or damaged)
        # APScheduler loads with the daemon, not with this module: the host's presence is registered first.
        from apscheduler.schedulers.background import BackgroundScheduler

        self.scheduler = BackgroundScheduler(timezone=self.zone, job_defaults={
            "coalesce": True, "max_instances": 1, "misfire_grace_time": None})
        self.dates = DateJobs(self.scheduler, self._job, self.request_cycle, self.log)
        self._stopping = threading.Event()
        self._watchers: dict[str, tuple[Watcher, threading.Event]] = {}  # source -> (Watcher, its stop event)
        self._source_locks = {instance.name: threading.Lock() for instance, _ in host.adapters}

    # -- lifecycle ------------------------------------------------------------

    def start(self) -> None:
        logging.getLogger("apscheduler").setLevel(logging.WARNING)
        now = datetime.now(self.zone)
        for instance, adapter in self.host.adapters:
            self.add_source(instance, adapter, at=now)
        self.scheduler.add_job(self._job(self.watch), "interval", seconds=WATCH_EVERY, id="watch", next_run_time=now)
        try:
            if self.host.guard is not None:
                self.host.guard.start()
        except FoldError as error:  # a damaged host.db: say so and do nothing until restarted
            self.scheduler.start(paused=True)
            self.halt(error)
            return
        self._deep_check_at = time.monotonic() + DEEP_CHECK_EVERY
        if not self.shared:  # several hosts: the hosts table is the daemon record
            with self.host.open_db() as db:
                db.daemon_started(pid=os.getpid(), now=self.clock()[1])
        watchdog = watchdog_seconds()
        beat = min(HEARTBEAT_EVERY, watchdog / 2) if watchdog else HEARTBEAT_EVERY
        self.scheduler.add_job(self._job(self.heartbeat), "interval", seconds=beat, id="heartbeat")
        self.scheduler.add_job(self._job(self.retain), "interval", seconds=RETAIN_EVERY, id="retain",
                               next_run_time=now)
        self.scheduler.start()
        self._start_watchers()
        self.log("start", store=describe(self.host.location), host=self.host.holder, sources=len(self.host.adapters),
                 editor=self.host.describe_agent(), pid=os.getpid())
        self.request_cycle("start")

    def add_source(self, instance, adapter, *, at: datetime | None = None) -> None:
        """The poll job of one source: every ``every`` with a jitter, the first at ``at`` (default now)."""
        every = instance.settings.every.total_seconds()
        self.scheduler.add_job(self._job(self.poll, instance, adapter), "interval", seconds=every,
                               jitter=min(every * 0.1, 30.0), id=f"poll:{instance.name}",
                               name=f"poll {instance.name}", next_run_time=at or datetime.now(self.zone),
                               replace_existing=True)

    def halt(self, error: BaseException) -> None:
        """host.db was lost or damaged: stop every job, log it once, leave word for doctor and /healthz."""
        with self._flags:
            if self.halted is not None:
                return
            self.halted = str(error)
        self.scheduler.pause()
        self._stopping.set()  # the watchers (IMAP IDLE) log out: nothing is polled until a restart
        self.log("halt", reason="host.db", error=f"{type(error).__name__}: {error}")
        if self.host.guard is not None:
            self.host.guard.halt(str(error))

    def heartbeat(self) -> None:
        """host.db's ``beat_at`` and systemd's watchdog: the scheduler still runs jobs."""
        if not self.shared:  # several hosts: ``presence`` beats in the hosts table
            with self.host.open_db() as db:
                db.daemon_beat(pid=os.getpid(), now=self.clock()[1])
        notify("WATCHDOG=1")

    def retain(self) -> None:
        """Drop the text of old processed observations (``[host] keep_observations``)."""
        keep = self.host.config.host.keep_observations
        if keep is None:
            return
        now, now_text = self.clock()
        with self.host.open_db() as db:
            dropped = retain(db, open_store(self.host.location), keep, now, now_text)
            kept = (db.meta(LAST_PASS_KEY) or {}).get("kept_cited", 0)
        if dropped or (dropped is not None and kept):
            self.log("retain", dropped=dropped, kept_cited=kept, older_than=(now - keep).isoformat())

    def stopped(self) -> None:
        """A clean stop, noted in host.db (``/healthz`` and doctor tell it from a death)."""
        if self.shared:  # several hosts: ``presence`` notes it in the hosts table
            return
        try:
            with self.host.open_db() as db:
                db.daemon_stopped(pid=os.getpid(), now=self.clock()[1])
        except Exception as error:  # noting it is best effort; the stop itself is done
            self.log("error", job="stopped", error=f"{type(error).__name__}: {error}")

    def stop(self, grace: float) -> bool:
        """Stop the scheduler; True when no job was left running after ``grace`` seconds."""
        self._stopping.set()
        for _, stopping in self._watchers.values():
            stopping.set()
        self.scheduler.shutdown(wait=False)
        deadline = time.monotonic() + grace
        for watcher, _ in self._watchers.values():  # a watch notices the stop within a second and logs out
            watcher.join(max(deadline - time.monotonic(), 0.0) / 2)
        while time.monotonic() < deadline:
            with self._flags:
                if self._busy == 0:
                    return True
            time.sleep(0.05)
        return False

    def start_job(self, function: Callable[[], None], job_id: str) -> None:
        """Run ``function`` as a job now (one at a time per ``job_id``)."""
        self.scheduler.add_job(self._job(function), id=job_id, replace_existing=True)

    def _job(self, function: Callable[..., None], *args: Any) -> Callable[[], None]:
        source = getattr(args[0], "name", None) if function.__name__ in ("poll", "poll_now") and args else None

        def job() -> None:
            with self._flags:
                self._busy += 1
            try:
                function(*args)
            except (HostDBLost, HostDBCorrupt) as error:
                self.halt(error)
            except Exception as error:  # a job never dies silently; the next firing tries again
                self.log("error", job=function.__name__, source=source, error=f"{type(error).__name__}: {error}")
            finally:
                with self._flags:
                    self._busy -= 1
        job.__name__ = function.__name__
        return job

    def clock(self) -> tuple[datetime, str]:
        now = datetime.now(self.zone).replace(microsecond=0)
        return now, now.isoformat()

    # -- jobs -------------------------------------------------------------------

    def poll(self, instance, adapter, force: bool = False) -> None:
        now, now_text = self.clock()
        every = instance.settings.every
        slack = max(timedelta(seconds=2), every * 0.1)
        # setdefault: a source added while running (a reload) gets its lock on first use.
        with self._source_locks.setdefault(instance.name, threading.Lock()), self.host.open_db() as db:
            outcome = self.host.poller.poll_one(db, instance, adapter, now, now_text, slack, force=force)
        if outcome is None:
            if force:  # another host is polling it: this news may have come after that poll began
                self._news(instance, adapter, "the source was busy (another host polled it)")
            return
        health = outcome.health
        self.log("poll", source=instance.name, status=outcome.status, new=outcome.observations,
                 error=f"{health.error_class}: {health.message}" if health.status != "ok" else None,
                 notes="; ".join(health.notes)[:2000] or None)  # a refused line's why, a rotation, …
        if outcome.observations:
            self.request_cycle(f"new observations from {instance.name}")

    def poll_now(self, instance, adapter) -> None:
        """The poll a watched source's news asked for (before ``every`` is due)."""
        self.poll(instance, adapter, force=True)

    def _start_watchers(self) -> None:
        for instance, adapter in self.host.adapters:
            self.start_watcher(instance, adapter)

    def start_watcher(self, instance, adapter) -> None:
        """A watcher thread for a source that can say when it has news (each with its own stop event)."""
        if adapter.watch_delay() is None:
            return
        stopping = threading.Event()
        watcher = Watcher(instance, adapter, self._news, self.log, stopping)
        self._watchers[instance.name] = (watcher, stopping)
        watcher.start()

    def stop_watcher(self, name: str) -> None:
        """A source left the configuration (a reload): its watcher logs out; a poll its news asked for is dropped."""
        found = self._watchers.pop(name, None)
        if found is not None:
            found[1].set()
        try:
            self.scheduler.remove_job(f"news:{name}")
        except Exception:  # no such job (the JobLookupError of APScheduler)
            pass

    def _news(self, instance, adapter, why: str) -> None:
        """A watched source has news: poll it ``watch_delay`` from now (news meanwhile joins that poll)."""
        from apscheduler.jobstores.base import ConflictingIdError

        if self._stopping.is_set():
            return
        if why != "connected":
            self.log("watch", source=instance.name, news=why)
        run_date = datetime.now(self.zone) + adapter.watch_delay()
        try:
            self.scheduler.add_job(self._job(self.poll_now, instance, adapter), "date", run_date=run_date,
                                   id=f"news:{instance.name}")
        except ConflictingIdError:
            pass  # a poll is already waiting: it takes this news too
        except Exception as error:  # the scheduler is shutting down
            self.log("error", job="news", error=f"{type(error).__name__}: {error}")

    def watch(self) -> None:
        if self.host.guard is not None and time.monotonic() >= self._deep_check_at:
            self._deep_check_at = time.monotonic() + DEEP_CHECK_EVERY
            self.host.guard.deep_check()
        with self.host.open_db() as db:
            reminders = unfired(db)
            # Only observations a window would take now: those pausing after failed windows wait.
            pending = db.ready_count(self.clock()[0])
            # The user's word: feedback waiting for a window, annotations no window carried yet.
            said = len(db.observations(status="pending", source=FEEDBACK_SOURCE, limit=10_000))
            self._watch_store = self._watch_store or open_store(self.host.location)
            noted = len(new_annotations(self._watch_store.state(), db))
            if self.shared and self.deliveries.behind(db):
                self.deliveries.request()
        self.dates.remind(reminders)
        if self.host.consumers and time.monotonic() >= self._idle_delivery_at:
            # Consumers act on the clock too (a deadline drawing near, a digest time, a closed report period):
            # they are called between windows, one job at a time with the cycles so nothing is delivered twice.
            self._idle_delivery_at = time.monotonic() + IDLE_DELIVERY_EVERY
            if self.shared:
                self.deliveries.request()
            else:
                with self._flags:
                    busy = self._cycle.running
                if not busy:
                    self._deliver_only = True
                    self._cycle.request()
        if time.monotonic() < self._agent_retry_at:
            return  # the editor failed lately: its backoff holds the user's word too
        with self._flags:
            idle = not self._cycle.running
        if not idle:
            return
        if pending > said:  # more than the user's feedback: an agent's report or question, a retry
            self.request_cycle(f"{pending} pending observation(s)")
        elif said or noted:
            self.dates.word(said + noted, datetime.now(self.zone) + self.host.config.host.input_delay)

    def request_cycle(self, why: str) -> None:
        """Ask for a cycle; requests made while one runs are coalesced into one more."""
        self._deliver_only = False
        self._cycle.request()

    def cycle(self) -> None:
        self._cycle.run(self._cycle_once)

    def _cycle_once(self) -> bool | None:
        """One window: True when more is ready at once, None when none may follow on request (it failed)."""
        if self._deliver_only:
            self._deliver_only = False
            with self.host.open_db() as db:
                deliver_records(self.host, db, self.clock()[1])
            return False
        report = self._window()
        with self.host.open_db() as db:
            # Observations pausing after failed windows wait for the watch to find them ready.
            more = (report is not None and report.outcome not in ("failed", "nothing")
                    and db.ready_count(self.clock()[0]) > 0)
        return None if report is None or report.outcome == "failed" else more

    def _window(self) -> CycleReport | None:
        now, now_text = self.clock()
        try:
            with self.host.open_db() as db:
                report = run_window(self.host, db, now, now_text, deliver=not self.shared)
                self.dates.review(db, self.host.config.host.review_every)
            self.dates.deadline(self.host.store, now, now_text)
        except (HostDBLost, HostDBCorrupt):
            raise  # not the editor's failure: the job stops the daemon's cycles
        except FoldError as error:
            self.log("cycle", outcome="error", error=f"{type(error).__name__}: {error}")
            self._editor_failed()
            return None
        self.cycles += 1
        receipt = report.receipt or {}
        self.log("cycle", signal=(report.signal or {}).get("type"), outcome=report.outcome,
                 attempts=report.attempts, batch_id=receipt.get("batch_id"), event_seq=receipt.get("event_seq"),
                 replayed=receipt.get("replayed") or None)
        for line in report.problems():
            self.log("problem", detail=line)
        if report.outcome == "failed":
            self._editor_failed()
        elif report.outcome != "nothing":
            self._agent_failures, self._agent_retry_at = 0, 0.0
        if self.shared and report.receipt is not None and report.outcome != "failed":
            self.deliveries.request()
        return report

    def _editor_failed(self) -> None:
        self._agent_failures += 1
        wait = backoff(self._agent_failures, AGENT_RETRY_FIRST, AGENT_RETRY_CAP).total_seconds()
        self._agent_retry_at = time.monotonic() + wait
        self.log("backoff", editor_failures=self._agent_failures, retry_in=f"{wait:g}s")

