"""The editor's tools through the real openai and anthropic SDKs against a scripted local server (contract §9).

The store holds an item with a history (``visa``), a withdrawn item
(``trip``) and an observation of an earlier window (``mail:1``). In the next
window the scripted model calls every tool, gets the right data back, and
then commits; a call of an unknown tool, bad arguments, answers over
``max_tool_bytes`` and more calls than ``max_tool_calls`` each end cleanly.
"""

from __future__ import annotations

import json

import pytest

from tests.support.host_workspace import Workspace
from tests.support.llm_servers import LLMServer, delay, respond, status, text, tool_calls

NOW = "2026-10-09T08:00:00+08:00"
BOTH = pytest.mark.parametrize("api", ["openai", "anthropic"])
SETUP = [
    {"batch_id": "s1", "declarations": [
        {"id": "visa", "title": "签证材料待补", "weight": "high", "kind": "needs-you"},
        {"id": "trip", "title": "十月出差行程", "weight": "normal", "kind": "in-progress"}]},
    {"batch_id": "s2", "declarations": [
        {"id": "visa", "relation": "supersedes:visa", "summary": "代理说还缺材料", "weight": "high",
         "kind": "needs-you"}]},
    {"batch_id": "s3", "declarations": [{"id": "trip", "relation": "withdraw", "reason": "出差取消"}]},
]
BANK = "代理确认还缺近 6 个月银行流水，12 日前送到。"


def answer(event: str, *declarations, disposition: str = "used", related=("visa",)) -> str:
    return json.dumps({"dispositions": [{"event": event, "disposition": disposition, "why": "依据", "related":
                                         list(related)}],
                       "batch": {"declarations": list(declarations), "acknowledges": []}}, ensure_ascii=False)


@pytest.fixture(scope="module")
def server():
    with LLMServer() as running:
        yield running


def workspace(tmp_path, server: LLMServer, api: str, extra: str = "", second: str = "出差恢复，20 日出发。") -> Workspace:
    url = server.openai_url if api == "openai" else server.anthropic_url
    ws = Workspace(tmp_path, agent=f'type = "{api}"\nmodel = "scripted-model"\nbase_url = "{url}"\n'
                                    f'timeout = "10s"\n{extra}')
    for batch in SETUP:
        path = tmp_path / f"{batch['batch_id']}.json"
        path.write_text(json.dumps(batch, ensure_ascii=False))
        assert ws.run("commit", "--actor", "user", "--now", NOW, str(path))[0] == 0
    # An earlier window: the editor uses mail:1 on visa.
    ws.feed("mail", {"native": "1", "title": "签证材料", "text": BANK})
    server.reset().script(text(answer("mail:1", {"id": "visa", "relation": "supersedes:visa", "weight": "critical",
                                                 "kind": "needs-you", "summary": "缺近 6 个月银行流水",
                                                 "sources": [{"channel": "email", "ref": "event:mail:1"}]})))
    assert ws.tick("2026-10-09T09:00:00+08:00")["outcome"] == "committed"
    ws.feed("mail", {"native": "2", "title": "行程又定了", "text": second})
    server.reset()
    return ws


def calls_of(ws: Workspace) -> list[dict]:
    code, document, _ = ws.run("calls")
    assert code == 0
    return document["calls"]


RESTORE = {"id": "trip", "relation": "supersedes:trip", "weight": "normal", "kind": "in-progress",
           "summary": "出差恢复，20 日出发", "sources": [{"channel": "email", "ref": "event:mail:2"}]}


@BOTH
def test_each_tool_answers_with_the_right_data_and_the_editor_then_commits(tmp_path, server, api):
    ws = workspace(tmp_path, server, api)
    server.script(tool_calls(("fold_get_observation", {"id": "event:mail:1"})),
                  tool_calls(("fold_get_history", {"item": "visa", "limit": 2})),
                  tool_calls(("fold_search_observations", {"query": "银行流水"})),
                  tool_calls(("fold_list_not_active", {"query": "出差"}), ("fold_get_item", {"id": "trip"})),
                  text(answer("mail:2", RESTORE, related=("trip",))))
    report = ws.tick("2026-10-09T10:00:00+08:00")
    assert report["outcome"] == "committed" and report["attempts"] == 1 and server.remaining == 0
    results = dict(server.requests[-1].tool_results())
    observation = results["fold_get_observation"]
    assert observation["found"] is True and observation["observation"]["text"] == BANK
    assert observation["status"] == "processed" and observation["dispositions"][0]["related"] == ["visa"]
    history = results["fold_get_history"]
    assert history["total"] == 3 and [r["op"] for r in history["records"]] == ["updated", "updated"]
    assert history["records"][0]["item"]["summary"] == "缺近 6 个月银行流水"  # newest first
    assert history["records"][1]["item"]["summary"] == "代理说还缺材料"
    [hit] = results["fold_search_observations"]["hits"]
    assert hit["id"] == "mail:1" and "银行流水" in hit["snippet"]
    listed = results["fold_list_not_active"]
    assert [(e["id"], e["status"], e["reason"]) for e in listed["entries"]] == [("trip", "withdrawn", "出差取消")]
    item = results["fold_get_item"]
    assert item["found"] is True and item["status"] == "withdrawn" and "supersedes:trip" in item["hint"]
    # The tools were offered through the SDK's own protocol.
    first = server.requests[0].body
    names = [t["function"]["name"] if api == "openai" else t["name"] for t in first["tools"]]
    assert names == ["fold_get_item", "fold_get_history", "fold_get_observation", "fold_search_observations",
                     "fold_list_not_active"]
    code, state, _ = ws.run("state", "--now", "2026-10-09T10:00:00+08:00")
    assert "trip" in [i["id"] for i in state["root"]["items"]]
    [call] = [c for c in calls_of(ws) if c["window"] == report["receipt"]["batch_id"]]
    assert call["outcome"] == "committed" and call["model"] == "scripted-model" and len(call["skill"]) == 12
    assert call["tools"] == ["fold_get_observation", "fold_get_history", "fold_search_observations",
                             "fold_list_not_active", "fold_get_item"]
    assert call["tokens_in"] > 0 and call["tokens_out"] > 0


@BOTH
def test_an_unknown_tool_and_bad_arguments_are_answered_with_errors(tmp_path, server, api):
    ws = workspace(tmp_path, server, api, extra="max_tool_bytes = 1024\n", second="行程细节。" * 300)
    malformed = "{not json" if api == "openai" else {"id": "mail:1", "deep": True}
    server.script(tool_calls(("fold_delete_everything", {"id": "visa"}),
                             ("fold_get_history", {"item": "visa", "limit": 500})),
                  tool_calls(("fold_get_observation", malformed), ("fold_get_observation", {"id": "mail:2"})),
                  text(answer("mail:2", related=())))
    report = ws.tick("2026-10-09T10:00:00+08:00")
    assert report["outcome"] == "checked" and report["attempts"] == 1  # an empty batch: a check
    unknown, limit, bad, cut = [answer for _, answer in server.requests[-1].tool_results()]
    assert unknown["error"]["code"] == "unknown_tool" and "fold_get_item" in unknown["error"]["message"]
    assert limit["error"]["code"] == "invalid_arguments" and "between 1 and 50" in limit["error"]["message"]
    assert bad["error"]["code"] == "invalid_arguments"
    # 1024 bytes: the observation (its text alone is more) comes back cut, with a mark.
    assert isinstance(cut, str) and "[cut: " in cut and len(cut.encode()) <= 1024
    if api == "anthropic":
        errors = [block.get("is_error") for message in server.requests[-1].messages
                  for block in (message["content"] if isinstance(message["content"], list) else ())
                  if block.get("type") == "tool_result"]
        assert errors == [True, True, True, None]
    [call] = calls_of(ws)[:1]
    assert call["tools"] == ["fold_delete_everything", "fold_get_history", "fold_get_observation",
                             "fold_get_observation"]


@BOTH
def test_more_calls_than_max_tool_calls_end_the_attempt_cleanly(tmp_path, server, api):
    ws = workspace(tmp_path, server, api, extra="max_tool_calls = 2\n")
    asks = tool_calls(("fold_get_item", {"id": "visa"}))
    server.script(asks, asks, asks, text(answer("mail:2", related=())))
    report = ws.tick("2026-10-09T10:00:00+08:00")
    assert report["outcome"] == "checked" and report["attempts"] == 2 and server.remaining == 0
    third = server.requests[2].body
    assert third["tool_choice"] == ("none" if api == "openai" else {"type": "none"})
    assert "max_tool_calls" in " ".join(server.requests[3].message_texts())  # the receipt of attempt 1
    first, second = calls_of(ws)[1], calls_of(ws)[0]
    assert (first["outcome"], first["tools"]) == ("invalid", ["fold_get_item"] * 3)
    assert (second["outcome"], second["tools"]) == ("checked", [])
    code, shown, _ = ws.run("calls", "show", str(first["id"]))
    assert code == 0 and shown["call"]["tool_calls"][2]["error"] == "too_many_tool_calls"


@BOTH
def test_tool_rounds_share_the_attempts_timeout(tmp_path, server, api):
    """Each round is quick enough alone; together they outrun ``timeout``, so the attempt ends at it."""
    import time

    ws = workspace(tmp_path, server, api)
    ws.config.write_text(ws.config.read_text().replace('timeout = "10s"', 'timeout = "3s"')
                         + "\n[host]\nmax_attempts = 1\n")
    slow = delay(1.2, tool_calls(("fold_get_item", {"id": "visa"})))
    server.script(*[slow] * 8, text(answer("mail:2", related=())))
    started = time.monotonic()
    report = ws.tick("2026-10-09T10:00:00+08:00")
    elapsed = time.monotonic() - started
    assert report["outcome"] == "failed" and report["attempts"] == 1
    assert calls_of(ws)[0]["outcome"] == "unavailable"
    assert len(server.requests) < 5  # not 8 rounds of 1.2 s: the rounds stopped at the attempt's 3 s
    assert elapsed < 3 + 2 + 3  # the timeout, the grace of a call, and a tick's own work


@BOTH
def test_max_tool_calls_zero_offers_no_tools(tmp_path, server, api):
    ws = workspace(tmp_path, server, api, extra="max_tool_calls = 0\n")
    server.script(respond(lambda request: answer("mail:2", related=()) if "tools" not in request.body
                          else "tools were offered"))
    assert ws.tick("2026-10-09T10:00:00+08:00")["outcome"] == "checked"



def refuse_tools(request):
    if "tools" in request.body:
        return status(400, "registry.ollama.ai/library/tiny:1b does not support tools")
    return answer("mail:2", related=())


def test_a_server_that_refuses_tools_is_asked_without_them(tmp_path, server):
    ws = workspace(tmp_path, server, "openai")
    server.script(respond(refuse_tools), respond(refuse_tools))
    assert ws.tick("2026-10-09T10:00:00+08:00")["outcome"] == "checked"
    assert ["tools" in request.body for request in server.requests] == [True, False]


def test_the_backend_remembers_a_refusal_and_other_errors_do_not_turn_tools_off(tmp_path, server):
    from fold_core.plugin_api import AgentRequest, AgentUnavailable
    from fold_agents.llm.openai import OpenAIBackend, OpenAISettings
    from fold_host.cycle.tools import HostTools

    request = AgentRequest({"events": []}, "skill", tools=HostTools(tmp_path, NOW))
    keeps = OpenAIBackend(OpenAISettings(model="m", base_url=server.openai_url))
    too_long = status(400, "maximum context length exceeded")  # (taken at first for a refused json mode)
    server.reset().script(too_long, too_long, text(answer("mail:2")))
    with pytest.raises(AgentUnavailable):
        keeps.propose(request)
    assert keeps.propose(request).output is not None
    assert ["tools" in r.body for r in server.requests] == [True, True, True]
    refuses = OpenAIBackend(OpenAISettings(model="m", base_url=server.openai_url))
    server.reset().script(*[respond(refuse_tools)] * 3)
    assert refuses.propose(request).output is not None and refuses.propose(request).output is not None
    assert ["tools" in r.body for r in server.requests] == [True, False, False]  # refused once, then never sent
