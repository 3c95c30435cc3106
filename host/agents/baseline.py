"""The ``baseline`` editor: deterministic rules, no LLM (contract §9; the default editor).

For the same input (and the same earlier receipts) it always answers the same
object. What it does:

* one item per new thread (id from the source and the thread key, see
  ``baseline_rules.thread_item_id``); a later message of the thread patches
  that item (weight only ever raised by a message), a withdrawn thread item is
  restored under its old id, a merged one is followed to its successor;
* weight and kind from the observation's own words (``baseline_rules.classify``);
  promotions are ``noise``; an event already among the item's sources is a
  ``duplicate``;
* feedback: ``ack`` lowers the target one step (not below low), ``snooze``
  lowers it to low, ``decide`` / ``input`` / ``act`` write the user's words
  into the summary and turn needs-you into in-progress; a reminder raises its
  target to at least high (restoring it if withdrawn); feedback on an item that
  is not in the state is ``deferred``;
* every layer it touches fits its budget (``baseline_plan.fit_budget``): the
  lowest-ranked untouched items are withdrawn with a reason;
* every pending annotation is acknowledged; a review without events is an
  empty batch (``checked``, or ``acknowledge`` with pending annotations);
* on a receipt: ``item_exists`` (an id older than the not-active window)
  becomes a restore, ``item_merged`` follows ``merged_into``; any other error,
  or the same error again, gives the safe minimal batch (no declarations,
  every event deferred, pending annotations acknowledged).

Every event gets exactly one disposition, and every event cited by a source
``event:<id>`` is ``used`` (§9).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from fold_core.plugin_api import AgentBackend, AgentRequest, Reply
from fold_host.agents.baseline_plan import Change, Known, fit_budget
from fold_host.agents.baseline_rules import (Words, classify, heavier, lighter_by_one, line, quote, summary_line,
                                             thread_item_id, title_line)
from fold_host.agents.conversation import Clock, skill_language

__all__ = ["BaselineBackend", "propose_baseline"]

_MAX_SOURCES = 32


class BaselineBackend(AgentBackend):
    """Deterministic rules; no model, no network."""

    type_name = "baseline"
    uses_llm = False

    def describe(self) -> str:
        return "baseline (deterministic rules, no LLM)"

    def propose(self, request: AgentRequest) -> Reply:
        clock = Clock()
        output = propose_baseline(request.input, skill_language(request.skill),
                                  [c.receipt for c in request.corrections])
        return Reply(output=output, raw=json.dumps(output, ensure_ascii=False), latency_ms=clock.ms,
                     model="baseline")


def propose_baseline(document: Mapping[str, Any], lang: str = "zh", receipts: list | tuple = ()) -> dict:
    """The baseline's §9 output for one input document and the receipts of its earlier attempts."""
    return _Planner(document, Words(lang), receipts).answer()


class _Planner:
    def __init__(self, document: Mapping[str, Any], words: Words, receipts) -> None:
        self.words = words
        self.now = str(document.get("now") or "")
        state = document.get("state") or {}
        self.known = Known(state)
        self.events = [e for e in document.get("events") or () if isinstance(e, Mapping) and "id" in e]
        pending = document.get("pending_annotations")
        pending = state.get("pending_annotations") if pending is None else pending
        self.annotations = [a["id"] for a in pending or () if isinstance(a, Mapping) and "id" in a]
        self.exists: set[str] = set()  # ids the kernel says exist beyond the visible not-active window
        self.merged: dict[str, str] = {}  # id -> merged_into, from item_merged errors
        self.refused: list[str] = []  # codes of the last receipt the baseline cannot fix by itself
        for number, receipt in enumerate(receipts, 1):
            for error in _errors(receipt) or [{"code": "unknown"}]:
                code, item = str(error.get("code")), error.get("item")
                if code == "item_exists" and item and item not in self.exists:
                    self.exists.add(item)
                elif code == "item_merged" and item and error.get("merged_into") and item not in self.merged:
                    self.merged[item] = error["merged_into"]
                elif number == len(receipts):  # unfixable, or the same error again: give up on the rules
                    self.refused.append(code)
                if code == "annotation_not_found":
                    self.annotations = [a for a in self.annotations if a != error.get("annotation")]
        self.changes: dict[str, Change] = {}
        self.dispositions: dict[str, dict] = {}

    # -- the answer -----------------------------------------------------------------

    def answer(self) -> dict:
        if self.refused:
            return self._minimal(sorted(set(self.refused)))
        for event in self.events:
            if event["id"] in self.dispositions:
                continue  # a repeated event id: the host reports it; keep one disposition
            if isinstance(event.get("reminder"), Mapping):
                self._reminder(event)
            elif isinstance(event.get("feedback"), Mapping):
                self._feedback(event)
            else:
                self._message(event)
        fit = fit_budget(self.known, self.changes, self.now)
        for item_id in fit.demoted:
            self.changes[item_id].lowered_reason = self.words("demote_budget")
        for item_id in fit.dropped:
            for event_id, disposition in self.dispositions.items():
                if item_id in disposition["related"] and disposition["disposition"] == "used":
                    self._dispose(event_id, "deferred", self.words("budget_deferred"), [])
        declarations = [self._declaration(c) for c in self.changes.values()]
        declarations += [{"id": i, "relation": "withdraw", "reason": self.words("withdraw_budget")}
                         for i in fit.withdrawn]
        dispositions = [self.dispositions[e["id"]] for e in self.events if e["id"] in self.dispositions]
        return {"dispositions": _unique(dispositions),
                "batch": {"declarations": declarations, "acknowledges": list(dict.fromkeys(self.annotations))}}

    def _minimal(self, codes: list[str]) -> dict:
        why = self.words("fallback", codes=", ".join(codes))
        ids = list(dict.fromkeys(e["id"] for e in self.events))
        return {"dispositions": [{"event": i, "disposition": "deferred", "why": why, "related": []} for i in ids],
                "batch": {"declarations": [], "acknowledges": list(dict.fromkeys(self.annotations))}}

    def _dispose(self, event_id: str, disposition: str, why: str, related: list[str]) -> None:
        self.dispositions[event_id] = {"event": event_id, "disposition": disposition, "why": why,
                                       "related": related}

    # -- targets --------------------------------------------------------------------

    def _resolve(self, item_id: Any, *, restore: bool) -> tuple[str, str] | None:
        """(id, "patch" | "restore") for an item the batch may touch, following merges; else None."""
        for _ in range(16):
            if not isinstance(item_id, str):
                return None
            if item_id in self.merged:
                item_id = self.merged[item_id]
                continue
            if item_id in self.known.active:
                return item_id, "patch"
            entry = self.known.not_active.get(item_id)
            if entry is None:
                return (item_id, "restore") if restore and item_id in self.exists else None
            if entry.get("status") == "merged" and entry.get("merged_into"):
                item_id = entry["merged_into"]
                continue
            parent = entry.get("parent")  # a restored child needs an active parent with a summary (§3.5)
            usable = entry.get("status") == "withdrawn" and (
                parent is None or bool((self.known.active.get(parent) or {}).get("summary")))
            return (item_id, "restore") if restore and usable else None
        return None

    def _change(self, item_id: str, mode: str) -> Change:
        if item_id in self.changes:
            return self.changes[item_id]
        if mode == "patch":
            view = self.known.active[item_id]
            change = Change(item_id, "patch", self.known.parent[item_id], view["weight"], view["kind"],
                            base_weight=view["weight"],
                            share_override=view["share"] if view.get("share_override") else None,
                            due_at=view.get("due_at"), base_sources=_clean_sources(view.get("sources")))
        elif mode == "restore":
            parent = (self.known.not_active.get(item_id) or {}).get("parent")
            change = Change(item_id, "restore", parent, None, None)
        else:
            change = Change(item_id, "new", None, None, None)
        self.changes[item_id] = change
        return change

    def _cite(self, change: Change, event: Mapping[str, Any], with_quote: bool = True) -> None:
        change.events.append(event["id"])
        if change.mode == "restore":
            return  # sources of a withdrawn item are not visible: giving a list would replace them
        source = {"channel": line(event.get("channel"), 64) or "unknown", "ref": f"event:{event['id']}"}
        text = quote(event.get("text") or event.get("title")) if with_quote else None
        if text:
            source["quote"] = text
        change.new_sources.append(source)
        url = event.get("url")
        if isinstance(url, str) and 0 < len(url) <= 512 and url == line(url, 512) and " " not in url:
            change.new_sources.append({"channel": source["channel"], "ref": url})

    # -- events -------------------------------------------------------------------------

    def _message(self, event: Mapping[str, Any]) -> None:
        verdict = classify(dict(event))
        rule = self.words.rule(verdict.rule)
        if verdict.noise:
            self._dispose(event["id"], "noise", self.words("noise", rule=rule), [])
            return
        thread_id = thread_item_id(dict(event))
        target = self._resolve(thread_id, restore=True)
        mode = target[1] if target else "new"
        item_id = target[0] if target else thread_id
        ref = f"event:{event['id']}"
        if mode == "patch" and item_id not in self.changes and any(
                s["ref"] == ref for s in _clean_sources(self.known.active[item_id].get("sources"))):
            self._dispose(event["id"], "duplicate", self.words("duplicate"), [item_id])
            return
        current = self.changes[item_id].weight if item_id in self.changes else (
            self.known.active[item_id]["weight"] if mode == "patch" else None)
        weaker = current is not None and heavier(current, verdict.weight) != verdict.weight
        if weaker and mode == "patch" and item_id not in self.changes:
            # It only confirms what the item already says: used, but no rewrite and no refresh.
            self._dispose(event["id"], "used", self.words("used", item=item_id), [item_id])
            return
        change = self._change(item_id, mode)
        if not weaker:
            change.weight = verdict.weight
            if verdict.explicit_kind or change.kind is None:
                change.kind = verdict.kind
            summary = (summary_line(event.get("text"), 60)
                       or (line(event.get("title"), 60) if change.mode != "new" else ""))
            if summary:
                change.summary = summary
            key = {"new": "new", "patch": "update", "restore": "restore"}[change.mode]
            change.reason = self.words(key, rule=rule)
        if change.mode == "new" and change.title is None:
            change.title = (title_line(event.get("title"), 24) or title_line(event.get("text"), 24)
                            or line(event.get("from"), 24) or self.words("untitled"))
        self._cite(change, event)
        self._dispose(event["id"], "used", self.words("used", item=item_id), [item_id])

    def _feedback(self, event: Mapping[str, Any]) -> None:
        feedback = event["feedback"]
        target = self._resolve(feedback.get("target"), restore=False)
        if target is None:
            self._dispose(event["id"], "deferred", self.words("target_gone", item=feedback.get("target")), [])
            return
        item_id = target[0]
        meaning = feedback.get("meaning")
        current = self.changes[item_id] if item_id in self.changes else None
        weight = current.weight if current else self.known.active[item_id]["weight"]
        lowered = {"ack": lighter_by_one(weight, "low"), "snooze": _to_low(weight)}.get(meaning)
        value = line(feedback.get("value"), 60)
        if (meaning in ("ack", "snooze") and lowered == weight) or meaning not in ("ack", "snooze", "decide",
                                                                                    "input", "act"):
            self._dispose(event["id"], "used", self.words("used", item=item_id), [item_id])
            return  # nothing to change: the user already sees it at the lowest useful weight
        change = self._change(item_id, "patch")
        if lowered is not None:
            change.weight = lowered
            until = feedback.get("until")
            change.lowered_reason = (self.words("ack") if meaning == "ack" else
                                     self.words("snooze", until=f" ({until})" if until else ""))
        else:
            if value:
                change.summary = self.words(meaning, limit=60, value=value)
            if change.kind == "needs-you":
                change.kind = "in-progress"
            change.reason = self.words("feedback_reason", meaning=meaning)
        self._cite(change, event, with_quote=False)
        self._dispose(event["id"], "used", self.words("used", item=item_id), [item_id])

    def _reminder(self, event: Mapping[str, Any]) -> None:
        reminder = event["reminder"]
        target = self._resolve(reminder.get("target"), restore=True)
        if target is None:
            self._dispose(event["id"], "deferred", self.words("target_gone", item=reminder.get("target")), [])
            return
        change = self._change(*target)
        change.weight = "high" if change.weight is None else heavier(change.weight, "high")
        change.kind = change.kind or "needs-you"
        change.reason = self.words("reminder")
        self._cite(change, event, with_quote=False)
        self._dispose(event["id"], "used", self.words("used", item=target[0]), [target[0]])

    # -- output -------------------------------------------------------------------------

    def _declaration(self, change: Change) -> dict:
        declaration: dict[str, Any] = {"id": change.id}
        if change.mode == "new":
            declaration["relation"] = "new"
            declaration["title"] = change.title or self.words("untitled")
        else:
            declaration["relation"] = f"supersedes:{change.id}"
        if change.summary:
            declaration["summary"] = change.summary
        declaration["weight"] = change.weight
        declaration["kind"] = change.kind
        lowered = change.base_weight is not None and heavier(change.base_weight, change.weight) != change.weight
        reason = change.lowered_reason if lowered or change.reason is None else change.reason
        if reason:
            declaration["reason"] = reason
        if change.new_sources:
            declaration["sources"] = _merge_sources(change.base_sources, change.new_sources)
        return declaration


def _errors(receipt: Any) -> list[dict]:
    errors = receipt.get("errors") if isinstance(receipt, Mapping) else None
    return [e for e in errors or () if isinstance(e, Mapping)]


def _to_low(weight: str) -> str:
    """Low, or the weight itself when it is already low or trace."""
    return "low" if weight in ("critical", "high", "normal") else weight


def _clean_sources(sources: Any) -> list[dict]:
    """An item view's sources as declaration sources (null optional keys left out)."""
    kept = []
    for source in sources or ():
        if isinstance(source, Mapping) and source.get("channel") and source.get("ref"):
            kept.append({k: source[k] for k in ("channel", "ref", "quote", "observed_at") if source.get(k) is not None})
    return kept


def _merge_sources(old: list[dict], new: list[dict]) -> list[dict]:
    """Old then new, duplicates by (channel, ref) dropped; the oldest go first beyond 32."""
    seen: dict[tuple[str, str], dict] = {}
    for source in old + new:
        seen.setdefault((source["channel"], source["ref"]), source)
    merged = list(seen.values())
    return merged[-_MAX_SOURCES:]


def _unique(dispositions: list[dict]) -> list[dict]:
    seen, kept = set(), []
    for disposition in dispositions:
        if disposition["event"] not in seen:
            seen.add(disposition["event"])
            kept.append(disposition)
    return kept
