"""The scripted LLM server itself (tests/support/llm_servers.py), spoken to over plain HTTP."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest

from tests.support.llm_servers import LLMServer, raw, respond, status, text


def post(url: str, body: dict) -> tuple[int, dict]:
    request = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=5) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def test_both_shapes_in_script_order_with_usage_and_recorded_bodies():
    with LLMServer([text("one", input_tokens=11, output_tokens=3), "two"]) as server:
        code, chat = post(server.openai_url + "/chat/completions", {"model": "m", "messages": [
            {"role": "system", "content": "S"}, {"role": "user", "content": "U"}]})
        assert code == 200 and chat["object"] == "chat.completion"
        assert chat["choices"][0]["message"] == {"role": "assistant", "content": "one"}
        assert chat["usage"] == {"prompt_tokens": 11, "completion_tokens": 3, "total_tokens": 14}
        code, message = post(server.anthropic_url + "/v1/messages",
                             {"model": "m", "system": "S2", "messages": [{"role": "user", "content": "U2"}]})
        assert code == 200 and message["type"] == "message"
        assert message["content"] == [{"type": "text", "text": "two"}]
        assert message["usage"]["input_tokens"] >= 1 and message["usage"]["output_tokens"] >= 1
        assert [r.api for r in server.requests] == ["openai", "anthropic"]
        assert [r.system for r in server.requests] == ["S", "S2"]
        assert server.requests[1].message_texts("user") == ["U2"]


def test_errors_functions_raw_bodies_and_an_exhausted_script():
    seen = []

    def decide(request):
        seen.append(request.body["model"])
        return status(400, "nope") if "response_format" in request.body else "fine"

    with LLMServer([status(503, "busy"), respond(decide), respond(decide), raw({"odd": True})]) as server:
        url = server.openai_url + "/chat/completions"
        assert post(url, {"model": "a"}) == (503, {"error": {"message": "busy", "type": "server_error", "code": None}})
        assert post(url, {"model": "b", "response_format": {"type": "json_object"}})[0] == 400
        assert post(url, {"model": "c"})[1]["choices"][0]["message"]["content"] == "fine"
        assert post(url, {"model": "d"}) == (200, {"odd": True})
        code, body = post(server.anthropic_url + "/v1/messages", {"model": "e"})
        assert code == 500 and body["error"]["message"] == "script exhausted"
        assert seen == ["b", "c"] and len(server.requests) == 5


@pytest.mark.parametrize("path", ["/v1/other", "/v2/messages"])
def test_unknown_paths_are_404(path):
    with LLMServer(["unused"]) as server:
        assert post(f"http://127.0.0.1:{server.port}{path}", {})[0] == 404
