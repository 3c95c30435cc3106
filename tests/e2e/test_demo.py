"""The README's main-job command, run as written: the whole pipeline over the bundled samples."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import require_component

ROOT = Path(__file__).resolve().parents[2]


def test_the_main_job_leaves_briefing_picture_change_log_and_a_readable_store(tmp_path):
    require_component("chromium", "chromium")
    out = tmp_path / "demo"
    done = subprocess.run(["bash", "scripts/run.sh", "--out", str(out)], cwd=ROOT, capture_output=True, text=True,
                          timeout=900, env={k: v for k, v in os.environ.items() if not k.startswith("FOLD_")})
    assert done.returncode == 0, done.stderr[-3000:]
    log = done.stderr
    # Progress, several cycles, new mail between them, and where everything went.
    for step in ("[1/8]", "[2/8] cycle 1", "[5/8] cycle 2", "[6/8] cycle 3", "[8/8]"):
        assert step in log, step
    assert "baseline" in log  # the default editor is announced as such
    assert "new messages delivered to the maildir" in log
    assert f"--config {out / 'plugins.toml'} run" in log
    # The briefing is printed and written; every entry keeps its id.
    briefing = (out / "briefing.md").read_text(encoding="utf-8")
    assert briefing.strip() and "`" in briefing
    assert "## " in done.stdout
    # The change log has one entry per accepted record, across several revisions.
    changes = (out / "changes.md").read_text(encoding="utf-8")
    assert changes.count("revision") >= 3 or changes.count("修订") >= 3
    # The picture: a real PNG whose render data shows cards in the root budget rectangle.
    pictures = list((out / "overview").glob("*/overview.png"))
    assert len(pictures) == 1 and pictures[0].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    render = json.loads(pictures[0].with_name("render.json").read_text(encoding="utf-8"))
    assert [box for box in render["layers"][0]["boxes"] if box["role"] == "card"]
    # The store reads and verifies with the plugins.toml the demo wrote (the user's to reuse).
    env = {k: v for k, v in os.environ.items() if not k.startswith("FOLD_")}
    for command in (["state"], ["verify"], ["history", "--limit", "1"]):
        read = subprocess.run([sys.executable, "-m", "fold_host", "--config", str(out / "plugins.toml"), *command],
                              capture_output=True, text=True, cwd=tmp_path, env=env)
        assert read.returncode == 0, (command, read.stderr)
    state = json.loads(subprocess.run([sys.executable, "-m", "fold_host", "--config", str(out / "plugins.toml"),
                                       "state"], capture_output=True, text=True, cwd=tmp_path, env=env).stdout)
    assert state["revision"] >= 3 and state["root"]["items"]
    # The agent's question was raised as a decision frame (the whole question, not a cut summary), answered
    # with `foldctl decide`, and moved on by the editor: no frame left, in progress, the decision stated.
    question = "先用 refresh_token_ttl = 0 临时缓解，还是这周迁移到按字段合并？"
    assert "the agent asks (a decision frame on " in log and question in log, log[-3000:]
    assert "with `foldctl decide`" in log and "(the frame is cleared)" in log
    decided = subprocess.run([sys.executable, "-m", "fold_host", "--config", str(out / "plugins.toml"), "decisions",
                              "--source", "agent-log"], capture_output=True, text=True, cwd=tmp_path, env=env)
    listed = json.loads(decided.stdout)["decisions"]
    # answered and moved on: listed as answered (the answer stands), nothing open is asked of the user any more
    assert [(d["status"], d["answer"]["option"], d["asked_by"]) for d in listed] == \
        [("answered", "mitigate", {"source": "agent-log", "question_id": "q-lattice-1"})], listed
    # The answer was routed back to the agent: one line in the work-log instance's answers file, printed.
    (line,) = (out / "channels" / "answers.jsonl").read_text(encoding="utf-8").splitlines()
    routed = json.loads(line)
    assert (routed["question_id"], routed["status"], routed["option"], routed["note"]) == \
        ("q-lattice-1", "answered", "mitigate", "先止血，下周再排迁移")
    assert "routed back to the agent: channels/answers.jsonl has" in log and line in log

    def walk(layer):
        for item in (layer or {}).get("items", []):
            yield item
            yield from walk(item.get("children"))

    (moved,) = [i for i in walk(state["root"]) if "已决定" in (i["summary"] or "")]
    assert moved["decision"] is None and moved["kind"] == "in-progress" and "待智能体执行" in moved["summary"]
