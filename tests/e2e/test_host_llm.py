"""The whole cycle through the real openai and anthropic SDKs against a scripted local server.

The server (``tests/support/llm_servers.py``) speaks the OpenAI chat-completions
and the Anthropic Messages shapes on 127.0.0.1. The root layer is nearly full;
the editor's first answer adds a critical item (over budget), the host sends
the kernel's receipt back, the second answer makes room and is accepted; the
call log keeps both attempts with their token counts. Then the editor fails in
every way a server can fail, and nothing is lost.
"""

from __future__ import annotations

import json

import pytest

from fold_host.hostdb import open_host_db
from tests.support.host_workspace import Workspace
from tests.support.llm_servers import LLMServer, delay, refused_url, status, text

NOW = "2026-10-09T08:00:00+08:00"
FULL = {"batch_id": "setup", "declarations": [
    {"id": "tax", "title": "报税材料周五截止", "weight": "critical", "kind": "needs-you"},
    {"id": "rent", "title": "房租续约待签", "weight": "critical", "kind": "needs-you"},
    {"id": "review", "title": "PR 410 等你评审", "weight": "high", "kind": "needs-you"},
]}  # 24 + 24 + 12 = 60 of 64


def answer(*declarations, used: bool = True) -> str:
    return json.dumps({"dispositions": [{"event": "mail:1", "disposition": "used" if used else "noise",
                                         "why": "签证材料缺银行流水", "related": ["visa"]}],
                       "batch": {"declarations": list(declarations), "acknowledges": []}}, ensure_ascii=False)


VISA = {"id": "visa", "title": "签证材料缺银行流水", "weight": "critical", "kind": "needs-you",
        "sources": [{"channel": "email", "ref": "event:mail:1"}]}
MAKE_ROOM = {"id": "rent", "relation": "supersedes:rent", "weight": "low", "kind": "needs-you",
             "reason": "续约下月才到期，让位给签证"}  # 24 + 3 + 12 + 24 = 63


@pytest.fixture(scope="module")
def server():
    with LLMServer() as running:
        yield running


def workspace(tmp_path, api: str, url: str, timeout: str = "10s") -> Workspace:
    agent = f'type = "{api}"\nmodel = "scripted-model"\nbase_url = "{url}"\ntimeout = "{timeout}"\n'
    ws = Workspace(tmp_path, agent=agent)
    batch = tmp_path / "setup.json"
    batch.write_text(json.dumps(FULL, ensure_ascii=False))
    assert ws.run("commit", "--actor", "user", "--now", NOW, str(batch))[0] == 0
    ws.feed("mail", {"native": "1", "title": "签证材料", "text": "还缺近 6 个月银行流水，12 日前送到。"})
    return ws


def base_url(server: LLMServer, api: str) -> str:
    return server.openai_url if api == "openai" else server.anthropic_url


@pytest.mark.parametrize("api", ["openai", "anthropic"])
def test_an_over_budget_answer_gets_the_receipt_and_the_corrected_one_is_accepted(tmp_path, server, api):
    server.reset().script(text(answer(VISA), input_tokens=1234, output_tokens=56),
                          text("```json\n" + answer(VISA, MAKE_ROOM) + "\n```", input_tokens=1400,
                               output_tokens=80))
    ws = workspace(tmp_path, api, base_url(server, api))
    report = ws.tick("2026-10-09T09:00:00+08:00")
    assert report["outcome"] == "committed" and report["attempts"] == 2
    assert report["receipt"]["layers"] == [{"layer": None, "budget": 64, "used": 63}]
    assert len(server.requests) == 2 and server.remaining == 0
    second = " ".join(server.requests[1].message_texts())
    assert "layer_budget" in second and "over" in second  # the kernel's receipt went back to the editor
    with open_host_db(ws.store) as db:
        calls = sorted(db.calls(limit=10), key=lambda call: call["seq"])
        assert [c["outcome"] for c in calls] == ["rejected", "committed"]
        assert [(c["input_tokens"], c["output_tokens"]) for c in calls] == [(1234, 56), (1400, 80)]
        assert all(c["backend"] == api and c["latency_ms"] is not None for c in calls)
        assert json.loads(calls[0]["error"])["errors"][0]["code"] == "layer_budget"
        [observation] = db.observations()
    assert observation["status"] == "processed" and observation["related"] == ["visa"]


@pytest.mark.parametrize("api", ["openai", "anthropic"])
@pytest.mark.parametrize("failure", ["http 500", "timeout", "unreachable", "invalid json"])
def test_a_failing_editor_loses_nothing_and_doctor_shows_it(tmp_path, server, api, failure):
    url = refused_url() if failure == "unreachable" else base_url(server, api)
    if failure == "unreachable" and api == "anthropic":
        url = url.removesuffix("/v1")
    script = {"http 500": [status(500, "the model crashed")], "timeout": [delay(5, answer())],
              "unreachable": [], "invalid json": [text("Sorry, I cannot help with that.")] * 3}[failure]
    server.reset().script(*script)
    ws = workspace(tmp_path, api, url, timeout="1s")
    report = ws.tick("2026-10-09T09:00:00+08:00")
    assert report["outcome"] == "failed"
    code, doctor, _ = ws.run("doctor")
    agent = next(check for check in doctor["checks"] if check["name"] == "agent")
    assert code == 1 and agent["status"] == "fail" and "1 observation(s) wait" in agent["detail"]
    expected = {"http 500": "500", "timeout": "timeout", "unreachable": "agent_unavailable",
                "invalid json": "invalid_json"}[failure]
    assert expected in agent["detail"], agent["detail"]
    with open_host_db(ws.store) as db:
        assert [o["status"] for o in db.observations()] == ["pending"]
    # The editor is back: the waiting observation is processed, once.
    ws.config.write_text(ws.config.read_text().replace(url, base_url(server, api)))
    server.reset().script(text(answer(used=False)))
    report = ws.tick("2026-10-09T09:05:00+08:00")
    assert report["outcome"] == "checked" and report["signal"]["received"] == 1
    with open_host_db(ws.store) as db:
        assert [o["status"] for o in db.observations()] == ["processed"]
