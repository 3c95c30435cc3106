"""Agents' questions and what became of them: the link to frames, the deadlines, the answers (contract §3.6, §11.2).

An agent asks through a work-log ``question`` line or ``fold_ask``: an
observation whose ``meta`` holds ``type: "question"``, ``question_id`` and
the frame (``fold_adapters.worklog.question``). The editor raises it as a
``needs-you`` item with that frame and cites the observation among the
item's sources; that citation is the link:

* ``asked_by(db, sources)`` — ``{"source", "question_id"}`` of the latest
  question the sources cite (``foldctl decisions``; an answer stores it in its
  feedback, so it stays routed whatever the item becomes later);
* ``fire_fallbacks`` — when a frame's ``decide_by`` has passed with no answer
  to that frame, the host records its fallback once: a feedback observation
  ``meaning: fallback`` (``via: "host"``) whose id is derived from the item and
  the frame's digest, so a second try (a restart around the deadline, two
  hosts) is a deduplicated insert. A frame without a ``fallback`` or without
  ``decide_by`` stays open;
* ``answer_events`` — every answer (``decide``) and fallback, oldest first,
  and ``latest_answers`` the one that stands per item;
* ``question_answers`` — per question its status (``open``, ``answered``,
  ``fell_back``, ``dropped``), for ``fold_answers``.
"""

from __future__ import annotations

from datetime import datetime

from fold_core.observation import Observation
from fold_core.timefmt import instant, parse_instant
from fold_host.cycle.feedback import FEEDBACK_SOURCE
from fold_host.hostdb import HostDB

__all__ = ["FALLBACK_MEANING", "answer_events", "asked_by", "fallback_observation", "fire_fallbacks", "framed",
           "latest_answers", "next_deadline", "question_answers", "question_key"]

FALLBACK_MEANING = "fallback"
ANSWER_MEANINGS = ("decide", FALLBACK_MEANING)


def question_key(observation: Observation) -> dict | None:
    """``{"source", "question_id"}`` when ``observation`` is an agent's question, else None."""
    meta = observation.meta
    if meta.get("type") == "question" and isinstance(meta.get("question_id"), str):
        return {"source": observation.source, "question_id": meta["question_id"]}
    return None


def cited_ids(sources: object) -> list[str]:
    """The observation ids an item's sources cite (``ref: "event:<id>"``)."""
    refs = []
    for source in sources if isinstance(sources, list) else ():
        ref = source.get("ref") if isinstance(source, dict) else None
        if isinstance(ref, str) and ref.startswith("event:"):
            refs.append(ref[len("event:"):])
    return refs


def asked_by(db: HostDB, sources: object) -> dict | None:
    """The question an item with these sources came from: the latest one they cite, or None."""
    found = [key for key in (question_key(o) for o in db.observations_by_id(cited_ids(sources))) if key]
    return found[-1] if found else None


def framed(items: list[dict]) -> list[dict]:
    """The items of a state document's layer (and their children's) that carry a frame."""
    found = []
    for entry in items:
        if entry.get("decision"):
            found.append(entry)
        found.extend(framed(((entry.get("children") or {}).get("items")) or []))
    return found


def answer_events(db: HostDB) -> list[dict]:
    """Every answer and fallback kept in host.db, oldest first.

    Each ``{"observation", "item", "meaning", "option", "note", "at", "via", "digest", "asked_by"}``.
    """
    rows = db.observations(source=FEEDBACK_SOURCE, limit=1_000_000)
    by_id = {o.id: o for o in db.observations_by_id([row["id"] for row in rows])}
    events = []
    for row in reversed(rows):  # the listing is newest first
        feedback = getattr(by_id.get(row["id"]), "feedback", None) or {}
        target = feedback.get("target")
        if feedback.get("meaning") not in ANSWER_MEANINGS or not isinstance(target, str):
            continue
        if feedback["meaning"] == "decide" and "option" not in feedback:
            continue  # free-text ``foldctl feedback --meaning decide``: no frame was answered
        events.append({"observation": row["id"], "item": target, "meaning": feedback["meaning"],
                       "option": feedback.get("option"), "note": feedback.get("note"), "at": row["at"],
                       "via": feedback.get("via"), "digest": feedback.get("digest"),
                       "asked_by": feedback.get("asked_by")})
    return events


def latest_answers(db: HostDB) -> dict[str, dict]:
    """The answer or fallback that stands per item (the newest)."""
    return {event["item"]: event for event in answer_events(db)}


def fallback_observation(entry: dict, asker: dict | None, now_text: str) -> Observation:
    """The feedback observation of a frame's fallback, once its ``decide_by`` passed unanswered."""
    frame = entry["decision"]
    fallback = frame["fallback"]
    feedback: dict = {"target": entry["id"], "action": FALLBACK_MEANING, "meaning": FALLBACK_MEANING, "via": "host",
                      "option": fallback.get("option"), "digest": frame["digest"], "summary": fallback["summary"],
                      "decide_by": frame["decide_by"]}
    if asker is not None:
        feedback["asked_by"] = asker
    return Observation(id=f"{FEEDBACK_SOURCE}:fallback-{entry['id']}-{frame['digest']}", source=FEEDBACK_SOURCE,
                       channel="feedback", sender="fold", at=now_text, observed_at=now_text,
                       title=f"fallback: {entry['id']}",
                       text=f"fallback after {frame['decide_by']}: {fallback['summary']}", feedback=feedback)


def fire_fallbacks(store, db: HostDB, now: datetime, now_text: str) -> int:
    """Record the fallback of every frame whose ``decide_by`` passed with no answer; the number recorded."""
    state = store.state_document(now=now_text).document
    passed = [entry for entry in framed(state["root"]["items"]) if entry["decision"].get("fallback")
              and (due := parse_instant(entry["decision"].get("decide_by") or "")) is not None and due <= now]
    if not passed:
        return 0  # the usual case: no answer needs reading
    standing = latest_answers(db)
    fired = 0
    for entry in passed:
        frame = entry["decision"]
        answer = standing.get(entry["id"])
        if answer is not None and answer["digest"] == frame["digest"]:
            continue  # answered (or fallen back) for this very frame
        fired += db.add_observations([fallback_observation(entry, asked_by(db, entry.get("sources")), now_text)])
    return fired


def next_deadline(store, now: datetime, now_text: str) -> datetime | None:
    """The soonest ``decide_by`` after ``now`` of an active frame with a fallback (the daemon wakes then)."""
    state = store.state_document(now=now_text).document
    dues = [instant(entry["decision"]["decide_by"]) for entry in framed(state["root"]["items"])
            if entry["decision"].get("fallback") and entry["decision"].get("decide_by")]
    later = [due for due in dues if due > now]
    return min(later) if later else None


def question_answers(db: HostDB, state: dict, *, agent: str | None = None, question_id: str | None = None,
                     since: str | None = None, source: str | None = None) -> list[dict]:
    """What became of each question (the latest asked under one id stands), oldest first.

    ``{"question_id", "source", "agent", "item", "status", "option", "note", "at", "digest"}``: ``answered`` /
    ``fell_back`` with the answer that stands; ``open`` while it waits in the inbox or an active item carries
    its frame; ``dropped`` when the editor settled it without a frame to answer (noise, duplicate, the item
    withdrawn or its frame cleared unanswered). ``at``: the answer's time, else the question's.
    """
    standing: dict[tuple, dict] = {}
    for event in answer_events(db):
        key = event.get("asked_by")
        if isinstance(key, dict):
            standing[(key.get("source"), key.get("question_id"))] = event
    citing: dict[str, dict] = {}
    for entry in framed(state["root"]["items"]):
        for ref in cited_ids(entry.get("sources")):
            citing[ref] = entry
    asked: dict[tuple, dict] = {}
    carried: dict[tuple, dict] = {}  # a question asked again under its id: an item citing any of its asks
    for row in db.questions():
        observation = row["observation"]
        key = question_key(observation)
        if key is not None:
            asked[(key["source"], key["question_id"])] = row
            if observation.id in citing:
                carried[(key["source"], key["question_id"])] = citing[observation.id]
    listed = []
    for (origin, qid), row in asked.items():
        observation = row["observation"]
        if (source is not None and origin != source) or (question_id is not None and qid != question_id) \
                or (agent is not None and observation.sender != agent):
            continue
        entry = {"question_id": qid, "source": origin, "agent": observation.sender, "item": None, "status": "open",
                 "option": None, "note": None, "at": observation.at or observation.observed_at, "digest": None}
        answer = standing.get((origin, qid))
        item = carried.get((origin, qid))
        if answer is not None:
            entry.update(item=answer["item"], status="answered" if answer["meaning"] == "decide" else "fell_back",
                         option=answer["option"], note=answer["note"], at=answer["at"], digest=answer["digest"])
        elif item is not None:
            entry.update(item=item["id"], digest=item["decision"]["digest"])
        elif row["status"] not in ("pending", "deferred"):
            related = row["related"] or []
            entry.update(status="dropped", item=related[0] if related else None)
        if since is not None and instant(entry["at"]) < instant(since):
            continue
        listed.append(entry)
    return listed
