"""The bounded agent input of contract §9.

Its size depends on the budget and ``max_events``, never on the age of the
store or the length of the inbox backlog:

* ``state`` — the §8 document at ``now``: the whole active state with the
  time projection (bounded by the budget of every layer), but only the
  ``RECENT`` most recent not-active entries plus the **referenced** ones
  (``not_active_total`` still counts them all);
* a not-active entry is referenced when an event of this input points at it:
  a feedback or reminder target, or an item that an earlier observation of the
  same thread was related to (so the editor restores it rather than creating
  a new item), or a pending annotation's item;
* ``user`` — the configured background, purpose and feedback policy, and
  ``learned`` (at most ``MAX_LEARNED`` entries, only when there are some):
  what the user's feedback says about senders and threads
  (``fold_host.cycle.learning``);
* ``pending_annotations`` — as in the state document;
* ``events`` — the window's observations (at most ``max_events``); one the
  editor deferred earlier carries ``"deferred": {"at": first deferral,
  "times": N}``; an answer to a decision frame (feedback ``decide`` or the
  host's ``fallback``, with its ``option``, ``digest``, ``note``) carries
  ``feedback.answered``: the question and the chosen option's label, and
  whether it answers the item's current frame;
* the keys come stable first (``user``, ``state``, ``pending_annotations``,
  ``signal``, ``events``, then ``now`` and ``batch_id``), so that a prompt
  cache reuses as much as it can;
* long texts are cut with a mark that says how much was left out: event texts
  at ``EVENT_TEXT_LIMIT``, annotation texts at ``ANNOTATION_TEXT_LIMIT``.
"""

from __future__ import annotations

from collections.abc import Sequence

from fold_core.observation import Observation, bound_text
from fold_core.store.base import Store
from fold_host.cycle.learning import learned_for
from fold_host.hostdb import HostDB

__all__ = ["ANNOTATION_TEXT_LIMIT", "EVENT_TEXT_LIMIT", "RECENT", "build_input"]

RECENT = 20
EVENT_TEXT_LIMIT = 2000
ANNOTATION_TEXT_LIMIT = 1000
THREAD_LOOKBACK = 200  # earlier observations of the same threads consulted for related items


def build_input(store: Store, db: HostDB, *, now: str, batch_id: str, user: dict, events: Sequence[Observation],
                signal: dict) -> dict:
    """The §9 input document for one editor call."""
    state = store.state_document(now=now, not_active=RECENT).document
    referenced = _referenced(db, events, state)
    listed = {entry["id"] for entry in state["not_active"]}
    if referenced - listed:
        everything = store.state_document(now=now, not_active=None).document["not_active"]
        state["not_active"] = [entry for entry in everything if entry["id"] in listed or entry["id"] in referenced]
    _cut_annotations(state)
    user = dict(user)
    learned = learned_for(db, now)
    if learned:
        user["learned"] = learned
    # Stable parts first, volatile ones last: a server's prompt cache reuses the longest unchanged prefix
    # (the user's background rarely changes, the state changes by one batch, the events and now every window).
    return {
        "user": user,
        "state": state,
        "pending_annotations": state["pending_annotations"],
        "signal": signal,
        "events": _events(db, events, _frames(state)),
        "now": now,
        "batch_id": batch_id,
    }


def _events(db: HostDB, events: Sequence[Observation], frames: dict[str, dict]) -> list[dict]:
    """The events as the editor reads them; one offered again carries ``deferred: {at, times}``, an answer
    to a frame (``decide`` / ``fallback`` feedback with an ``option``) what it answered."""
    marks = db.deferral_marks([event.id for event in events])
    listed = []
    for event in events:
        entry = event.to_event(EVENT_TEXT_LIMIT)
        if event.id in marks:
            entry["deferred"] = marks[event.id]
        answered = _answered(event.feedback, frames)
        if answered is not None:
            entry["feedback"] = {**entry["feedback"], "answered": answered}
        listed.append(entry)
    return listed


def _frames(state: dict) -> dict[str, dict]:
    """The decision frame of every active item that has one, by item id."""
    found: dict[str, dict] = {}
    stack = list(state.get("root", {}).get("items", ()))
    while stack:
        item = stack.pop()
        if item.get("decision"):
            found[item["id"]] = item["decision"]
        stack.extend((item.get("children") or {}).get("items", ()))
    return found


def _answered(feedback: dict | None, frames: dict[str, dict]) -> dict | None:
    """``{"question", "label", "current"}`` of an answer (§9): the words of the option it chose and whether
    it answers the item's current frame (its digest) — an answer to an earlier frame leaves this one open."""
    meaning, option = (feedback or {}).get("meaning"), (feedback or {}).get("option")
    if meaning not in ("decide", "fallback") or (meaning == "decide" and not option):
        return None  # a decide without an option is free text: nothing to match against a frame
    frame = frames.get(str((feedback or {}).get("target")))
    if frame is None:
        return {"question": None, "label": None, "current": False}
    label = next((o.get("label") for o in frame.get("options", ()) if o.get("id") == option), None)
    current = (feedback or {}).get("digest") in (None, frame.get("digest"))
    return {"question": frame.get("question"), "label": label,
            "current": current and (label is not None or meaning == "fallback" and not option)}


def _referenced(db: HostDB, events: Sequence[Observation], state: dict) -> set[str]:
    """Item ids that this input points at (only the not-active ones matter to the caller)."""
    found = {note["resolved_item"] for note in state["pending_annotations"]}
    threads = set()
    for event in events:
        for link in (event.feedback, event.reminder):
            if link and isinstance(link.get("target"), str):
                found.add(link["target"])
        if event.thread:
            threads.add(event.thread)
    return found | db.related_in_threads(threads, THREAD_LOOKBACK)


def _cut_annotations(state: dict) -> None:
    for note in state["pending_annotations"]:
        note["text"] = bound_text(note["text"], ANNOTATION_TEXT_LIMIT)
    stack = list(state.get("root", {}).get("items", ()))
    while stack:
        item = stack.pop()
        for note in item.get("annotations", ()):
            note["text"] = bound_text(note["text"], ANNOTATION_TEXT_LIMIT)
        children = item.get("children")
        if children:
            stack.extend(children.get("items", ()))
