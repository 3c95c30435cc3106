"""The openai and anthropic backends through the real SDKs against the scripted local server."""

from __future__ import annotations

import json

import pytest

from fold_core.plugin_api import AgentRequest, AgentUnavailable, Correction
from fold_agents.llm.anthropic import AnthropicBackend
from fold_agents.llm.openai import OpenAIBackend
from fold_host.skill import load_skill
from tests.support.llm_servers import LLMServer, delay, refused_url, respond, status, text

ANSWER = {"dispositions": [{"event": "e-1", "disposition": "noise", "why": "ad", "related": []}],
          "batch": {"declarations": [], "acknowledges": []}}
INPUT = {"now": "2026-10-09T08:00:00+08:00", "batch_id": "b-1", "events": [{"id": "e-1", "text": "签证"}]}
SKILL = load_skill("zh")


@pytest.fixture(scope="module")
def server():
    with LLMServer() as running:
        yield running


@pytest.fixture(autouse=True)
def fresh(server):
    server.reset()
    yield
    assert server.remaining == 0, "a scripted reply was not used"


def backend(api: str, url: str, **settings):
    cls = OpenAIBackend if api == "openai" else AnthropicBackend
    return cls(cls.Settings(model="m-1", base_url=url, timeout=settings.pop("timeout", "5s"), **settings))


def url_of(server, api):
    return server.openai_url if api == "openai" else server.anthropic_url


BOTH = pytest.mark.parametrize("api", ["openai", "anthropic"])


@BOTH
@pytest.mark.parametrize("wrapping", ["{}", "```json\n{}\n```", "Sure! Here is the object:\n\n{}\n\nHope it helps.",
                                      "思考过程略。\n```\n{}\n```",
                                      'The shape is {{"event": "e-1"}}; mine:\n{}'])
def test_answers_are_read_plainly_fenced_or_after_prose_with_token_counts(server, api, wrapping):
    server.script(text(wrapping.format(json.dumps(ANSWER, ensure_ascii=False)), input_tokens=321, output_tokens=45))
    reply = backend(api, url_of(server, api)).propose(AgentRequest(INPUT, SKILL))
    assert reply.output == ANSWER and reply.error is None
    assert (reply.input_tokens, reply.output_tokens, reply.model) == (321, 45, "m-1")
    assert reply.latency_ms is not None and reply.latency_ms >= 0
    [request] = server.requests
    assert request.system == SKILL
    assert [json.loads(m) for m in request.message_texts("user")] == [INPUT]
    if api == "openai":
        assert request.body["response_format"] == {"type": "json_object"}


@BOTH
@pytest.mark.parametrize("answer", ["no JSON here", '{"dispositions": [', "[1, 2]", '{"hello": "world"}', ""])
def test_an_unreadable_answer_is_a_reply_with_an_error(server, api, answer):
    server.script(text(answer))
    reply = backend(api, url_of(server, api)).propose(AgentRequest(INPUT, SKILL))
    assert reply.output is None and reply.error and reply.raw == answer


@BOTH
@pytest.mark.parametrize("code", [500, 503, 429, 401])
def test_http_errors_are_unavailable_with_their_status(server, api, code):
    server.script(status(code, "scripted failure"))
    with pytest.raises(AgentUnavailable) as caught:
        backend(api, url_of(server, api)).propose(AgentRequest(INPUT, SKILL))
    assert caught.value.error_class == f"http_{code}" and caught.value.to_error()["code"] == "agent_unavailable"
    assert len(server.requests) == 1  # the SDK's own retries are off: the host owns retries


@BOTH
def test_timeout_and_refused_connection_are_unavailable(server, api):
    server.script(delay(5, "{}"))
    with pytest.raises(AgentUnavailable) as caught:
        backend(api, url_of(server, api), timeout="0.3s").propose(AgentRequest(INPUT, SKILL))
    assert caught.value.error_class == "timeout"
    refused = refused_url("/v1" if api == "openai" else "")
    with pytest.raises(AgentUnavailable) as caught:
        backend(api, refused).propose(AgentRequest(INPUT, SKILL))
    assert caught.value.error_class == "connection"


@BOTH
def test_corrections_carry_the_previous_reply_and_the_receipt(server, api):
    receipt = {"ok": False, "batch_id": "b-1", "revision": 3, "errors": [
        {"code": "layer_budget", "layer": None, "budget": 64, "declared": 88, "over": 24, "items": []}]}
    server.script(json.dumps(ANSWER))
    request = AgentRequest(INPUT, load_skill("en"), attempt=2, corrections=(Correction("first answer", receipt),))
    reply = backend(api, url_of(server, api)).propose(request)
    assert reply.output == ANSWER
    turns = [m for m in server.requests[0].messages if m["role"] != "system"]
    assert [m["role"] for m in turns] == ["user", "assistant", "user"]
    texts = server.requests[0].message_texts()
    assert texts[1] == "first answer"
    assert '"layer_budget"' in texts[2] and '"over": 24' in texts[2] and "complete corrected JSON object" in texts[2]


def test_a_server_that_refuses_json_mode_is_asked_plainly_and_remembered(server):
    def refuse_format(request):
        return status(400, "response_format is not supported") if "response_format" in request.body else json.dumps(
            ANSWER)

    server.script(respond(refuse_format), respond(refuse_format), respond(refuse_format))
    editor = backend("openai", server.openai_url)
    assert editor.propose(AgentRequest(INPUT, SKILL)).output == ANSWER
    assert editor.propose(AgentRequest(INPUT, SKILL)).output == ANSWER
    assert ["response_format" in r.body for r in server.requests] == [True, False, False]


@BOTH
def test_the_api_key_comes_from_the_named_environment_variable(server, api, monkeypatch):
    monkeypatch.setenv("FOLD_TEST_LLM_KEY", "sk-test-123")
    server.script(json.dumps(ANSWER), json.dumps(ANSWER))
    editor = backend(api, url_of(server, api), api_key_env="FOLD_TEST_LLM_KEY")
    editor.propose(AgentRequest(INPUT, SKILL))
    backend(api, url_of(server, api)).propose(AgentRequest(INPUT, SKILL))  # no key: a placeholder

    def key(request):  # the SDKs send "Authorization: Bearer" (anthropic may use x-api-key instead)
        return request.headers.get("x-api-key") or request.headers.get("authorization", "").removeprefix("Bearer ")

    with_key, without = server.requests
    assert key(with_key) == "sk-test-123" and key(without) not in ("", "sk-test-123")
    assert "sk-test" not in editor.describe()
