"""The baseline planner's draft: what it read from its input and what it plans so far.

``Draft`` is the base of the planner's parts (``attention.Attention`` for
feedback, reminders, annotations and time; ``output.Output`` for bundles and
declarations; ``editor`` for mail): it holds the input as read — the user,
the state (``plan.Known``), the events, the pending annotations and what the
receipts of earlier attempts said — and the plan being made: one ``Change``
per item touched and one disposition per event. Its methods are the ones
every part uses: find the item an event may touch (following merges,
restoring withdrawn ones), open its change, cite the event in it, dispose of
the event.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from fold_core.timefmt import parse_instant
from fold_agents.baseline.mail import own_words
from fold_agents.baseline.plan import Change, Known
from fold_agents.baseline.rules import line, quote
from fold_agents.baseline.words import Words

__all__ = ["Draft", "clean_sources", "merge_sources"]

_MAX_SOURCES = 32


class Draft:
    """The input as read and the plan so far; see the module's docstring."""

    def __init__(self, document: Mapping[str, Any], words: Words, receipts: Iterable[Any]) -> None:
        receipts = list(receipts)
        self.words = words
        self.now = str(document.get("now") or "")
        self.moment = parse_instant(self.now)
        user = document.get("user")
        self.user: Mapping[str, Any] = user if isinstance(user, Mapping) else {}
        state = document.get("state") or {}
        self.known = Known(state)
        self.events: list[Mapping[str, Any]] = [
            e for e in document.get("events") or () if isinstance(e, Mapping) and "id" in e]
        pending = document.get("pending_annotations")
        pending = state.get("pending_annotations") if pending is None else pending
        self.pending: list[Mapping[str, Any]] = [a for a in pending or () if isinstance(a, Mapping) and "id" in a]
        self.annotations: list[str] = []  # acknowledged by this batch
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
                    self.pending = [a for a in self.pending if a["id"] != error.get("annotation")]
        self.changes: dict[str, Change] = {}
        # item -> the frame an answer in this window cleared: a later answer to it in the same window (a change
        # of mind before the cycle ran) still finds it, and the latest answer stands
        self.settled: dict[str, Mapping[str, Any]] = {}
        self.dispositions: dict[str, dict] = {}
        signal = document.get("signal")
        coverage = signal.get("coverage") if isinstance(signal, Mapping) else None
        # Sources whose polls failed in the window: their silence says nothing about "still as before".
        self.failing: list[str] = [str(c.get("source") or c.get("channel")) for c in coverage or ()
                                   if isinstance(c, Mapping) and str(c.get("status") or "ok") != "ok"]

    def dispose(self, event_id: str, disposition: str, why: str, related: list[str]) -> None:
        self.dispositions[event_id] = {"event": event_id, "disposition": disposition, "why": why,
                                       "related": related}

    # -- targets --------------------------------------------------------------------

    def resolve(self, item_id: Any, *, restore: bool) -> tuple[str, str] | None:
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

    def change(self, item_id: str, mode: str) -> Change:
        if item_id in self.changes:
            return self.changes[item_id]
        if mode == "patch":
            view = self.known.active[item_id]
            change = Change(item_id, "patch", self.known.parent[item_id], view["weight"], view["kind"],
                            base_weight=view["weight"],
                            share_override=view["share"] if view.get("share_override") else None,
                            due_at=view.get("due_at"), base_sources=clean_sources(view.get("sources")),
                            updated_at=view.get("updated_at"))
        elif mode == "restore":
            parent = (self.known.not_active.get(item_id) or {}).get("parent")
            change = Change(item_id, "restore", parent, None, None)
        else:
            change = Change(item_id, "new", None, None, None)
        self.changes[item_id] = change
        return change

    def cite(self, change: Change, event: Mapping[str, Any], with_quote: bool = True) -> None:
        change.events.append(event["id"])
        if change.mode == "restore":
            return  # sources of a withdrawn item are not visible: giving a list would replace them
        source = {"channel": line(event.get("channel"), 64) or "unknown", "ref": f"event:{event['id']}"}
        text = quote(own_words(str(event.get("text") or "")) or event.get("title")) if with_quote else None
        if text:
            source["quote"] = text
        at = event.get("at")
        if isinstance(at, str) and parse_instant(at) is not None:
            source["observed_at"] = at
        change.new_sources.append(source)
        url = event.get("url")
        if isinstance(url, str) and 0 < len(url) <= 512 and url == line(url, 512) and " " not in url:
            change.new_sources.append({"channel": source["channel"], "ref": url})


def clean_sources(sources: Any) -> list[dict]:
    """An item view's sources as declaration sources (null optional keys left out)."""
    kept = []
    for source in sources or ():
        if isinstance(source, Mapping) and source.get("channel") and source.get("ref"):
            kept.append({k: source[k] for k in ("channel", "ref", "quote", "observed_at") if source.get(k) is not None})
    return kept


def merge_sources(old: list[dict], new: list[dict]) -> list[dict]:
    """Old then new, duplicates by (channel, ref) dropped; the oldest go first beyond 32."""
    seen: dict[tuple[str, str], dict] = {}
    for source in old + new:
        seen.setdefault((source["channel"], source["ref"]), source)
    merged = list(seen.values())
    return merged[-_MAX_SOURCES:]


def _errors(receipt: Any) -> list[Mapping[str, Any]]:
    errors = receipt.get("errors") if isinstance(receipt, Mapping) else None
    return [e for e in errors or () if isinstance(e, Mapping)]
