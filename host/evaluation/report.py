"""The report of the skill evaluation (contract §15): ``report.json`` and ``report.md``.

Each metric says how it is computed, in the report itself: properties passed
/ total, per scenario and overall; the comparative metrics of
``fold_host.evaluation.metrics`` (weight stability over paraphrases and over
repeats, context sensitivity, missing context, old version, share override
rate pooled and per batch); **overclaims** (``forbidden`` matches); per
scenario: attempts, agent calls, input and output tokens, wall time. The
report names what was evaluated: the backend, the model and the digest of
each skill text used, so two reports can be compared only when they should.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fold_host.evaluation.metrics import comparisons, ratio, share_overrides
from fold_host.evaluation.properties import Finding, Run, overclaims
from fold_host.evaluation.scenarios import Scenario

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


def build_report(results: Sequence[Result], *, backend: str, model: str | None = None,
                 skill: Mapping[str, str] | None = None) -> dict:
    """The report document: what ran (backend, model, skill digests), the metrics, every scenario."""
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
    found = comparisons(results)
    pooled, per_batch, mean = share_overrides(results)
    passed = sum(r.passed for r in results)
    total = sum(len(r.findings) for r in results)
    return {
        "schema": "fold.eval/1",
        "backend": backend,
        "model": model or backend,
        "skill": dict(skill or {}),
        "repeat": max((r.repeat for r in results), default=1),
        "overall": {"passed": passed, "total": total, "scenarios": len(results),
                    "scenarios_all_passed": sum(r.passed == len(r.findings) for r in results)},
        "metrics": {
            "weight_stability": ratio(sum(p["same"] for p in found["stability"]), len(found["stability"])),
            "weight_stability_pairs": found["stability"],
            "kind_stability": ratio(sum(p["same_kind"] for p in found["stability"]), len(found["stability"])),
            "unaligned": found["unaligned"],
            "repeat_stability": ratio(sum(p["same"] for p in found["repeat"]), len(found["repeat"])),
            "repeat_pairs": found["repeat"],
            "repeat_unaligned": found["repeat_unaligned"],
            "context_sensitivity": ratio(sum(p["moved"] for p in found["context"]), len(found["context"])),
            "context_pairs": found["context"],
            "missing_context": ratio(sum(p["moved"] for p in found["missing"]), len(found["missing"])),
            "missing_context_pairs": found["missing"],
            "old_version": ratio(sum(p["kept"] for p in found["old"]), len(found["old"])),
            "old_version_pairs": found["old"],
            "share_override_rate": pooled,
            "share_override_per_batch": per_batch,
            "share_override_batch_mean": mean,
            "overclaims": sum(len(overclaims(r.scenario, r.run)) for r in results),
            "attempts": sum(r.run.attempts for r in results),
            "agent_calls": sum(r.run.calls for r in results),
            "input_tokens": sum(r.run.input_tokens for r in results),
            "output_tokens": sum(r.run.output_tokens for r in results),
            "seconds": round(sum(r.run.seconds for r in results), 3),
        },
        "scenarios": scenarios,
    }


def _shown(ratio: Mapping[str, Any]) -> str:
    if ratio["value"] is None:
        return "n/a (0 / 0)"
    return f"{ratio['value']:.2f} ({ratio['numerator']} / {ratio['denominator']})"


def _mean(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"


def render_markdown(report: Mapping[str, Any]) -> str:
    m, o = report["metrics"], report["overall"]
    skills = ", ".join(f"{lang} `{digest}`" for lang, digest in sorted(report.get("skill", {}).items())) or "none"
    lines = [
        f"# Skill evaluation — backend `{report['backend']}`", "",
        f"Model `{report.get('model', report['backend'])}`; skill digests: {skills}; "
        f"every scenario run {report.get('repeat', 1)} time(s).", "",
        f"Properties passed: **{o['passed']} / {o['total']}**; scenarios with every property passed: "
        f"{o['scenarios_all_passed']} / {o['scenarios']}.", "",
        "## Metrics", "",
        "| metric | value | how it is computed |", "|---|---|---|",
        f"| weight stability | {_shown(m['weight_stability'])} | paraphrase pairs: items aligned by the input event "
        "their sources cite; same weight / aligned |",
        f"| kind stability | {_shown(m['kind_stability'])} | the same aligned paraphrase pairs; same kind / aligned |",
        f"| repeat stability | {_shown(m['repeat_stability'])} | every later run of a scenario against its first "
        "(`--repeat`), aligned the same way; same weight / aligned |",
        f"| context sensitivity | {_shown(m['context_sensitivity'])} | context pairs whose weight (of the pair's "
        "items, else the highest citing an input event) moved in the expected direction / all |",
        f"| missing context | {_shown(m['missing_context'])} | missing-context pairs whose weight compares as "
        "expected (up, down or same) / all |",
        f"| old version | {_shown(m['old_version'])} | old-version pairs whose listed items keep weight and kind / "
        "all |",
        f"| share override rate | {_shown(m['share_override_rate'])} | accepted declarations with an explicit share / "
        "non-withdraw declarations, all batches pooled |",
        f"| share override rate per batch | mean {_mean(m['share_override_batch_mean'])} over "
        f"{sum(b['value'] is not None for b in m['share_override_per_batch'])} batches | the same ratio per accepted "
        "batch; a batch without assignable declarations is not applicable |",
        f"| overclaims | {m['overclaims']} | `forbidden` matches in declared titles, summaries and reasons (every attempt) |",
        f"| attempts / agent calls | {m['attempts']} / {m['agent_calls']} | summed over scenarios |",
        f"| tokens in / out | {m['input_tokens']} / {m['output_tokens']} | as the backend reports them |",
        f"| wall time | {m['seconds']} s | summed over scenarios |", "",
    ]
    for key, label in (("unaligned", "paraphrase pair"), ("repeat_unaligned", "repeat")):
        if m[key]:
            lines += [f"Unaligned items (an input event cited in only one run of a {label}):", ""]
            lines += [f"- `{u['event']}` only in `{u['only_in']}` ({' / '.join(u['pair'])})" for u in m[key]]
            lines.append("")
    for key, label in (("context_pairs", "Context pairs"), ("missing_context_pairs", "Missing-context pairs")):
        if m[key]:
            lines += [f"{label}:", ""]
            lines += [f"- {' → '.join(p['pair'])}: expected {p['expect_change']}, weights "
                      f"{p['weights'][0]} → {p['weights'][1]}: {'as expected' if p['moved'] else 'not as expected'}"
                      for p in m[key]]
            lines.append("")
    if m["old_version_pairs"]:
        lines += ["Old-version pairs:", ""]
        lines += [f"- {' → '.join(p['pair'])}: {'kept' if p['kept'] else 'changed'} "
                  + ", ".join(f"{item} {states[0]} → {states[1]}" for item, states in p["items"].items())
                  for p in m["old_version_pairs"]]
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
