"""Why the editor is called now: the §9 ``signal`` (contract §9).

* ``events`` — pending observations exist (polled mail, feedback, reminders
  that came due). At most ``max_events`` of them, oldest first (a poll that
  brought more than that is read newest first: ``HostDB.window_events``),
  go into one call; the rest wait for the next cycle and the ``reason`` says
  how many.
* ``review`` — nothing is pending and no window was settled for
  ``review_every`` (counted from the last settled window, or from the host's
  first cycle): ``received: 0``, so the editor re-reads the state against the
  clock (due dates, stale facts, waiting items).
* ``review`` too when the user saved annotations that no window has carried
  yet (``fold_host.cycle.inputs``): the reason says how many;
* otherwise no signal: the cycle does nothing.

Deferred observations ride along with a window that opens for one of these
reasons (never on their own), at most ``max_deferred`` of them, inside
``max_events``, the earliest deferred first; ``received`` counts only the
new ones, the ``reason`` says how many came back.

The ``window`` says which past the events cover: it starts where the last
settled window ended; it ends at ``now`` when every pending observation is in
the call, else at the observation time of the last one included (the rest
have not been looked at). ``coverage`` says per source whether the window is
trustworthy — silence from a failed source is no evidence.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

from fold_core.observation import Observation
from fold_core.timefmt import instant
from fold_host.hostdb import HostDB

__all__ = ["FIRST_CYCLE_KEY", "decide_signal", "next_review_at"]

FIRST_CYCLE_KEY = "first_cycle_at"


def decide_signal(db: HostDB, *, now: datetime, now_text: str, review_every: timedelta, max_events: int,
                  coverage: Sequence[dict], last_window: dict | None,
                  max_deferred: int = 0, annotations: int = 0) -> tuple[dict, list[Observation]] | None:
    """``(signal, events)`` for this cycle, or None when the editor has nothing to do.

    Deferred observations never open a window; when one opens they ride
    along, at most ``max_deferred``, inside ``max_events`` (a window with new
    observations keeps at least one place for them).
    """
    anchor = _anchor(db, now_text)
    start = last_window["to"] if last_window else anchor
    deferred = db.deferred_events(min(max_deferred, max_events), now)
    events = db.window_events(max(1, max_events - len(deferred)), now)
    if events:
        deferred = deferred[:max_events - len(events)]
        waiting = db.pending_count() - len(events)
        end = now_text if waiting == 0 else _latest(events, now)
        reminders = sum(1 for event in events if event.channel == "reminder")
        reason = f"{len(events)} new observation(s)"
        if reminders:
            reason += f", {reminders} of them reminder(s) that came due"
        if waiting:
            reason += f"; {waiting} more wait for the next cycle (at most {max_events} per call)"
        reason += _offered(deferred)
        return (_signal("events", reason, len(events), _earliest(start, end), end, coverage, reminders),
                events + deferred)
    due_at = next_review_at(last_window, anchor, review_every)
    if annotations and now < due_at:  # the user's notes, not the clock, call for a look at the state
        reason = f"{annotations} new annotation(s) from the user" + _offered(deferred)
        return _signal("review", reason, 0, _earliest(start, now_text), now_text, coverage, 0), deferred
    if now < due_at:
        return None
    hours = review_every.total_seconds() / 3600
    reason = (f"periodic review: no new observation since {start}; the review runs when nothing happened for "
              f"{hours:g}h") + _offered(deferred)
    return _signal("review", reason, 0, _earliest(start, now_text), now_text, coverage, 0), deferred


def _offered(deferred: Sequence[Observation]) -> str:
    if not deferred:
        return ""
    return f"; {len(deferred)} deferred observation(s) offered again (marked \"deferred\")"


def next_review_at(last_window: dict | None, anchor: str, review_every: timedelta) -> datetime:
    """When the next zero-event review is due."""
    since = last_window["to"] if last_window else anchor
    return instant(since) + review_every


def _anchor(db: HostDB, now_text: str) -> str:
    anchor = db.meta(FIRST_CYCLE_KEY)
    if anchor is None:
        db.set_meta(FIRST_CYCLE_KEY, now_text)
        anchor = now_text
    return anchor


def _signal(kind: str, reason: str, received: int, start: str, end: str, coverage: Sequence[dict],
            reminders: int) -> dict:
    return {"type": kind, "reason": reason, "received": received, "window": {"from": start, "to": end},
            "coverage": list(coverage), "reminders": reminders}


def _latest(events: Sequence[Observation], now: datetime) -> str:
    """The last observation time among ``events`` (never after ``now``)."""
    latest = max(events, key=lambda event: instant(event.observed_at))
    return latest.observed_at if instant(latest.observed_at) <= now else now.isoformat(timespec="seconds")


def _earliest(start: str, end: str) -> str:
    return start if instant(start) <= instant(end) else end
