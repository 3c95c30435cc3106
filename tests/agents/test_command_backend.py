"""The command backend with a real subprocess (tests/fixtures/command_editor.py)."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

from fold_core.plugin_api import AgentRequest, AgentUnavailable, Correction
from fold_agents.command import CommandBackend

EDITOR = str(Path(__file__).parents[1] / "fixtures" / "command_editor.py")
INPUT = {"now": "2026-10-09T08:00:00+08:00", "batch_id": "b-1",
         "events": [{"id": "e-1", "text": "签证"}, {"id": "e-2", "text": "ad"}]}


def editor(mode: str, *more: str, timeout: str = "20s") -> CommandBackend:
    return CommandBackend(CommandBackend.Settings(command=[sys.executable, EDITOR, mode, *more], timeout=timeout))


def test_the_program_reads_input_skill_attempt_corrections_and_answers_on_stdout():
    receipt = {"ok": False, "errors": [{"code": "disposition_missing", "event": "e-2"}]}
    request = AgentRequest(INPUT, "SKILL TEXT", attempt=2, corrections=(Correction("{}", receipt),))
    reply = editor("answer").propose(request)
    assert reply.error is None
    assert [d["event"] for d in reply.output["dispositions"]] == ["e-1", "e-2"]
    assert reply.output["dispositions"][0]["why"] == "attempt 2, 1 corrections, skill 10"
    assert reply.stderr.strip() == "editor: 2 events, attempt 2"
    assert reply.raw.startswith("Here is my answer:") and reply.latency_ms > 0


def test_a_failing_program_is_unavailable_with_its_stderr():
    with pytest.raises(AgentUnavailable) as caught:
        editor("fail").propose(AgentRequest(INPUT, "S"))
    assert caught.value.error_class == "exit_3"
    assert "editor: something broke" in caught.value.stderr


def test_an_answer_that_is_not_json_is_a_reply_with_an_error():
    reply = editor("garbage").propose(AgentRequest(INPUT, "S"))
    assert reply.output is None and "no JSON object" in reply.error and reply.stderr


def test_a_missing_program_is_unavailable():
    backend = CommandBackend(CommandBackend.Settings(command=["/nonexistent/fold-editor"]))
    with pytest.raises(AgentUnavailable) as caught:
        backend.propose(AgentRequest(INPUT, "S"))
    assert caught.value.error_class == "not_found"


def test_a_timeout_kills_the_program_and_what_it_started(tmp_path):
    pid_file = tmp_path / "child.pid"
    with pytest.raises(AgentUnavailable) as caught:
        editor("hang", str(pid_file), timeout="3s").propose(AgentRequest(INPUT, "S"))
    assert caught.value.error_class == "timeout"
    if not pid_file.exists():  # a very slow start: the program was killed before it started a child
        return
    assert "editor: 2 events" in (caught.value.stderr or "")
    grandchild = int(pid_file.read_text())
    for _ in range(100):  # the kill is sent before propose returns; reaping by init may take a moment
        if not _alive(grandchild):
            break
        time.sleep(0.05)
    assert not _alive(grandchild)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().split(") ")[-1][0] != "Z"  # a zombie is dead
    except FileNotFoundError:
        return False
