"""One host cycle (contract §9–§11).

Read top to bottom, this is the data's path::

    poll due sources ─→ inbox (host.db)            sources.Poller
    reminders that came due ─→ inbox               reminders.fire_due
    decide_by passed unanswered ─→ fallback         questions.fire_fallbacks
    an interrupted commit? finish it first          windows (intent → replayed receipt)
    what the store already cites is not new        citations.settle_cited
    signal: events / review / nothing               signal.decide_signal
    the bounded §9 input                            context.build_input
    the editor, ≤ max_attempts, receipts back       editor.ask_editor
    deferred ones ride along; too old: expired      hostdb (deferred_events, expire_deferred)
    mark the observations processed / deferred      windows.settle
    hand new records to consumers                   fold_host.cycle.delivery
    answers and fallbacks to the askers' files      answers_file.route_answers

``tick`` is all of it once (``foldctl tick``); the daemon polls each source
on its own schedule and calls ``run_window`` when there is something to do.
Both run over a ``Host`` (``fold_host.cycle.host``). Nothing here reads a
clock: ``now`` comes from the caller.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from fold_core.store.base import Store
from fold_core.store.location import is_url
from fold_core.timefmt import compact_duration
from fold_host.cycle.answers_file import route_answers
from fold_host.cycle.citations import settle_cited
from fold_host.cycle.context import build_input
from fold_host.cycle.delivery import deliver_all, register_new
from fold_host.cycle.editor import OUTCOMES, ask_editor
from fold_host.cycle.fallback import editor_status
from fold_host.cycle.host import Host, same_instance
from fold_host.cycle.inputs import new_annotations, offered
from fold_host.cycle.questions import fire_fallbacks
from fold_host.cycle.reminders import fire_due
from fold_host.cycle.signal import decide_signal
from fold_host.cycle.windows import (Window, drop_intent, drop_window, events_of, last_window, load_intent,
                                     load_window, note_failure, open_window, retry_window, settle, still_pending)
from fold_host.hostdb import ClaimLost, HostDB
from fold_host.hostdb.guard import clear_halt, quick_check

__all__ = ["CycleReport", "Host", "OUTCOMES", "deliver_records", "describe_error", "run_window", "same_instance",
           "tick"]


@dataclass
class CycleReport:
    """What one window did; ``to_json`` is the §11.2 ``tick`` document (with ``polled``)."""

    signal: dict | None = None
    attempts: int = 0
    outcome: str = "nothing"  # committed | checked | acknowledged | nothing | failed
    receipt: dict | None = None  # the accepted receipt, or the last rejection of a failed window
    error: dict | None = None  # why a window failed
    polled: list = field(default_factory=list)
    deliveries: list = field(default_factory=list)
    fallback: bool = False  # the baseline editor settled the window in the configured one's place
    unreachable: int = 0  # windows in a row the configured editor could not be reached
    lost: str | None = None  # several hosts: why this host gave its window up (another one took it over)
    routing: list = field(default_factory=list)  # answers files that could not be written

    def to_json(self) -> dict:
        return {"polled": [outcome.to_json() for outcome in self.polled], "signal": self.signal,
                "attempts": self.attempts, "outcome": self.outcome, "receipt": self.receipt}

    def problems(self) -> list[str]:
        """What went wrong, one line each (stderr of ``tick``, the daemon's log)."""
        lines = [f"source {p.source} failed ({p.health.error_class}): {p.health.message}"
                 for p in self.polled if p.status != "ok"]
        if self.fallback:
            lines.append(f"the configured editor could not be reached ({self.unreachable} window(s) in a row): "
                         "the baseline editor settled this window in its place")
        if self.outcome == "failed":
            lines.append(f"the editor's window failed after {self.attempts} attempt(s); its observations stay "
                         f"pending for the next cycle: {describe_error(self.error)}")
        if self.lost:
            lines.append(self.lost)
        lines += self.routing
        lines += [f"consumer {d.get('consumer')} failed: {d.get('error')}"
                  for d in self.deliveries if d.get("status") == "failed"]
        return lines


def describe_error(error: dict | None) -> str:
    """One line for a window's error: a receipt's errors, or the editor's transport failure."""
    error = error or {}
    listed = "; ".join(f"{e.get('code')}: {e.get('message')}" for e in error.get("errors", ()))
    return listed or f"{error.get('code')} ({error.get('class')}): {error.get('message')}"


def tick(host: Host, now: datetime, now_text: str) -> CycleReport:
    """``foldctl tick``: poll the due sources, then one window."""
    with host.open_db() as db:
        quick_check(db)  # a damaged host.db stops the tick before it reads or writes anything
        if not is_url(host.location):
            clear_halt(host.location)  # sound again: a daemon's earlier halt is over
        polled = host.poller.poll_due(db, host.adapters, now, now_text)
        report = run_window(host, db, now, now_text)
    report.polled = polled
    return report


def run_window(host: Host, db: HostDB, now: datetime, now_text: str, *, deliver: bool = True) -> CycleReport:
    """Reminders, fallbacks → signal → context → editor → commit → mark → consumers (``deliver``: the caller
    delivers) → answers files."""
    fire_due(db, now, now_text)
    fire_fallbacks(host.store, db, now, now_text)
    _register_consumers(host, db, now_text)
    try:
        window = load_window(db)  # left open by a cycle that died or failed (several hosts: or taken over)
        report = _finish_interrupted_commit(host, db, window, now_text)
        if report is None:
            settle_cited(host.store, db, now_text)  # a rebuilt host.db: what the store cites is not new
            settings = host.config.host
            db.expire_deferred(now, now_text, settings.defer_for, spell_duration(settings.defer_for))
            found = _window(host, db, window, now, now_text)
            report = _edit(host, db, *found, now_text) if found else CycleReport()
    except ClaimLost as lost:  # several hosts: the one that took the window over finishes it
        report = CycleReport(lost=str(lost))
    if deliver:
        report.deliveries = deliver_records(host, db, now_text)
    report.routing = route_answers(db, host.adapters, now_text=now_text)
    return report


def _finish_interrupted_commit(host: Host, db: HostDB, window: Window | None, now_text: str) -> CycleReport | None:
    """A previous cycle kept an accepted answer but died before marking: commit it (again) and settle."""
    intent = load_intent(db, window) if window is not None else None
    if intent is None or window is None or intent["batch_id"] != window.batch_id:
        return None
    answer = host.store.commit(intent["batch"], actor=intent["actor"], now=intent["now"], batch_id=window.batch_id)
    if answer.exit_code != 0:  # not accepted after all (the state moved on): ask the editor again
        drop_intent(db, window)
        return None
    settle(db, window, intent["dispositions"], receipt=answer.document, now=now_text)
    return CycleReport(window.signal, 0, OUTCOMES[answer.document["type"]], answer.document)


def _window(host: Host, db: HostDB, window: Window | None, now: datetime,
            now_text: str) -> tuple[Window, list] | None:
    """``(window, events)`` to work on — the one left open (``window``), else a new one — or None."""
    if window is not None and still_pending(db, window) and (window.event_ids or db.pending_count() == 0):
        return window, events_of(db, window)
    if window is not None:
        drop_window(db, window)
    settings = host.config.host
    notes = new_annotations(host.store.state(), db)
    with db.claiming():  # several hosts: the window's observations are claimed as they are chosen
        seen = last_window(db)
        decided = decide_signal(db, now=now, now_text=now_text, review_every=settings.review_every,
                                max_events=settings.max_events, coverage=host.coverage(db), last_window=seen,
                                max_deferred=settings.max_deferred, annotations=len(notes))
        if decided is None:
            return None
        signal, events = decided
        window = open_window(db, signal, [event.id for event in events], now_text)
        if window is None:
            return None  # another host is doing this review
        if db.shared and signal["type"] == "review" and last_window(db) != seen:
            drop_window(db, window)  # another host settled a window meanwhile: no review is due
            return None
    offered(db, notes)
    return window, events_of(db, window)  # arrival order, as when the window is taken up again


def _edit(host: Host, db: HostDB, window: Window, events: list, now_text: str) -> CycleReport:
    document = build_input(host.store, db, now=now_text, batch_id=window.batch_id, user=_user(host),
                           events=events, signal=window.signal)
    result = ask_editor(host, db, window, document, now_text)
    if result.error and _codes(result.error) == {"batch_conflict"}:
        # host.db lost track of an accepted window: the derived id is taken, so derive a fresh one.
        window = retry_window(db, window, now_text)
        document["batch_id"] = window.batch_id
        result = ask_editor(host, db, window, document, now_text)
    if result.receipt is not None:  # accepted
        pause_point(host.location, "after_commit")
        settle(db, window, result.dispositions, receipt=result.receipt, now=now_text)
        return CycleReport(window.signal, result.attempts, OUTCOMES[result.receipt["type"]], result.receipt,
                           fallback=result.fallback, unreachable=result.unreachable)
    error = result.error or {}  # a window that was not accepted always says why
    note_failure(db, window, error, attempts=result.attempts, now=now_text)
    receipt = error if "errors" in error else None
    return CycleReport(window.signal, result.attempts, "failed", receipt, error=result.error,
                       fallback=result.fallback, unreachable=result.unreachable)


def spell_duration(span: timedelta) -> str:
    """A configured duration as people write it (``7d``, ``1d12h``)."""
    return compact_duration(int(span.total_seconds()))


def _codes(error: dict) -> set[str]:
    return {entry.get("code") for entry in error.get("errors", ())}


def _user(host: Host) -> dict:
    user = host.config.user
    return {"background": user.background, "purpose": user.purpose, "feedback_policy": user.feedback_policy}


def _register_consumers(host: Host, db: HostDB, now_text: str) -> None:
    """A consumer seen for the first time starts at the event_seq current now, before this cycle's commit."""
    if host.consumers:
        register_new(db, host.location, host.consumers, now=now_text, store=host.store)


def deliver_records(host: Host, db: HostDB, now_text: str, store: Store | None = None) -> list[dict]:
    """Hand the consumers what is new (``store``: a reader of the caller's; default the host's own)."""
    if not host.consumers:
        return []
    settings = host.config.host
    return deliver_all(db, host.location, host.consumers, now=now_text, timezone=settings.timezone,
                       language=settings.reader_language, coverage=host.coverage(db),
                       editor=editor_status(db, host.config), store=store or host.store,
                       public_url=host.config.pinboard.public_url)


def pause_point(location: str, point: str) -> None:
    """Tests only: with ``FOLD_HOST_PAUSE=<point>`` the host stops here (and says so in a file) until killed.

    The file is in the store directory, or (a store in PostgreSQL) in ``$FOLD_HOST_PAUSE_DIR``.
    """
    if os.environ.get("FOLD_HOST_PAUSE") == point:
        folder = os.environ.get("FOLD_HOST_PAUSE_DIR") or location
        with open(os.path.join(folder, f"paused.{point}"), "w") as marker:
            marker.write(str(os.getpid()))
        time.sleep(600)
