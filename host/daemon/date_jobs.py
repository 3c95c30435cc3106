"""The daemon's date jobs: a cycle at a moment the host knows ahead — a snooze's end, the next zero-event review,
just after the soonest ``decide_by``, and ``[host] input_delay`` after the user's word.

Each is an APScheduler date job with a fixed id (one per snooze), replaced when the moment moves; the job only
asks for a cycle (``Daemon.request_cycle``), so a cycle already running takes it along.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from datetime import datetime, timedelta
from typing import Any

from fold_host.cycle.questions import next_deadline
from fold_host.cycle.signal import FIRST_CYCLE_KEY, next_review_at
from fold_host.cycle.windows import last_window
from fold_host.hostdb import HostDB

__all__ = ["DateJobs"]

Job = Callable[[], None]


class DateJobs:
    """The date jobs of one daemon; see the module docstring."""

    def __init__(self, scheduler: Any, job: Callable[..., Job], request: Callable[[str], None],
                 log: Callable[..., None]) -> None:
        self.scheduler, self.job, self.request, self.log = scheduler, job, request, log
        self.reminders: set[str] = set()

    def remind(self, reminders: Iterable[Mapping[str, Any]]) -> None:
        """A cycle at each snooze's ``due_at`` (each reminder scheduled once)."""
        for reminder in reminders:
            if reminder["id"] not in self.reminders:
                self.reminders.add(reminder["id"])
                self.scheduler.add_job(self.job(self.request, f"reminder {reminder['id']}"), "date",
                                       run_date=datetime.fromisoformat(reminder["due_at"]),
                                       id=f"reminder:{reminder['id']}", replace_existing=True)
                self.log("reminder", id=reminder["id"], target=reminder["target"], due_at=reminder["due_at"])

    def word(self, count: int, run_date: datetime) -> None:
        """The user said something: one cycle at ``run_date`` (later words join it)."""
        from apscheduler.jobstores.base import ConflictingIdError  # APScheduler loads with the daemon

        try:
            self.scheduler.add_job(self.job(self.request, "the user's word"), "date", run_date=run_date, id="input")
            self.log("input", waiting=count, cycle_at=run_date.replace(microsecond=0).isoformat())
        except ConflictingIdError:
            pass  # a cycle is already waiting: it takes this word too

    def deadline(self, store: Any, now: datetime, now_text: str) -> None:
        """A cycle just after the soonest ``decide_by`` still ahead (its fallback is recorded then)."""
        due = next_deadline(store, now, now_text)
        if due is None:
            return
        # a second late: the cycle's clock (whole seconds) must have reached decide_by
        self.scheduler.add_job(self.job(self.request, "decide_by"), "date", run_date=due + timedelta(seconds=1),
                               id="deadline", replace_existing=True)

    def review(self, db: HostDB, review_every: timedelta) -> None:
        """A cycle at the next zero-event review, counted from the last window."""
        anchor = db.meta(FIRST_CYCLE_KEY)
        if anchor is None:
            return
        due = next_review_at(last_window(db), anchor, review_every)
        self.scheduler.add_job(self.job(self.request, "review"), "date", run_date=due, id="review",
                               replace_existing=True)
