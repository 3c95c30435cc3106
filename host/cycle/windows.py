"""A cycle's window and its durable bookkeeping in host.db (contract §9, §6.2).

A **window** is what one editor call is about: the signal, the observation
ids of its events and the ``batch_id`` derived from them. It is written to
host.db before the agent is asked, and the editor's accepted answer is
written there as the **commit intent** before it goes to the store. So a host
that dies at any point resumes exactly:

* before the intent: the same window is asked again (same batch_id);
* after the intent, before or after the store's commit: the intent is
  committed again — the store answers ``replayed: true`` when it already
  holds it — and only then are the observations marked (``settle``).

Marking the observations, clearing the window and noting the last window
happen in one transaction, so an observation is processed exactly once.
``batch_id`` = ``fold-<signal>-<window end, UTC>-<sha256 of the sorted
observation ids, the signal type and the window end>``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from datetime import timezone

from fold_core.timefmt import instant
from fold_host.hostdb import ClaimLost, HostDB
from fold_host.hostdb.one_host import INTENT_KEY, WINDOW_KEY

__all__ = ["Window", "derive_batch_id", "drop_intent", "drop_window", "events_of", "last_failure", "last_window",
           "load_intent", "load_window", "note_failure", "open_window", "retry_window", "save_intent", "settle",
           "still_pending"]

LAST_KEY, FAILURE_KEY = "last_window", "last_failure"
WINDOW_OUTCOMES = {"commit": "committed", "checked": "checked", "acknowledge": "acknowledged"}  # counted per window


def derive_batch_id(event_ids: Sequence[str], signal_type: str, window_end: str) -> str:
    """The batch_id of a window: the same window always gives the same id."""
    canonical = json.dumps([sorted(event_ids), signal_type, window_end], ensure_ascii=False, separators=(",", ":"))
    digest = hashlib.sha256(canonical.encode()).hexdigest()[:16]
    end = instant(window_end).astimezone(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    return f"fold-{signal_type}-{end}-{digest}"


@dataclass(frozen=True)
class Window:
    """One editor call's subject: the signal, its events (observation ids) and the batch_id."""

    batch_id: str
    signal: dict
    event_ids: tuple[str, ...]
    now: str  # the cycle's clock when the window was opened
    retry: int = 0  # > 0 only after a batch_conflict forced a fresh batch_id

    def to_json(self) -> dict:
        data = asdict(self)
        data["event_ids"] = list(self.event_ids)
        return data

    @classmethod
    def from_json(cls, data: dict) -> "Window":
        return cls(batch_id=data["batch_id"], signal=data["signal"], event_ids=tuple(data["event_ids"]),
                   now=data["now"], retry=data.get("retry", 0))


def open_window(db: HostDB, signal: dict, event_ids: Sequence[str], now: str, *, retry: int = 0,
                replaces: str | None = None) -> Window | None:
    """Derive and persist a new window; None when another host holds one like it (a review) first.

    ``replaces``: the batch_id of the window this one takes the place of (a retry).
    """
    batch_id = derive_batch_id(event_ids, signal["type"], signal["window"]["to"])
    if retry:
        batch_id = f"{batch_id}-r{retry}"
    window = Window(batch_id, signal, tuple(event_ids), now, retry)
    if not db.open_window_row(window.to_json(), window.event_ids, replaces=replaces,
                              review=signal["type"] == "review"):
        return None
    return window


def retry_window(db: HostDB, window: Window, now: str) -> Window:
    """``window`` again under a fresh batch_id (its derived one is taken: ``batch_conflict``), replacing it."""
    fresh = open_window(db, window.signal, window.event_ids, now, retry=window.retry + 1, replaces=window.batch_id)
    if fresh is None:  # a replacing window is never turned away: another host holding it is ``ClaimLost``
        raise ClaimLost(f"the window {window.batch_id} could not be replaced")
    return fresh


def load_window(db: HostDB) -> Window | None:
    """The window a previous cycle left open (it died or failed before settling)."""
    data = db.window_row()
    return Window.from_json(data) if data else None


def still_pending(db: HostDB, window: Window) -> bool:
    """Whether every event of ``window`` is still pending or deferred (else the window is stale)."""
    return db.all_open(window.event_ids)


def events_of(db: HostDB, window: Window) -> list:
    """The window's observations, in arrival order."""
    return db.observations_by_id(window.event_ids)


def drop_intent(db: HostDB, window: Window) -> None:
    db.drop_window_intent(window.batch_id)


def drop_window(db: HostDB, window: Window) -> None:
    db.drop_window_row(window.batch_id)


def save_intent(db: HostDB, window: Window, *, actor: str, batch: dict, dispositions: list, now: str) -> None:
    """The accepted-by-the-host answer, kept before it goes to the store."""
    db.save_window_intent(window.batch_id, {"batch_id": window.batch_id, "actor": actor, "batch": batch,
                                            "dispositions": dispositions, "now": now})


def load_intent(db: HostDB, window: Window) -> dict | None:
    return db.window_intent(window.batch_id)


def settle(db: HostDB, window: Window, dispositions: Sequence[dict], *, receipt: dict, now: str) -> None:
    """Mark the window's observations, clear the window and intent, note the last window: one transaction."""
    last = {"batch_id": window.batch_id, "type": window.signal["type"], "to": window.signal["window"]["to"],
            "settled_at": now, "outcome": receipt.get("type"), "event_seq": receipt.get("event_seq")}
    db.settle_window(dispositions, batch_id=window.batch_id, now=now, drop=(WINDOW_KEY, INTENT_KEY, FAILURE_KEY),
                     note=(LAST_KEY, last), outcome=WINDOW_OUTCOMES.get(receipt.get("type", "")))


def last_window(db: HostDB) -> dict | None:
    return db.meta(LAST_KEY)


def note_failure(db: HostDB, window: Window, error: dict, *, attempts: int, now: str) -> None:
    """A window the editor could not settle: its observations stay pending; doctor shows why.

    Unless the editor was not reached at all (``agent_unavailable``: not the
    observations' fault), each observation's ``failed_windows`` grows, which
    moves it behind fresh ones, halves the next window it is in and pauses
    its retries (``HostDB.window_events``).
    """
    failure = {"at": now, "batch_id": window.batch_id, "signal": window.signal["type"], "attempts": attempts,
               "events": len(window.event_ids), "error": error}
    db.fail_window(window.event_ids, count=error.get("code") != "agent_unavailable", now=now,
                   drop=(WINDOW_KEY, INTENT_KEY), note=(FAILURE_KEY, failure), batch_id=window.batch_id)


def last_failure(db: HostDB) -> dict | None:
    return db.meta(FAILURE_KEY)
