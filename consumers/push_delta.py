"""The material delta of an item for push (contract §12; docs/consumers.md "push").

A notification is worth sending when a *material* fact changed, compared
with what the user was last told or acknowledged (``known``), not only with
the record before:

* ``created`` — a new eligible item (a merge result too);
* ``restored`` — back from withdrawn, with facts other than those notified before;
* ``kind`` — the kind became ``needs-you``;
* ``raised`` — the weight went above the one last notified;
* ``due`` — another ``due_at``;
* ``decision`` — a new frame, or another question, options or ``decide_by``;
* ``facts`` — another title or summary of an item at ``facts_from`` or above.

Silent: reason-only, sources-only or share-only patches, a lowered weight,
withdraws, acknowledgements, ``checked`` records — and any fact equal to
the one already notified (``filter_known``). ``material_facts`` is the small
dict kept per item; ``changes`` names each changed fact before → after.
Pure functions over JSON-shaped data.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fold_core.kernel.decision import frame_digest
from fold_core.timefmt import instant_key

from fold_consumers.items import weight_rank

__all__ = ["ITEM_RULES", "changes", "filter_known", "material_facts", "rules_of", "unchanged"]

ITEM_RULES = ("created", "restored", "kind", "raised", "due", "decision", "facts")


def _frame(decision: Any) -> dict | None:
    """The decision-relevant part of a stored frame (question, options, recommendation, decide_by, digest)."""
    if not isinstance(decision, Mapping):
        return None
    options = [{"id": option.get("id"), "label": option.get("label"),
                **({"consequence": option["consequence"]} if option.get("consequence") else {})}
               for option in decision.get("options") or () if isinstance(option, Mapping)]
    frame = {"question": decision.get("question"), "options": options,
             "recommended": decision.get("recommended"), "basis": decision.get("basis"),
             "decide_by": decision.get("decide_by"), "digest": decision.get("digest")}
    if frame["digest"] is None:
        frame["digest"] = frame_digest({key: value for key, value in decision.items() if key != "digest"})
    fallback = decision.get("fallback")
    if isinstance(fallback, Mapping):
        frame["fallback"] = fallback.get("summary")
    return frame


def material_facts(image: Mapping[str, Any]) -> dict:
    """The facts push compares, from a post-image or an ItemView."""
    return {"title": image.get("title"), "summary": image.get("summary"), "weight": image.get("weight"),
            "kind": image.get("kind"), "due_at": image.get("due_at"), "decision": _frame(image.get("decision"))}


def _same_instant(a: Any, b: Any) -> bool:
    if a is None or b is None:
        return a is b
    return bool(instant_key(a) == instant_key(b))


def _frame_key(frame: Mapping[str, Any] | None) -> Any:
    if frame is None:
        return None
    options = [(option.get("id"), option.get("label")) for option in frame.get("options") or ()]
    decide_by = instant_key(frame["decide_by"]) if frame.get("decide_by") else None
    return [frame.get("question"), options, decide_by]


def rules_of(op: str, before: Mapping[str, Any] | None, after: Mapping[str, Any], facts_from: str) -> list[str]:
    """Which rules this change of an item meets, before looking at what was notified."""
    if op in ("created", "restored"):
        return [op]
    if op != "updated" or before is None:
        return []
    rules = []
    if after.get("kind") == "needs-you" and before.get("kind") != "needs-you":
        rules.append("kind")
    if weight_rank(after.get("weight")) > weight_rank(before.get("weight")):
        rules.append("raised")
    if not _same_instant(before.get("due_at"), after.get("due_at")):
        rules.append("due")
    if after.get("decision") is not None and _frame_key(before.get("decision")) != _frame_key(after.get("decision")):
        rules.append("decision")
    if weight_rank(after.get("weight")) >= weight_rank(facts_from) and (
            before.get("title") != after.get("title") or before.get("summary") != after.get("summary")):
        rules.append("facts")
    return rules


def filter_known(rules: list[str], known: Mapping[str, Any] | None, after: Mapping[str, Any]) -> list[str]:
    """The rules whose facts differ from those already notified or acknowledged (``known``)."""
    if known is None:
        return list(rules)
    kept = []
    for rule in rules:
        if rule in ("created", "restored"):
            same = (known.get("kind"), known.get("weight"), _frame_key(known.get("decision"))) == (
                after.get("kind"), after.get("weight"), _frame_key(after.get("decision"))) and _same_instant(
                known.get("due_at"), after.get("due_at")) and (known.get("title"), known.get("summary")) == (
                after.get("title"), after.get("summary"))
        elif rule == "kind":
            same = known.get("kind") == "needs-you"
        elif rule == "raised":
            same = weight_rank(after.get("weight")) <= weight_rank(known.get("weight"))
        elif rule == "due":
            same = _same_instant(known.get("due_at"), after.get("due_at"))
        elif rule == "decision":
            same = _frame_key(known.get("decision")) == _frame_key(after.get("decision"))
        elif rule == "facts":
            same = (known.get("title"), known.get("summary")) == (after.get("title"), after.get("summary"))
        else:
            same = False
        if not same:
            kept.append(rule)
    return kept


def changes(rules: list[str], base: Mapping[str, Any] | None, after: Mapping[str, Any]) -> list[dict]:
    """``[{field, before, after}]`` for the facts that changed (``base``: what the user knew, or the record before)."""
    if base is None:
        return []
    found = []

    def add(field: str, old: Any, new: Any) -> None:
        if old != new:
            found.append({"field": field, "before": old, "after": new})

    if "kind" in rules or "restored" in rules:
        add("kind", base.get("kind"), after.get("kind"))
    if "raised" in rules or "restored" in rules:
        add("weight", base.get("weight"), after.get("weight"))
    if ("due" in rules or "restored" in rules) and not _same_instant(base.get("due_at"), after.get("due_at")):
        found.append({"field": "due_at", "before": base.get("due_at"), "after": after.get("due_at")})
    if "decision" in rules:
        old, new = base.get("decision") or {}, after.get("decision") or {}
        add("question", old.get("question"), new.get("question"))
        old_options = [option.get("label") for option in old.get("options") or ()]
        new_options = [option.get("label") for option in new.get("options") or ()]
        add("options", old_options or None, new_options)
        if not _same_instant(old.get("decide_by"), new.get("decide_by")):
            found.append({"field": "decide_by", "before": old.get("decide_by"), "after": new.get("decide_by")})
    if "facts" in rules:
        add("title", base.get("title"), after.get("title"))
        add("summary", base.get("summary"), after.get("summary"))
    return found


def unchanged(changed: list[dict], after: Mapping[str, Any]) -> dict:
    """The decision-relevant facts that did not change: weight, kind, due, decision open."""
    fields = {entry["field"] for entry in changed}
    kept: dict[str, Any] = {}
    if "weight" not in fields:
        kept["weight"] = after.get("weight")
    if "kind" not in fields:
        kept["kind"] = after.get("kind")
    if "due_at" not in fields and after.get("due_at"):
        kept["due_at"] = after.get("due_at")
    if not fields & {"question", "options", "decide_by"} and after.get("decision") is not None:
        kept["decision"] = "open"
    return kept
