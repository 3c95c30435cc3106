"""Answering a decision frame, bound to what was seen (contract §3.6, §11.2 ``foldctl decide`` / ``decisions``).

``save_decision`` checks the answer against the item's current frame (its
digest, its options) and keeps it as a feedback observation through
``save_feedback``, the one path for feedback: ``meaning: decide`` with
``option``, ``digest``, the item's ``revision`` (the last revision that
changed it) and ``note``. An answer to a frame that changed since the user
saw it (``stale_decision``) stores nothing. An answer to a frame raised from
an agent's question also keeps ``asked_by`` (``fold_host.cycle.questions``),
so it is routed back to the asker. ``list_decisions`` joins the frames of
the store with the answers and fallbacks in host.db (the latest stands): an
answer counts for the frame whose digest it carries, so a changed frame is
open again; a fallback that stands makes it ``fell_back``.
"""

from __future__ import annotations

import json

from fold_core.kernel.decision import frame_digest
from fold_core.kernel.outcome import error
from fold_core.store.locate import open_store
from fold_host.cycle.feedback import save_feedback
from fold_host.cycle.questions import FALLBACK_MEANING, asked_by, framed, latest_answers
from fold_host.hostdb import open_host_db

__all__ = ["STATUSES", "list_decisions", "save_decision"]

STATUSES = ("open", "answered", "fell_back", "closed")
NOTE_LIMIT = 2000


def _failed(revision: int, *errors: dict) -> tuple[dict, int]:
    return {"ok": False, "revision": revision, "errors": list(errors)}, 1


def _frame_history(store, item: str) -> tuple[int | None, int | None]:
    """``(the last revision that changed the item, the revision from which its current frame stands)``."""
    changed = since = None
    current: str | None = None
    for record in store.history(item=item).document["records"]:
        for change in record.get("changes") or ():
            post = change.get("item") or {}
            if post.get("id") != item:
                continue
            changed = record.get("revision")
            frame = post.get("decision")
            digest = frame_digest(frame) if frame else None
            if digest != current:
                current, since = digest, record.get("revision")
    return changed, since


def save_decision(store_dir: str, item: str, option: str, digest: str | None, note: str | None, now: str,
                  *, via: str = "cli") -> tuple[dict, int]:
    """Keep the answer ``option`` to ``item``'s frame; ``(document, exit code)`` (exit 1: one error, nothing kept)."""
    if note is not None and not 1 <= len(note) <= NOTE_LIMIT:
        return _failed(0, error("invalid_field", f"--note must hold 1–{NOTE_LIMIT} characters; got {len(note)}",
                                field="note"))
    store = open_store(store_dir)
    answer = store.state_document(now=now, item=item, depth=0, not_active=0)
    revision = int(answer.document.get("revision") or 0)
    if answer.exit_code != 0:
        codes = {e.get("code") for e in answer.document.get("errors", ())}
        if codes == {"item_inactive"}:  # withdrawn or merged: nothing is asked of the user any more
            return _failed(revision, error("no_decision", f"item {item} is no longer active: no open decision",
                                           item=item))
        return _failed(revision, error("item_not_found", f"no item {item}", item=item))
    frame = (answer.document.get("item") or {}).get("decision")
    if not frame:
        return _failed(revision, error("no_decision", f"item {item} has no decision frame", item=item))
    options = [o["id"] for o in frame["options"]]
    if option not in options:
        return _failed(revision, error("unknown_option", f"{option!r} is not an option of {item}'s frame "
                                                         f"({', '.join(options)})", item=item, option=option,
                                       options=options))
    changed, since = _frame_history(store, item)
    if digest is not None and digest != frame["digest"]:
        return _failed(revision, error("stale_decision", f"the frame of {item} changed at revision {since}: "
                                                         f"answer the current one", item=item, given=digest,
                                       current=frame["digest"], changed_at_revision=since))
    extra = {"option": option, "digest": frame["digest"], "revision": changed if changed is not None else revision}
    if note is not None:
        extra["note"] = note
    with open_host_db(store_dir) as db:  # the question it answers, kept with it: routed whatever the item becomes
        asker = asked_by(db, (answer.document.get("item") or {}).get("sources"))
    if asker is not None:
        extra["asked_by"] = asker
    label = next(o["label"] for o in frame["options"] if o["id"] == option)
    text = f"decided: {label}" + (f" — {note}" if note else "")  # English: the observation is data
    document, code = save_feedback(store_dir, item, "decide", None, None, now, via=via, extra=extra, text=text)
    if code != 0:
        return document, code
    return {"ok": True, "observation": document["observation"], "item": item, "option": option,
            "digest": frame["digest"], "revision": extra["revision"]}, 0


def _answer(event: dict | None, digest: str) -> dict | None:
    """The answer as listed, when it counts for the frame with ``digest``."""
    if event is None or event["digest"] != digest:
        return None  # an answer to an earlier frame: the current one is still open
    return {"option": event["option"], "at": event["at"], "via": event["via"], "digest": event["digest"],
            "note": event["note"]}


def _status(event: dict | None, digest: str) -> str:
    if event is None or event["digest"] != digest:
        return "open"
    return "fell_back" if event["meaning"] == FALLBACK_MEANING else "answered"


def list_decisions(store_dir: str, now: str, status: str | None = None,
                   source: str | None = None) -> tuple[dict, int]:
    """``{"decisions": [...]}``: every item with a frame, open ones first, soonest ``decide_by`` first."""
    store = open_store(store_dir)
    state = store.state_document(now=now).document
    listed = []
    with open_host_db(store_dir) as db:
        answers = latest_answers(db)
        for entry in framed(state["root"]["items"]):
            if source is not None and not _from(entry, source):
                continue
            frame = entry["decision"]
            event = answers.get(entry["id"])
            listed.append({"item": entry["id"], "title": entry["title"], "question": frame["question"],
                           "options": frame["options"], "recommended": frame.get("recommended"),
                           "fallback": frame.get("fallback"), "decide_by": frame.get("decide_by"),
                           "digest": frame["digest"], "evidence": frame["evidence"],
                           "status": _status(event, frame["digest"]), "answer": _answer(event, frame["digest"]),
                           "asked_by": asked_by(db, entry.get("sources"))})
        listed.extend(_moved_on(store, db, state, answers, {d["item"] for d in listed}, source))
        listed.extend(_closed(store, db, state, answers, source))
    if status is not None:
        listed = [d for d in listed if d["status"] == status]
    order = {"open": 0, "answered": 1, "fell_back": 1, "closed": 2}
    listed.sort(key=lambda d: (order[d["status"]], d["decide_by"] is None, d["decide_by"] or "", d["item"]))
    return {"decisions": listed}, 0


def _from(entry: dict, source: str) -> bool:
    """Whether one of the item's sources names ``source`` (an instance name)."""
    text = json.dumps(entry.get("sources") or [], ensure_ascii=False)
    return f'"event:{source}:' in text or f'"{source}"' in text


def _active_ids(items: list[dict]) -> set[str]:
    found: set[str] = set()
    for entry in items:
        found.add(entry["id"])
        found |= _active_ids(((entry.get("children") or {}).get("items")) or [])
    return found


def _moved_on(store, db, state: dict, answers: dict[str, dict], listed: set[str], source: str | None) -> list[dict]:
    """Active items whose editor cleared the frame after it was answered or fell back (the skill's "move the
    item on"): the decision is still listed, as the answer or fallback that settled its last frame, so the
    user reads what was decided after the next cycle too."""
    moved = []
    active = _active_ids(state["root"]["items"])
    for item, event in answers.items():
        if item in listed or item not in active:
            continue
        records = store.history(item=item).document["records"]
        frames = [c["item"] for r in records for c in r.get("changes") or ()
                  if c["item"]["id"] == item and c["item"].get("decision")]
        if not frames or (source is not None and not _from(frames[-1], source)):
            continue
        post = frames[-1]
        frame = post["decision"]
        digest = frame_digest(frame)
        if event["digest"] != digest:
            continue  # an answer to an earlier frame, and the later one cleared unanswered: nothing settled
        moved.append({"item": item, "title": post.get("title"), "question": frame["question"],
                      "options": frame["options"], "recommended": frame.get("recommended"),
                      "fallback": frame.get("fallback"), "decide_by": frame.get("decide_by"), "digest": digest,
                      "evidence": frame["evidence"], "status": _status(event, digest),
                      "answer": _answer(event, digest), "asked_by": asked_by(db, post.get("sources"))})
    return moved


def _closed(store, db, state: dict, answers: dict[str, dict], source: str | None) -> list[dict]:
    """Withdrawn or merged items that still carry a frame (the latest post-image shows it)."""
    closed = []
    for entry in state.get("not_active") or ():
        records = store.history(item=entry["id"]).document["records"]
        posts = [c["item"] for r in records for c in r.get("changes") or () if c["item"]["id"] == entry["id"]]
        frame = posts[-1].get("decision") if posts else None
        if not frame or (source is not None and not _from(posts[-1], source)):
            continue
        digest = frame_digest(frame)
        closed.append({"item": entry["id"], "title": entry["title"], "question": frame["question"],
                       "options": frame["options"], "recommended": frame.get("recommended"),
                       "fallback": frame.get("fallback"), "decide_by": frame.get("decide_by"), "digest": digest,
                       "evidence": frame["evidence"], "status": "closed",
                       "answer": _answer(answers.get(entry["id"]), digest),
                       "asked_by": asked_by(db, posts[-1].get("sources"))})
    return closed
