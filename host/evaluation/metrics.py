"""The evaluation's comparative metrics (contract §15; the controls of the architecture's design).

Each compares runs, never one run alone:

* **weight stability** over ``paraphrase`` pairs (the same facts in other
  words): items of the two runs aligned by the input events their sources cite
  (``event:<id>``); same weight / aligned; unaligned items are listed;
  **kind stability** on the same aligned pairs: same kind / aligned;
* **repeat stability** (``--repeat N``): every later run of a scenario
  against its first run, aligned the same way;
* **context sensitivity** over ``context`` pairs (a relevant fact changed):
  pairs whose weight moved in the expected direction / all;
* **missing context** over ``missing-context`` pairs (the paired scenario
  lacks a piece of context this one has): pairs whose weight compares as
  ``expect_change`` says (``up`` / ``down`` / ``same``) / all;
* **old version** over ``old-version`` pairs (the paired scenario brings an
  older version of a fact the state already holds): pairs whose listed items
  keep the same weight and kind in both runs / all;
* **share override rate**, pooled (declarations with an explicit non-null
  ``share`` / assignable declarations, over all accepted batches) and per
  batch (the formal model's r_override,k; "not applicable" for a batch without
  assignable declarations), with the mean of the applicable ones.

The weight of a run, for context and missing-context pairs, is the highest
weight of the pair's ``items`` when it lists some, else of an active item
citing one of the run's input events (none = below trace). Pairs are formed
within one round of ``--repeat``: run k of a scenario with run k of its pair.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from fold_host.evaluation.properties import active_items, flatten
from fold_host.evaluation.scenarios import WEIGHTS

__all__ = ["comparisons", "ratio", "share_overrides"]


def ratio(numerator: int, denominator: int) -> dict:
    return {"numerator": numerator, "denominator": denominator,
            "value": round(numerator / denominator, 4) if denominator else None}


def _cited(item: Mapping[str, Any], events: set[str]) -> set[str]:
    refs = {s.get("ref", "") for s in item.get("sources") or []}
    return {r.removeprefix("event:") for r in refs if r.startswith("event:")} & events


def aligned_weights(result) -> dict[str, str]:
    """event id -> weight of the active item citing it (the highest when several do)."""
    return {event: weight for event, (weight, _) in aligned(result).items()}


def aligned(result) -> dict[str, tuple[str, str]]:
    """event id -> (weight, kind) of the active item citing it (the heaviest when several do)."""
    events = {e.id for e in result.scenario.events}
    found: dict[str, tuple[str, str]] = {}
    for item in active_items(result.run.after):
        for event in _cited(item, events):
            if event not in found or WEIGHTS.index(item["weight"]) > WEIGHTS.index(found[event][0]):
                found[event] = (item["weight"], item["kind"])
    return found


def _run_weight(result, items: Sequence[str]) -> int:
    if items:
        weights = [i["weight"] for i in active_items(result.run.after) if i["id"] in items]
    else:
        weights = list(aligned_weights(result).values())
    return max((WEIGHTS.index(w) for w in weights), default=-1)


def _state_of(result, items: Sequence[str]) -> dict[str, tuple[str, str] | None]:
    found = {i["id"]: (i["weight"], i["kind"]) for i in active_items(result.run.after) if i["id"] in items}
    return {item: found.get(item) for item in items}


def _align(first, second, names: list[str], same: list, unaligned: list) -> None:
    mine, theirs = aligned(first), aligned(second)
    for event in sorted(set(mine) | set(theirs)):
        if event in mine and event in theirs:
            same.append({"pair": names, "event": event, "weights": [mine[event][0], theirs[event][0]],
                         "same": mine[event][0] == theirs[event][0], "kinds": [mine[event][1], theirs[event][1]],
                         "same_kind": mine[event][1] == theirs[event][1]})
        else:
            unaligned.append({"pair": names, "event": event, "only_in": names[0] if event in mine else names[1]})


def comparisons(results: Sequence) -> dict:
    """Every pair and repeat comparison of a run of the evaluation (see the module text)."""
    runs = {(r.scenario.name, r.repeat): r for r in results}
    found: dict[str, list] = {key: [] for key in ("stability", "unaligned", "context", "missing", "old",
                                                  "repeat", "repeat_unaligned")}
    for r in results:
        pair = r.scenario.pair
        other = runs.get((pair.with_, r.repeat)) if pair is not None else None
        if r.repeat > 1 and (r.scenario.name, 1) in runs:
            first = runs[(r.scenario.name, 1)]
            _align(first, r, [f"{r.scenario.name} #1", f"{r.scenario.name} #{r.repeat}"], found["repeat"],
                   found["repeat_unaligned"])
        if other is None:
            continue
        names = [r.scenario.name, other.scenario.name] + ([f"#{r.repeat}"] if r.repeat > 1 else [])
        if pair.kind == "paraphrase":
            _align(r, other, names[:2], found["stability"], found["unaligned"])
        elif pair.kind == "old-version":
            mine, theirs = _state_of(r, pair.items), _state_of(other, pair.items)
            found["old"].append({"pair": names, "items": {i: [mine[i], theirs[i]] for i in pair.items},
                                 "kept": mine == theirs})
        else:
            before, after = _run_weight(r, pair.items), _run_weight(other, pair.items)
            moved = {"up": after > before, "down": after < before, "same": after == before}[pair.expect_change]
            found["context" if pair.kind == "context" else "missing"].append({
                "pair": names, "expect_change": pair.expect_change,
                "weights": [WEIGHTS[before] if before >= 0 else None, WEIGHTS[after] if after >= 0 else None],
                "moved": moved})
    return found


def share_overrides(results: Sequence) -> tuple[dict, list[dict], float | None]:
    """(pooled rate, one rate per accepted batch, the mean of the applicable per-batch rates)."""
    pooled_assignable = pooled_overridden = 0
    per_batch = []
    for r in results:
        if r.run.outcome == "failed":
            continue
        assignable = overridden = 0
        for declaration in flatten(r.run.accepted_declarations):
            if declaration.get("relation") == "withdraw":
                continue
            assignable += 1
            overridden += declaration.get("share") is not None
        pooled_assignable += assignable
        pooled_overridden += overridden
        per_batch.append({"scenario": r.scenario.name, "repeat": r.repeat, **ratio(overridden, assignable)})
    applicable = [b["value"] for b in per_batch if b["value"] is not None]
    mean = round(sum(applicable) / len(applicable), 4) if applicable else None
    return ratio(pooled_overridden, pooled_assignable), per_batch, mean
