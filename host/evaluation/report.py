"""Metrics and reports of the skill evaluation (contract §15).

Each metric says how it is computed, in the report itself:

* properties passed / total, per scenario and overall;
* **weight stability** over paraphrase pairs: items of the two runs are
  aligned by the input events their sources cite (``event:<id>``); aligned
  pairs with the same weight / all aligned pairs; unaligned items are listed,
  never dropped;
* **context sensitivity**: context pairs whose weight moved in the expected
  direction / all context pairs (the weight of a run is the highest weight of
  an active item citing one of its input events; none = below trace);
* **share override rate**: declarations with an explicit non-null ``share`` /
  assignable (non-withdraw) declarations, over all accepted batches;
* **overclaims**: ``forbidden`` matches;
* per scenario: attempts, agent calls, input and output tokens, wall time.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fold_host.evaluation.properties import Finding, Run, active_items, flatten, overclaims
from fold_host.evaluation.scenarios import WEIGHTS, Scenario

__all__ = ["Result", "build_report", "write_reports"]


@dataclass
class Result:
    scenario: Scenario
    run: Run
    findings: list[Finding]
    repeat: int = 1

    @property
    def passed(self) -> int:
        return sum(f.passed for f in self.findings)


def _cited(item: Mapping[str, Any], events: set[str]) -> set[str]:
    refs = {s.get("ref", "") for s in item.get("sources") or []}
    return {r.removeprefix("event:") for r in refs if r.startswith("event:")} & events


def _aligned_weights(result: Result) -> dict[str, str]:
    """event id -> weight of the active item citing it (the highest when several do)."""
    events = {e.id for e in result.scenario.events}
    weights: dict[str, str] = {}
    for item in active_items(result.run.after):
        for event in _cited(item, events):
            if event not in weights or WEIGHTS.index(item["weight"]) > WEIGHTS.index(weights[event]):
                weights[event] = item["weight"]
    return weights


def _run_weight(result: Result) -> int:
    weights = _aligned_weights(result).values()
    return max((WEIGHTS.index(w) for w in weights), default=-1)


def build_report(results: Sequence[Result], *, backend: str) -> dict:
    by_name = {r.scenario.name: r for r in results if r.repeat == 1}
    scenarios = []
    for r in results:
        scenarios.append({
            "name": r.scenario.name, "repeat": r.repeat, "about": r.scenario.about,
            "outcome": r.run.outcome, "passed": r.passed, "total": len(r.findings),
            "findings": [f.to_json() for f in r.findings], "attempts": r.run.attempts, "calls": r.run.calls,
            "input_tokens": r.run.input_tokens, "output_tokens": r.run.output_tokens,
            "seconds": round(r.run.seconds, 3), "error": r.run.error,
            "dispositions": r.run.dispositions,
        })
    stability_pairs, unaligned, sensitivity = [], [], []
    for r in results:
        pair = r.scenario.pair
        if pair is None or r.repeat != 1 or pair.with_ not in by_name:
            continue
        other = by_name[pair.with_]
        if pair.kind == "paraphrase":
            mine, theirs = _aligned_weights(r), _aligned_weights(other)
            # Paraphrase pairs cite their own event ids; scenarios of a pair keep the same ids.
            for event in sorted(set(mine) | set(theirs)):
                if event in mine and event in theirs:
                    stability_pairs.append({"pair": [r.scenario.name, other.scenario.name], "event": event,
                                            "weights": [mine[event], theirs[event]],
                                            "same": mine[event] == theirs[event]})
                else:
                    unaligned.append({"pair": [r.scenario.name, other.scenario.name], "event": event,
                                      "only_in": r.scenario.name if event in mine else other.scenario.name})
        else:
            before, after = _run_weight(r), _run_weight(other)
            moved = after > before if pair.expect_change == "up" else after < before
            sensitivity.append({"pair": [r.scenario.name, other.scenario.name], "expect_change": pair.expect_change,
                                "weights": [WEIGHTS[before] if before >= 0 else None,
                                            WEIGHTS[after] if after >= 0 else None], "moved": moved})
    assignable = overridden = 0
    for r in results:
        for declaration in flatten(r.run.accepted_declarations):
            if declaration.get("relation") == "withdraw":
                continue
            assignable += 1
            overridden += declaration.get("share") is not None
    passed = sum(r.passed for r in results)
    total = sum(len(r.findings) for r in results)
    return {
        "schema": "fold.eval/1",
        "backend": backend,
        "overall": {"passed": passed, "total": total, "scenarios": len(results),
                    "scenarios_all_passed": sum(r.passed == len(r.findings) for r in results)},
        "metrics": {
            "weight_stability": _ratio(sum(p["same"] for p in stability_pairs), len(stability_pairs)),
            "weight_stability_pairs": stability_pairs,
            "unaligned": unaligned,
            "context_sensitivity": _ratio(sum(p["moved"] for p in sensitivity), len(sensitivity)),
            "context_pairs": sensitivity,
            "share_override_rate": _ratio(overridden, assignable),
            "overclaims": sum(len(overclaims(r.scenario, r.run)) for r in results),
            "attempts": sum(r.run.attempts for r in results),
            "agent_calls": sum(r.run.calls for r in results),
            "input_tokens": sum(r.run.input_tokens for r in results),
            "output_tokens": sum(r.run.output_tokens for r in results),
            "seconds": round(sum(r.run.seconds for r in results), 3),
        },
        "scenarios": scenarios,
    }


def _ratio(numerator: int, denominator: int) -> dict:
    return {"numerator": numerator, "denominator": denominator,
            "value": round(numerator / denominator, 4) if denominator else None}


def _shown(ratio: Mapping[str, Any]) -> str:
    if ratio["value"] is None:
        return "n/a (0 / 0)"
    return f"{ratio['value']:.2f} ({ratio['numerator']} / {ratio['denominator']})"


def render_markdown(report: Mapping[str, Any]) -> str:
    m, o = report["metrics"], report["overall"]
    lines = [
        f"# Skill evaluation — backend `{report['backend']}`", "",
        f"Properties passed: **{o['passed']} / {o['total']}**; scenarios with every property passed: "
        f"{o['scenarios_all_passed']} / {o['scenarios']}.", "",
        "## Metrics", "",
        "| metric | value | how it is computed |", "|---|---|---|",
        f"| weight stability | {_shown(m['weight_stability'])} | paraphrase pairs: items aligned by the input event "
        "their sources cite; same weight / aligned |",
        f"| context sensitivity | {_shown(m['context_sensitivity'])} | context pairs whose highest weight citing an "
        "input event moved in the expected direction / all |",
        f"| share override rate | {_shown(m['share_override_rate'])} | accepted declarations with an explicit share / "
        "non-withdraw declarations |",
        f"| overclaims | {m['overclaims']} | `forbidden` matches in declared titles, summaries and reasons (every attempt) |",
        f"| attempts / agent calls | {m['attempts']} / {m['agent_calls']} | summed over scenarios |",
        f"| tokens in / out | {m['input_tokens']} / {m['output_tokens']} | as the backend reports them |",
        f"| wall time | {m['seconds']} s | summed over scenarios |", "",
    ]
    if m["unaligned"]:
        lines += ["Unaligned items (an input event cited in only one scenario of a paraphrase pair):", ""]
        lines += [f"- `{u['event']}` only in `{u['only_in']}` ({' / '.join(u['pair'])})" for u in m["unaligned"]]
        lines.append("")
    if m["context_pairs"]:
        lines += ["Context pairs:", ""]
        lines += [f"- {' → '.join(p['pair'])}: expected {p['expect_change']}, weights "
                  f"{p['weights'][0]} → {p['weights'][1]}: {'moved' if p['moved'] else 'did not move'}"
                  for p in m["context_pairs"]]
        lines.append("")
    lines += ["## Scenarios", "", "| scenario | outcome | properties | attempts | calls | tokens in/out | s |",
              "|---|---|---|---|---|---|---|"]
    for s in report["scenarios"]:
        name = s["name"] + (f" (#{s['repeat']})" if s["repeat"] > 1 else "")
        lines.append(f"| {name} | {s['outcome']} | {s['passed']} / {s['total']} | {s['attempts']} | {s['calls']} | "
                     f"{s['input_tokens']} / {s['output_tokens']} | {s['seconds']} |")
    lines.append("")
    for s in report["scenarios"]:
        failed = [f for f in s["findings"] if not f["passed"]]
        if failed or s["error"]:
            lines.append(f"### {s['name']}" + (f" (#{s['repeat']})" if s["repeat"] > 1 else ""))
            lines.append("")
            if s["error"]:
                lines.append(f"- error: {s['error']}")
            lines += [f"- ✗ {f['property']}: {f['detail']}" for f in failed]
            lines.append("")
    return "\n".join(lines)


def write_reports(report: Mapping[str, Any], out: str | Path) -> tuple[Path, Path]:
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    md, js = folder / "report.md", folder / "report.json"
    md.write_text(render_markdown(report), encoding="utf-8")
    js.write_text(json.dumps(report, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    return md, js
