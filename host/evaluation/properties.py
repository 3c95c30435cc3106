"""Mechanical checks of one scenario run (contract §15 ``expect``).

``Run`` is what one scenario produced: the state before and after the
agent's call, every declaration the agent wrote (in every attempt: an
overclaim that the kernel happened to reject is still an overclaim), the
dispositions, the outcome as ``foldctl tick`` reports it and the usage.
``check(scenario, run)`` gives one ``Finding`` per expected property, in the
order of the ``expect`` object; nothing here calls an agent or a clock.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from fold_host.evaluation.scenarios import WEIGHTS, Scenario

__all__ = ["Finding", "Run", "active_items", "check", "seen_weights"]

DUE_WORDS: dict[bool | None, str] = {True: " with due_at", False: " without due_at", None: ""}  # Surface.due


@dataclass
class Run:
    outcome: str
    before: Mapping[str, Any]
    after: Mapping[str, Any]
    declarations: list[dict] = field(default_factory=list)  # every attempt's declarations, flattened
    accepted_declarations: list[dict] = field(default_factory=list)  # those of the accepted batch
    dispositions: dict[str, str] = field(default_factory=dict)
    receipt: Mapping[str, Any] | None = None
    attempts: int = 0
    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    seconds: float = 0.0
    error: str | None = None


@dataclass(frozen=True)
class Finding:
    property: str
    passed: bool
    detail: str

    def to_json(self) -> dict:
        return {"property": self.property, "passed": self.passed, "detail": self.detail}


def active_items(document: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    """Every active item of a §8 document, depth first."""
    def walk(layer):
        for item in (layer or {}).get("items", []):
            yield item
            yield from walk(item.get("children"))
    yield from walk(document.get("root"))


def seen_weights(document: Mapping[str, Any]) -> dict[str, str]:
    """Active item id -> the weight it is seen at: the lightest of its own and its active ancestors' (an item
    inside a low parent is read as low, whatever its own weight)."""
    seen: dict[str, str] = {}

    def walk(layer, cap: int):
        for item in (layer or {}).get("items", []):
            rank = min(cap, _rank(item.get("weight")))
            seen[item["id"]] = WEIGHTS[rank] if rank >= 0 else str(item.get("weight"))
            walk(item.get("children"), rank)
    walk(document.get("root"), len(WEIGHTS) - 1)
    return seen


def flatten(declarations: Sequence[Mapping[str, Any]]) -> Iterator[Mapping[str, Any]]:
    """Declarations with their nested children, document order."""
    for declaration in declarations:
        if isinstance(declaration, Mapping):
            yield declaration
            children = declaration.get("children")
            if isinstance(children, list):
                yield from flatten(children)


def _text(item: Mapping[str, Any]) -> str:
    return " ".join(str(item.get(key) or "") for key in ("title", "summary"))


def _rank(weight: str | None) -> int:
    return WEIGHTS.index(weight) if weight in WEIGHTS else -1


def check(scenario: Scenario, run: Run) -> list[Finding]:
    expect = scenario.expect
    findings: list[Finding] = []
    if expect.outcome is not None:
        findings.append(Finding("outcome", run.outcome == expect.outcome,
                                f"expected {expect.outcome}, got {run.outcome}"))
    items = list(active_items(run.after))
    seen = seen_weights(run.after)
    for surface in expect.surface:
        pattern = re.compile(surface.match)
        matching = [i for i in items if pattern.search(_text(i))]
        good = [i for i in matching if _rank(seen[i["id"]] if surface.seen else i.get("weight"))
                >= _rank(surface.min_weight)
                and (surface.kind is None or i.get("kind") == surface.kind)
                and (surface.due is None or bool(i.get("due_at")) == surface.due)]
        shown = ", ".join(f"{i['id']} ({i['weight']}, {i['kind']}" + (f", due {i['due_at']}" if i.get("due_at") else "")
                          + ")" for i in matching) or "no active item matches"
        if surface.seen:
            shown = ", ".join(f"{i['id']} (seen at {seen[i['id']]}, {i['kind']})" for i in matching) or shown
        findings.append(Finding(f"surface /{surface.match}/ ≥ {surface.min_weight}"
                                + (" as seen" if surface.seen else "")
                                + (f" {surface.kind}" if surface.kind else "")
                                + DUE_WORDS[surface.due],
                                bool(good), shown))
    for bound in expect.at_most:
        pattern = re.compile(bound.match)
        above = [i for i in items if pattern.search(_text(i)) and _rank(i.get("weight")) > _rank(bound.max_weight)]
        findings.append(Finding(f"at most {bound.max_weight} /{bound.match}/", not above,
                                "none above" if not above else ", ".join(f"{i['id']} ({i['weight']})" for i in above)))
    for mention in expect.mentions:
        about = [i for i in items if re.search(mention.match, _text(i))]
        stating = [i for i in about if re.search(mention.states, _text(i))]
        findings.append(Finding(f"mentions /{mention.match}/ states /{mention.states}/", bool(stating),
                                "; ".join(f"{i['id']}: {_text(i)}" for i in (stating or about)[:3])
                                or "no active item matches"))
    if expect.not_prefix:
        copied = _copied(scenario, items)
        findings.append(Finding("not_prefix", not copied, "none" if not copied else "; ".join(copied)))
    for frame in expect.frames:
        findings.extend(_frame_findings(frame, items))
    for absent in expect.absent:
        pattern = re.compile(absent.match)
        named = [i["id"] for i in items if pattern.search(_text(i))]
        findings.append(Finding(f"absent /{absent.match}/", not named,
                                "none" if not named else "active: " + ", ".join(named)))
    if expect.forbidden:
        hits = overclaims(scenario, run)
        findings.append(Finding("forbidden " + " / ".join(expect.forbidden), not hits,
                                "none" if not hits else "; ".join(hits)))
    for event, allowed in expect.dispositions.items():
        got = run.dispositions.get(event)
        findings.append(Finding(f"disposition {event} ∈ {'|'.join(allowed)}", got in allowed, f"got {got}"))
    if expect.acknowledge_all:
        before = {a["id"] for a in run.before.get("pending_annotations", [])}
        still = sorted(before & {a["id"] for a in run.after.get("pending_annotations", [])})
        findings.append(Finding("acknowledge_all", not still,
                                "all acknowledged" if not still else "still pending: " + ", ".join(still)))
    for item in expect.restored:
        changes = (run.receipt or {}).get("changes", [])
        restored = any(c.get("item") == item and c.get("op") == "restored" for c in changes)
        active = any(i["id"] == item for i in items)
        findings.append(Finding(f"restored {item}", restored and active,
                                "restored through supersedes" if restored and active else
                                f"{'active' if active else 'not active'}, receipt op: "
                                f"{next((c.get('op') for c in changes if c.get('item') == item), 'none')}"))
    if expect.max_attempts is not None:
        findings.append(Finding(f"attempts ≤ {expect.max_attempts}", run.attempts <= expect.max_attempts,
                                f"{run.attempts} attempts"))
    return findings


_CUT = "…."


def _copied(scenario: Scenario, items: list[Mapping[str, Any]]) -> list[str]:
    """Active items whose summary is the first characters of an observation it cites (``event:<id>``):
    the summary without its cut mark is a prefix of the event's text, or both begin with the same 16 code
    points (whitespace collapsed in both)."""
    texts = {f"event:{e.id}": " ".join(e.text.split()) for e in scenario.events}
    found = []
    for item in items:
        summary = " ".join(str(item.get("summary") or "").split()).rstrip(_CUT)
        if not summary:
            continue
        for source in item.get("sources") or ():
            text = texts.get(str((source or {}).get("ref")))
            if text and (text.startswith(summary) or (len(summary) >= 16 and text[:16] == summary[:16])):
                found.append(f"{item['id']}: {summary!r}")
                break
    return found


def overclaims(scenario: Scenario, run: Run) -> list[str]:
    """``forbidden`` matches in any title, summary or reason the agent declared."""
    hits = []
    for declaration in flatten(run.declarations):
        for key in ("title", "summary", "reason"):
            value = declaration.get(key)
            if not isinstance(value, str):
                continue
            for word in scenario.expect.forbidden:
                if re.search(word, value):
                    hits.append(f"{declaration.get('id')}.{key}: {word!r} in {value!r}")
    return hits


def _frame_findings(expect, items: list[Mapping[str, Any]]) -> list[Finding]:
    """One finding per property asked of the frame of the item matching ``expect.match`` (§15 ``frames``)."""
    pattern = re.compile(expect.match)
    matching = [i for i in items if pattern.search(_text(i))]
    name = f"frame /{expect.match}/"
    if not matching:
        return [Finding(f"{name} item", False, "no active item matches")]
    framed = [i for i in matching if i.get("decision")]
    if expect.cleared:
        return [Finding(f"{name} cleared", not framed, "no frame" if not framed else
                        "; ".join(f"{i['id']}: {i['decision'].get('question')}" for i in framed))]
    if not framed:
        return [Finding(f"{name} present", False, ", ".join(f"{i['id']} ({i['kind']}): no frame" for i in matching))]
    frame = framed[0]["decision"]
    findings = []
    if expect.question is not None:
        findings.append(Finding(f"{name} question kept", bool(re.search(expect.question, frame["question"])),
                                frame["question"]))
    if expect.options is not None:
        ids = [o["id"] for o in frame["options"]]
        findings.append(Finding(f"{name} options kept", sorted(ids) == sorted(expect.options), ", ".join(ids)))
    if expect.fallback is not None:
        fallback = frame.get("fallback")
        if expect.fallback is False:
            findings.append(Finding(f"{name} no fallback invented", fallback is None,
                                    "none" if fallback is None else str(fallback.get("summary"))))
        else:
            summary = str((fallback or {}).get("summary") or "")
            findings.append(Finding(f"{name} fallback from the source", bool(fallback) and bool(
                re.search(str(expect.fallback), summary)), summary or "no fallback"))
    if expect.evidence is not None:
        findings.append(Finding(f"{name} evidence ∈ {'|'.join(expect.evidence)}", frame["evidence"] in expect.evidence,
                                frame["evidence"] + (f" ({frame['gap']})" if frame.get("gap") else "")))
    return findings
