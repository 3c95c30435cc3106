"""The content of a report (schema ``fold.report/1``) and the attention figures.

``gather(location, db)`` reads what a report is made of: the store's records,
the user's feedback (host.db), the polls (host.db) and every push instance's
send ledger (its memory). ``build_report(inputs, period, …)`` is a pure
function of those and the period, so the consumer's file and ``foldctl
report`` on demand agree byte for byte. ``attention(inputs, since, until)``
are the figures of docs/consumers.md "Attention figures":

* notifications sent, by kind (the first rule of each) and mode
  (``interrupt`` | ``digest`` | ``held``);
* **false interrupts** — interrupts whose item the user snoozed or
  acknowledged within 24 h without acting on it (``act`` or ``decide``) in
  those 24 h, or whose weight the editor lowered within 24 h;
* **missed escalations** — items the user acted on, decided or annotated
  while no interrupt had gone out for them before;
* decisions answered before ``decide_by`` (or without one), answered
  late, fallen back, open at the end; the median time to answer (hours,
  from the frame's first appearance to the first answer).
"""

from __future__ import annotations

import hashlib
import json
import statistics
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from fold_core.store.locate import open_store
from fold_core.timefmt import instant
from fold_consumers.items import WEIGHTS, fact_diff, facts_of, record_changes, weight_rank
from fold_host.hostdb import HostDB
from fold_host.report.period import Period

__all__ = ["Inputs", "SCHEMA", "attention", "build_report", "content_digest", "gather"]

SCHEMA = "fold.report/1"
DAY = timedelta(hours=24)
ACTED = ("act", "decide")
SHOWN = ("title", "summary", "weight", "kind", "due_at")


@dataclass
class Inputs:
    records: list[dict] = field(default_factory=list)
    feedback: list[dict] = field(default_factory=list)
    ledger: list[dict] = field(default_factory=list)
    polls: list[dict] = field(default_factory=list)


def gather(location: str, db: HostDB) -> Inputs:
    """Everything a report reads, from the store and host.db."""
    records = open_store(location).history(since=0).document["records"]
    ledger: list[dict] = []
    for row in db.consumer_rows():
        push = db.memory(row["name"]).get("push")
        if isinstance(push, Mapping):
            ledger.extend({**entry, "consumer": row["name"]} for entry in push.get("ledger") or ())
    ledger.sort(key=lambda entry: (instant(entry["at"]), entry["consumer"], entry["key"]))
    return Inputs(records=records, feedback=db.recent_feedback(10**9), ledger=ledger, polls=db.poll_rows())


def _in(at: str | None, since: datetime, until: datetime) -> bool:
    return at is not None and since <= instant(at) < until


def _hours(a: str, b: str) -> float:
    return round((instant(b) - instant(a)).total_seconds() / 3600, 2)


def attention(inputs: Inputs, since: datetime, until: datetime, *, detail: bool = False) -> dict:
    """The attention figures of ``[since, until)`` (``detail``: also ``by_kind_mode``, for /metrics)."""
    sent = [entry for entry in inputs.ledger if _in(entry["at"], since, until)]
    by_kind: dict[str, int] = {}
    by_mode: dict[str, int] = {}
    by_kind_mode: dict[tuple[str, str], int] = {}
    for entry in sent:
        kind = (entry.get("rules") or ["?"])[0]
        by_kind[kind] = by_kind.get(kind, 0) + 1
        by_mode[entry["mode"]] = by_mode.get(entry["mode"], 0) + 1
        by_kind_mode[kind, entry["mode"]] = by_kind_mode.get((kind, entry["mode"]), 0) + 1
    lowered = _lowerings(inputs.records)  # (item, at) of every lowered weight
    interrupts = [entry for entry in sent if entry["mode"] == "interrupt" and entry.get("item")]
    false = 0
    for entry in interrupts:
        start, item = instant(entry["at"]), entry["item"]
        window = [f for f in inputs.feedback if f.get("target") == item and start < instant(f["at"]) <= start + DAY]
        shrugged = any(f.get("meaning") in ("ack", "snooze") for f in window) and not any(
            f.get("meaning") in ACTED for f in window)
        demoted = any(target == item and start < instant(at) <= start + DAY for target, at in lowered)
        false += shrugged or demoted
    every_interrupt = [entry for entry in inputs.ledger if entry["mode"] == "interrupt" and entry.get("item")]
    missed = set()
    for item, at in _user_moves(inputs):
        if _in(at, since, until) and not any(entry["item"] == item and instant(entry["at"]) <= instant(at)
                                             for entry in every_interrupt):
            missed.add(item)
    return {"notifications": {"total": len(sent), "by_kind": dict(sorted(by_kind.items())),
                              "by_mode": dict(sorted(by_mode.items()))},
            "false_interrupts": false, "missed_escalations": len(missed),
            "missed_items": sorted(missed), "decisions": _decision_figures(inputs, since, until),
            **({"by_kind_mode": by_kind_mode} if detail else {})}


def _lowerings(records: list[dict]) -> list[tuple[str, str]]:
    weights: dict[str, str | None] = {}
    found = []
    for record in records:
        for change in record_changes(record):
            new = change.image.get("weight")
            if change.op == "updated" and weight_rank(new) < weight_rank(weights.get(change.item)):
                found.append((change.item, record["at"]))
            weights[change.item] = new
    return found


def _user_moves(inputs: Inputs) -> list[tuple[str, str]]:
    """(item, at) of every act, decide or user annotation."""
    moves = [(f["target"], f["at"]) for f in inputs.feedback if f.get("meaning") in ACTED and f.get("target")]
    for record in inputs.records:
        annotation = record.get("annotation") if record.get("type") == "annotation" else None
        if annotation and annotation.get("author") == "user":
            moves.append((annotation["item"], annotation.get("created_at") or record["at"]))
    return moves


def _frames(inputs: Inputs, until: datetime) -> dict[str, dict]:
    """Per item, its frame as of ``until``: ``{frame, since, title, active}`` (frames cleared are kept, closed)."""
    frames: dict[str, dict] = {}
    for record in inputs.records:
        if instant(record["at"]) >= until:
            break
        for change in record_changes(record):
            image, frame = change.image, change.image.get("decision")
            known = frames.get(change.item)
            if frame is not None and (known is None or known["frame"] != frame or not known["open"]):
                frames[change.item] = {"frame": frame, "since": record["at"], "title": image.get("title"),
                                       "open": True}
            elif known is not None:
                known["title"] = image.get("title")
                if frame is None or image.get("status", "active") != "active":
                    known["open"] = False
    return frames


def _decision_figures(inputs: Inputs, since: datetime, until: datetime) -> dict:
    answered, late, fell_back, waits = 0, 0, 0, []
    frames = _frames(inputs, until)
    first_answer: dict[str, str] = {}
    for f in inputs.feedback:
        if f.get("meaning") == "decide" and f.get("target") and instant(f["at"]) < until:
            first_answer.setdefault(f["target"], f["at"])
        if not _in(f.get("at"), since, until):
            continue
        if f.get("meaning") == "fallback":
            fell_back += 1
        if f.get("meaning") == "decide":
            frame = (frames.get(f["target"]) or {}).get("frame") or {}
            if frame.get("decide_by") and instant(f["at"]) > instant(frame["decide_by"]):
                late += 1
            else:
                answered += 1
            known = frames.get(f["target"])
            if known is not None and first_answer.get(f["target"]) == f["at"]:
                waits.append(_hours(known["since"], f["at"]))
    still = sum(1 for item, known in frames.items() if known["open"] and item not in first_answer
                and not any(f.get("meaning") == "fallback" and f.get("target") == item for f in inputs.feedback
                            if instant(f["at"]) < until))
    return {"answered_before_deadline": answered, "answered_late": late, "fell_back": fell_back, "open": still,
            "median_hours_to_answer": statistics.median(waits) if waits else None}


def content_digest(content: Mapping[str, Any]) -> str:
    text = json.dumps(content, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def build_report(inputs: Inputs, period: Period, *, timezone: str, language: str) -> dict:
    """The ``fold.report/1`` document of ``period``."""
    since, until = period.since, period.until
    inside = [record for record in inputs.records if _in(record["at"], since, until)]
    before: dict[str, dict] = {}
    created, done, withdrawn, changes = [], [], [], []
    revision = 0
    for record in inputs.records:
        if instant(record["at"]) >= until:
            break
        revision = record.get("revision", revision) or revision
        now_inside = _in(record["at"], since, until)
        for change in record_changes(record):
            image, old = change.image, before.get(change.item)
            if now_inside:
                entry = {"item": change.item, "title": image.get("title"), "weight": image.get("weight"),
                         "kind": image.get("kind"), "at": record["at"]}
                if change.op == "created":
                    created.append(entry)
                elif change.op in ("withdrawn", "merged"):
                    withdrawn.append({**entry, "op": change.op})
                elif change.op == "updated" and old is not None:
                    if image.get("kind") == "done" and old.get("kind") != "done":
                        done.append(entry)
                    diff = {name: values for name, values in fact_diff(facts_of(old), facts_of(image)).items()
                            if name in SHOWN}
                    if diff and max(weight_rank(image.get("weight")), weight_rank(old.get("weight"))) >= \
                            WEIGHTS.index("high"):
                        changes.append({**entry, "fields": diff})
            before[change.item] = dict(image)
    frames = _frames(inputs, until)
    answers = [f for f in inputs.feedback if f.get("meaning") == "decide" and _in(f.get("at"), since, until)]
    fallbacks = [f for f in inputs.feedback if f.get("meaning") == "fallback" and _in(f.get("at"), since, until)]
    answered_items = {f["target"] for f in inputs.feedback if f.get("meaning") in ("decide", "fallback")
                      and instant(f["at"]) < until}

    def frame_of(item: str) -> dict:
        return (frames.get(item) or {}).get("frame") or {}

    decisions = {
        "answered": [{"item": f["target"], "title": (frames.get(f["target"]) or {}).get("title"),
                      "question": frame_of(f["target"]).get("question"), "option": f.get("option"),
                      "at": f["at"], "via": f.get("via")} for f in answers],
        "fell_back": [{"item": f["target"], "title": (frames.get(f["target"]) or {}).get("title"),
                       "question": frame_of(f["target"]).get("question"), "option": f.get("option"), "at": f["at"]}
                      for f in fallbacks],
        "open": [{"item": item, "title": known["title"], "question": known["frame"].get("question"),
                  "decide_by": known["frame"].get("decide_by"), "since": known["since"],
                  "age_hours": _hours(known["since"], until.isoformat())}
                 for item, known in sorted(frames.items()) if known["open"] and item not in answered_items]}
    sources: dict[str, dict] = {}
    for poll in inputs.polls:
        if not _in(poll["at"], since, until):
            continue
        entry = sources.setdefault(poll["source"], {"source": poll["source"], "polls": 0, "failed": 0,
                                                    "last_status": None, "last_error": None})
        entry["polls"] += 1
        entry["failed"] += poll["status"] != "ok"
        entry["last_status"] = poll["status"]
        if poll["status"] != "ok":
            entry["last_error"] = poll.get("message")
    content = {"decisions": decisions, "items": {"created": created, "done": done, "withdrawn": withdrawn},
               "changes": changes, "sources": [sources[name] for name in sorted(sources)],
               "attention": attention(inputs, since, until)}
    identity = {"period": period.to_json(timezone), "first_event_seq": inside[0]["event_seq"] if inside else None,
                "last_event_seq": inside[-1]["event_seq"] if inside else None, "revision": revision,
                "digest": content_digest(content)}
    return {"schema": SCHEMA, "language": language, "identity": identity, **content}
