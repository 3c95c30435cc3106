"""``foldctl eval`` end to end: the bundled suite against the baseline editor, and a scripted
OpenAI-compatible server driven through the real SDK (contract §15)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

from tests.support.llm_servers import LLMServer, respond

ROOT = Path(__file__).resolve().parents[2]


def foldctl(*args: str, cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "fold_host", *args], capture_output=True, text=True, cwd=cwd,
                          env={**os.environ, **(env or {})}, timeout=600)


def test_the_bundled_suite_runs_against_the_baseline_and_writes_both_reports(tmp_path):
    done = foldctl("eval", "--scenarios", str(ROOT / "eval"), "--out", str(tmp_path / "out"), "--repeat", "2",
                   cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["backend"] == "baseline" and report["model"] == "baseline" and report["repeat"] == 2
    assert set(report["skill"]) == {"zh", "en"} and all(d.startswith("sha256:") for d in report["skill"].values())
    scenarios = report["overall"]["scenarios"] // 2
    assert scenarios >= 40 and report["overall"]["total"] >= 2 * 100
    # The default editor holds the bar the suite sets: at least 95% of the properties.
    assert report["overall"]["passed"] >= 0.95 * report["overall"]["total"]
    metrics = report["metrics"]
    assert metrics["weight_stability"]["denominator"] >= 8  # four paraphrase pairs, each run twice
    assert metrics["repeat_stability"]["denominator"] >= scenarios // 2 and metrics["repeat_stability"]["value"] == 1.0
    assert metrics["context_sensitivity"]["denominator"] >= 8 and metrics["missing_context"]["denominator"] >= 2
    assert metrics["old_version"]["denominator"] >= 2
    assert len(metrics["share_override_per_batch"]) == report["overall"]["scenarios"]
    markdown = (tmp_path / "out" / "report.md").read_text(encoding="utf-8")
    for words in ("weight stability", "repeat stability", "missing context", "old version", "visa-vs-weekly",
                  report["skill"]["zh"]):
        assert words in markdown, words
    assert json.loads((tmp_path / "out" / "report.json").read_text(encoding="utf-8")) == {
        k: v for k, v in report.items() if k != "files"}
    assert f"[{report['overall']['scenarios']}/{report['overall']['scenarios']}]" in done.stderr  # progress


def _editor(request) -> str:
    """A scripted model: the first answer of a window forgets a disposition, the second is right."""
    document = json.loads(request.message_texts("user")[0])
    events = [e["id"] for e in document["events"]]
    corrected = len(request.message_texts("user")) > 1
    dispositions = [{"event": e, "disposition": "used" if corrected else "noise", "why": "scripted"}
                    for e in (events if corrected else events[1:])]
    declarations = []
    if events and corrected:
        declarations = [{"id": "scripted-" + events[0].lower().replace("_", "-"), "title": "签证材料缺银行流水",
                         "weight": "trace", "kind": "needs-you",
                         "sources": [{"channel": "email", "ref": f"event:{events[0]}"}]}]
    return "```json\n" + json.dumps({"dispositions": dispositions,
                                     "batch": {"declarations": declarations, "acknowledges": []}},
                                    ensure_ascii=False) + "\n```"


def test_a_scripted_openai_compatible_server_is_evaluated_through_the_real_sdk(tmp_path):
    scenarios = tmp_path / "scenarios"
    scenarios.mkdir()
    for name in ("visa-vs-weekly", "visa-vs-weekly-paraphrase"):
        shutil.copy(ROOT / "eval" / f"{name}.json", scenarios)
    with LLMServer([respond(_editor) for _ in range(4)]) as server:
        config = tmp_path / "plugins.toml"
        config.write_text(textwrap.dedent(f"""
            [host]
            max_attempts = 3
            [agent]
            type = "openai"
            base_url = "{server.openai_url}"
            model = "scripted"
            timeout = "30s"
        """))
        done = foldctl("--config", str(config), "eval", "--scenarios", str(scenarios), "--out", str(tmp_path / "out"),
                       cwd=tmp_path)
        requests = len(server.requests)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["backend"] == "openai"
    assert requests == 4  # two scenarios, each: a disposition error sent back, then a corrected answer
    first = report["scenarios"][0]
    assert first["attempts"] == 2 and first["calls"] == 2 and first["input_tokens"] > 0
    assert report["metrics"]["weight_stability"] == {"numerator": 1, "denominator": 1, "value": 1.0}
    # The scripted model buried the visa deadline at trace: the evaluation says so.
    assert any(not f["passed"] and f["property"].startswith("surface") for f in first["findings"])
    assert (tmp_path / "out" / "report.md").is_file()


def test_a_malformed_scenario_is_a_usage_error_naming_file_and_field(tmp_path):
    (tmp_path / "broken.json").write_text(json.dumps({"name": "broken", "now": "tomorrow"}))
    done = foldctl("eval", "--scenarios", str(tmp_path), "--out", str(tmp_path / "out"), cwd=tmp_path)
    assert done.returncode == 2
    assert "broken.json" in done.stderr and "'now'" in done.stderr and "Traceback" not in done.stderr
