"""An editor's answer that repeats a configured secret is refused like any other invalid answer ([hardening-2]).

The scripted OpenAI server plays the editor. Its first answer copies the
``[mcp]`` token (another section's secret) into an item's summary, its second
the editor's own API key into a disposition's ``why``; the host refuses both
with ``secret_in_output`` (the secret masked in the correction and in the call
log), and the third, clean answer is committed. Neither secret reaches the
state, the log of calls or host.db.
"""

from __future__ import annotations

import json

from tests.support.host_workspace import Workspace
from tests.support.llm_servers import LLMServer, text

API_KEY = "sk-test-key-0123456789abcdef"
MCP_TOKEN = "mcp-token-for-the-secret-test-42"
NOW = "2026-10-09T08:00:00+08:00"


def answer(summary: str, why: str) -> str:
    return json.dumps({"dispositions": [{"event": "mail:1", "disposition": "used", "why": why, "related": ["keys"]}],
                       "batch": {"declarations": [{"id": "keys", "title": "Rotate the API keys", "weight": "high",
                                                   "kind": "needs-you", "summary": summary,
                                                   "sources": [{"channel": "email", "ref": "event:mail:1"}]}],
                                 "acknowledges": []}})


def test_an_answer_holding_a_configured_secret_is_refused_and_masked(tmp_path, monkeypatch):
    monkeypatch.setenv("FOLD_TEST_KEY", API_KEY)
    monkeypatch.setenv("FOLD_TEST_MCP_TOKEN", MCP_TOKEN)
    script = [text(answer(f"The MCP token is {MCP_TOKEN}.", "asks to rotate")),
              text(answer("Rotate them this week.", f"the key {API_KEY} leaked")),
              text(answer("Rotate them this week.", "asks to rotate"))]
    with LLMServer(script) as server:
        ws = Workspace(tmp_path, agent=f'type = "openai"\nmodel = "gpt-test"\nbase_url = "{server.openai_url}"\n'
                                       'api_key_env = "FOLD_TEST_KEY"\n',
                       extra='[mcp]\ntoken_env = "FOLD_TEST_MCP_TOKEN"\n')
        ws.feed("mail", {"native": "1", "title": "Keys", "text": "Please rotate the API keys."})
        report = ws.tick(NOW)
        sent = [" ".join(request.message_texts()) for request in server.requests]
    assert report["outcome"] == "committed" and report["attempts"] == 3
    assert "secret_in_output" in sent[1] and "secret_in_output" in sent[2]
    assert "batch.declarations[0].summary" in sent[1] and "dispositions[0].why" in sent[2]
    assert not any(secret in body for body in sent for secret in (API_KEY, MCP_TOKEN))  # masked in corrections
    state = json.dumps(ws.run("state")[1])
    assert "Rotate them this week." in state and MCP_TOKEN not in state and API_KEY not in state
    calls = ws.run("calls")[1]["calls"]
    assert [c["outcome"] for c in calls] == ["committed", "rejected", "rejected"]
    shown = json.dumps(ws.run("calls", "show", str(calls[2]["id"]))[1])
    assert "[secret]" in shown and "secret_in_output" in shown and MCP_TOKEN not in shown
    stored = b"".join(path.read_bytes() for path in ws.store.glob("host.db*"))
    assert MCP_TOKEN.encode() not in stored and API_KEY.encode() not in stored
