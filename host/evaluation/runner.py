"""Run skill-evaluation scenarios against the configured editor (contract §15).

Each scenario gets a fresh store in a temporary directory: its ``setup``
batches are committed (actor ``setup``), its ``annotations`` saved, then the
host builds the §9 input from that state, the scenario's ``events`` and
``signal`` at the scenario's ``now``, and asks the editor exactly as ``foldctl
tick`` does — the same ``ask_editor`` loop: dispositions checked, rejections
sent back as receipts, at most ``[host] max_attempts`` attempts, every call in
the call log. What the editor declared in each attempt is read back from that
log, so an overclaim in a rejected attempt still counts.
"""

from __future__ import annotations

import hashlib
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from fold_core.plugin_api import extract_json
from fold_core.store.file import create_store
from fold_host.cycle.editor import ask_editor
from fold_host.cycle.pipeline import OUTCOMES, Host
from fold_host.cycle.windows import open_window
from fold_host.evaluation.properties import Run, check
from fold_host.evaluation.report import Result, build_report, write_reports
from fold_host.evaluation.scenarios import Scenario, load_scenarios
from fold_host.settings import HostConfig
from fold_host.skill import load_skill

__all__ = ["evaluate", "run_scenario", "skill_digest"]


def skill_digest(lang: str) -> str:
    """``sha256:`` and the first 16 hex digits of the skill text's UTF-8 bytes."""
    return "sha256:" + hashlib.sha256(load_skill(lang).encode("utf-8")).hexdigest()[:16]


def run_scenario(config: HostConfig, scenario: Scenario, *, progress=None) -> Run:
    """One scenario in a fresh temporary store; never raises for the editor's failures."""
    with tempfile.TemporaryDirectory(prefix="fold-eval-") as folder:
        store_dir = str(Path(folder) / "store")
        create_store(store_dir, budget=scenario.budget)
        host = Host(_for_scenario(config, scenario), store_dir)
        try:
            for number, step in enumerate(scenario.setup, 1):
                setup = dict(step.batch)
                setup.setdefault("batch_id", f"setup-{number}")
                answer = host.store.commit(setup, actor="setup", now=step.now)
                if answer.exit_code != 0:
                    return _broken(scenario, f"setup batch {number} was rejected: {answer.document.get('errors')}")
            for note in scenario.annotations:
                answer = host.store.annotate(item=note.item, text=note.text, author=note.author, now=note.now)
                if answer.exit_code != 0:
                    return _broken(scenario, f"annotation on {note.item!r} was rejected: {answer.document}")
            before = host.store.state_document(now=scenario.now).document
            events = [event.to_event() for event in scenario.events]
            signal = _signal(scenario, before)
            with host.open_db() as db:
                window = open_window(db, signal, [e["id"] for e in events], scenario.now)
                if window is None:  # another host holds a review like it: never in the scenario's own store
                    return _broken(scenario, "its window could not be opened")
                document = {"now": scenario.now, "batch_id": window.batch_id, "user": scenario.user.document(),
                            "state": before, "pending_annotations": before["pending_annotations"],
                            "events": events, "signal": signal}
                started = time.monotonic()
                result = ask_editor(host, db, window, document, scenario.now, fallback=False)
                seconds = time.monotonic() - started
                calls = list(reversed(db.calls(limit=100, batch_id=window.batch_id)))
            after = host.store.state_document(now=scenario.now, depth=None).document
        finally:
            host.close()
    declared: list[dict] = []
    accepted: list[dict] = []
    for call in calls:
        output, _ = extract_json(call.get("response") or "")
        batch = (output or {}).get("batch") if isinstance(output, dict) else None
        declarations = batch.get("declarations") if isinstance(batch, dict) else None
        if isinstance(declarations, list):
            declared.extend(d for d in declarations if isinstance(d, dict))
            if call.get("outcome") in ACCEPTED:
                accepted = [d for d in declarations if isinstance(d, dict)]
    return Run(
        outcome=OUTCOMES[result.receipt["type"]] if result.receipt is not None else "failed",
        before=before, after=after, declarations=declared, accepted_declarations=accepted,
        # An accepted answer's dispositions passed check_output: each names its event and disposition.
        dispositions={d["event"]: d["disposition"] for d in result.dispositions if isinstance(d, dict)},
        receipt=result.receipt, attempts=result.attempts, calls=len(calls),
        input_tokens=sum(c.get("input_tokens") or 0 for c in calls),
        output_tokens=sum(c.get("output_tokens") or 0 for c in calls),
        seconds=seconds, error=None if result.accepted else _describe(result.error))


ACCEPTED = ("committed", "checked", "acknowledged", "accepted")  # the call log's outcomes of an accepted answer


def _for_scenario(config: HostConfig, scenario: Scenario) -> HostConfig:
    """The configuration with the scenario's language; no sources, no consumers."""
    host = config.host.model_copy(update={"language": scenario.lang})
    return replace(config, host=host, adapters=(), consumers=())


def _signal(scenario: Scenario, state: dict) -> dict:
    reminders = sum(1 for e in scenario.events if e.reminder is not None)
    reason = scenario.signal.reason or (
        f"{len(scenario.events)} new observations" if scenario.signal.type == "events" else "periodic review")
    window_from = scenario.now
    if scenario.setup:
        window_from = state.get("last_checked_at") or scenario.setup[-1].now
    return {"type": scenario.signal.type, "reason": reason, "received": len(scenario.events),
            "window": {"from": window_from, "to": scenario.now},
            "coverage": [dict(c) for c in scenario.signal.coverage], "reminders": reminders}


def _broken(scenario: Scenario, why: str) -> Run:
    empty = {"root": {"items": []}, "pending_annotations": []}
    return Run(outcome="failed", before=empty, after=empty, error=f"scenario {scenario.name}: {why}")


def _describe(error: dict | None) -> str:
    error = error or {}
    listed = "; ".join(f"{e.get('code')}: {e.get('message')}" for e in error.get("errors", ()))
    return listed or f"{error.get('code')}: {error.get('message')}"


def evaluate(config: HostConfig, scenarios_dir: str, out_dir: str, *, repeat: int = 1, progress=None) -> dict:
    """Run every scenario ``repeat`` times, write ``report.md`` and ``report.json``; the report."""
    loaded = load_scenarios(scenarios_dir)
    results = []
    total = len(loaded) * repeat
    for round_ in range(1, repeat + 1):
        for path, scenario in loaded:
            run = run_scenario(config, scenario)
            findings = check(scenario, run)
            results.append(Result(scenario, run, findings, repeat=round_))
            if progress is not None:
                passed = sum(f.passed for f in findings)
                progress(f"[{len(results)}/{total}] {scenario.name}: {run.outcome}, {passed}/{len(findings)} "
                         f"properties, {run.attempts} attempt(s)" + (f" — {run.error}" if run.error else ""))
    backend = config.agent.type_name if config.agent is not None else "none"
    model = getattr(config.agent.settings, "model", None) if config.agent is not None else None
    report = build_report(results, backend=backend, model=model or backend,
                          skill={lang: skill_digest(lang) for lang in sorted({s.lang for _, s in loaded})})
    md, js = write_reports(report, out_dir)
    report["files"] = {"markdown": str(md), "json": str(js)}
    return report
