"""``foldctl calls`` and ``calls show``: one entry per attempt, for machines and people; secrets never kept (§11.2)."""

from __future__ import annotations

import json

from fold_host.cycle.editor import skill_digest
from fold_host.skill import load_skill
from tests.support.host_workspace import Workspace
from tests.support.llm_servers import LLMServer, status, text

SECRET = "sk-test-0123456789abcdefSECRET"


def answer(kind: str = "noise") -> str:
    return json.dumps({"dispositions": [{"event": "mail:1", "disposition": kind, "why": "an ad", "related": []}],
                       "batch": {"declarations": [], "acknowledges": []}})


def test_calls_list_each_attempt_and_show_one_whole_without_the_key(tmp_path, monkeypatch):
    monkeypatch.setenv("FOLD_TEST_KEY", SECRET)
    script = [status(503, f"upstream said: Incorrect API key provided: {SECRET}"),
              text(f"I was told the key {SECRET}. No JSON today.", input_tokens=900, output_tokens=12),
              text(answer(), input_tokens=950, output_tokens=40)]
    with LLMServer(script) as server:
        ws = Workspace(tmp_path, agent=f'type = "openai"\nmodel = "gpt-test"\nbase_url = "{server.openai_url}"\n'
                                       'api_key_env = "FOLD_TEST_KEY"\n')
        ws.feed("mail", {"native": "1", "title": "Sale!", "text": "50% off"})
        code, failed, err = ws.run("tick", "--now", "2026-10-09T08:00:00+08:00")
        assert failed["outcome"] == "failed" and "Incorrect API key" in err and SECRET not in err  # stderr too
        second = ws.tick("2026-10-09T09:00:00+08:00")
        assert second["outcome"] == "checked" and second["attempts"] == 2
        assert server.requests[0].headers["authorization"] == f"Bearer {SECRET}"  # the key was used ...
    code, listed, _ = ws.run("calls")
    calls = listed["calls"]
    assert code == 0 and [c["outcome"] for c in calls] == ["checked", "invalid", "unavailable"]  # newest first
    assert [c["attempt"] for c in calls] == [2, 1, 1]
    assert calls[0]["window"] == calls[1]["window"] == second["receipt"]["batch_id"] != calls[2]["window"]
    assert set(calls[0]) == {"id", "at", "backend", "model", "skill", "window", "attempt", "tokens_in",
                             "tokens_cached", "tokens_out", "cost", "latency_ms", "outcome", "tools", "fallback"}
    assert calls[0]["model"] == calls[2]["model"] == "gpt-test"  # the answer's model; the configured one
    assert calls[0]["skill"] == skill_digest(load_skill("zh")) and (calls[0]["tokens_in"], calls[0]["tokens_out"]) \
        == (950, 40)
    assert calls[0]["tools"] == [] and calls[0]["fallback"] is False and calls[0]["backend"] == "openai"
    assert [c["id"] for c in ws.run("calls", "--window", calls[2]["window"])[1]["calls"]] == [calls[2]["id"]]
    assert len(ws.run("calls", "--limit", "1")[1]["calls"]) == 1
    code, shown, _ = ws.run("calls", "show", str(calls[1]["id"]))
    call = shown["call"]
    assert code == 0 and shown["found"] is True and call["outcome"] == "invalid"
    assert call["request"]["input"]["events"][0]["id"] == "mail:1" and "No JSON today" in call["response"]
    assert ws.run("calls", "show", "99999")[1] == {"found": False, "call": None}
    stored = b"".join(path.read_bytes() for path in ws.store.glob("host.db*"))
    assert SECRET.encode() not in stored  # ... and is nowhere in host.db
    for args in (("calls",), ("calls", "show", str(calls[2]["id"]))):
        code, out, _ = ws.call(*args, "--format", "text")
        assert code == 0 and SECRET not in out
    code, out, _ = ws.call("calls", "--format", "text")
    assert "openai gpt-test" in out and "checked · 950 → 40 tokens" in out and "window fold-events-" in out
    code, out, _ = ws.call("calls", "show", str(calls[2]["id"]), "--format", "text")
    assert "unavailable" in out and "[secret]" in out and "request:" in out
