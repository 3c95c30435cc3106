"""``foldctl mcp --http``: Streamable HTTP through the SDK's own client; the bind and token policy.

Loopback without a token answers only loopback Host names; with ``[mcp]
token_env`` or ``token_file`` every request needs the bearer token (401 with a
JSON error document otherwise); a non-loopback address without a token is
refused before anything listens; SIGTERM ends it with exit 0.
"""

from __future__ import annotations

import json

import anyio
import httpx
import pytest

from tests.support.mcp_world import World, call, codes

TOKEN = "mcp-test-token-0123456789abcdef"
INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                         "clientInfo": {"name": "probe", "version": "1"}}}
HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


async def _session_calls(url: str, token: str | None, calls: list[tuple[str, dict]]) -> list:
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    headers = {"Authorization": f"Bearer {token}"} if token else None
    async with create_mcp_http_client(headers=headers) as http:
        async with streamable_http_client(url, http_client=http) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                names = [tool.name for tool in (await session.list_tools()).tools]
                return [names] + [await call(session, name, arguments) for name, arguments in calls]


def test_over_http_on_loopback_with_the_sdk_client(tmp_path):
    world = World(tmp_path)
    with world.http() as (url, process):
        names, state, report = anyio.run(_session_calls, url, None, [
            ("fold_state", {"kinds": ["needs-you"]}),
            ("fold_report", {"agent": "cursor", "title": "Docs", "text": "Rewrote the install guide."})])
        foreign = httpx.post(url, json=INITIALIZE, headers={**HEADERS, "Host": "evil.example"})
        resources = anyio.run(_resources, url)
    assert url.startswith("http://127.0.0.1:") and url.endswith("/mcp")
    assert "fold_report" in names and "fold_ask" in names and len(names) == 10
    assert state[1] is False and [i["id"] for i in state[0]["root"]["items"]] == ["visa"]
    assert state[0]["filter"]["omitted"] == 6  # trip goes with its children, hotel among them
    assert report[1] is False and report[0]["observation"]["source"] == "agents"
    assert foreign.status_code == 421
    assert resources == ["fold://skill/en", "fold://skill/zh", "fold://state"]
    code, out, _ = process.final
    assert code == 0 and json.loads(out)["stopped_by"] == "SIGTERM"


async def _resources(url: str) -> list[str]:
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    async with streamable_http_client(url) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            return sorted(str(r.uri) for r in (await session.list_resources()).resources)


@pytest.mark.parametrize("how", ["token_env", "token_file"])
def test_a_configured_token_is_required_on_every_request(tmp_path, how):
    if how == "token_env":
        world, env = World(tmp_path, mcp='token_env = "FOLD_TEST_MCP_TOKEN"\n'), {"FOLD_TEST_MCP_TOKEN": TOKEN}
    else:
        (tmp_path / "mcp.token").write_text(TOKEN + "\n", encoding="utf-8")
        (tmp_path / "mcp.token").chmod(0o600)
        world, env = World(tmp_path, mcp='token_file = "mcp.token"\n'), {}
    with world.http("--read-only", env=env) as (url, _process):
        missing = httpx.post(url, json=INITIALIZE, headers=HEADERS)
        wrong = httpx.post(url, json=INITIALIZE, headers={**HEADERS, "Authorization": "Bearer not-the-token-at-all"})
        with pytest.raises(Exception) as refused:
            anyio.run(_session_calls, url, "not-the-token-at-all", [])
        names, state, write = anyio.run(_session_calls, url, TOKEN, [
            ("fold_state", {}), ("fold_annotate", {"item": "visa", "text": "x"})])
    for response, phrase in ((missing, "needs `Authorization: Bearer"), (wrong, "not this server's")):
        assert response.status_code == 401 and response.headers["www-authenticate"].startswith("Bearer")
        error = response.json()["error"]
        assert codes(error["data"]) == ["unauthorized"] and phrase in error["message"]
    assert "unauthorized: the bearer token is not this server's" in repr(refused.value)
    assert names == ["fold_state", "fold_item", "fold_history", "fold_observation", "fold_answers"]
    assert state[1] is False and codes(write[0]) == ["read_only"]


def test_the_bind_policy(tmp_path):
    world = World(tmp_path)
    code, document, err = world.foldctl("mcp", "--http", "--host", "0.0.0.0")
    assert code == 2 and "refusing to listen on 0.0.0.0" in document["errors"][0]["message"]
    code, document, _ = world.foldctl("mcp", "--port", "9")
    assert code == 2 and "--http" in document["errors"][0]["message"]
    unset = World(tmp_path / "unset", mcp='token_env = "FOLD_TEST_MCP_UNSET"\n')
    code, document, _ = unset.foldctl("mcp", "--http", "--port", "0")
    assert code == 2 and "FOLD_TEST_MCP_UNSET" in document["errors"][0]["message"]
    short = World(tmp_path / "short", mcp='token_env = "FOLD_TEST_MCP_TOKEN"\n')
    code, document, _ = short.foldctl("mcp", "--http", "--port", "0", env={"FOLD_TEST_MCP_TOKEN": "short"})
    assert code == 2 and "at least 16" in document["errors"][0]["message"]
    # The token is read only by `foldctl mcp --http`: other commands run without it.
    assert unset.foldctl("state")[0] == 0
    (tmp_path / "open.token").write_text(TOKEN, encoding="utf-8")
    (tmp_path / "open.token").chmod(0o644)
    shared = World(tmp_path / "shared", mcp=f'token_file = "{tmp_path / "open.token"}"\n')
    with shared.http() as (url, process):
        assert any("can be read by others (chmod 600" in line for line in process.early)


def test_two_http_clients_writing_at_once(tmp_path):
    world = World(tmp_path)

    async def both(url: str) -> list:
        results: list = []

        async def agent(name: str) -> None:
            results.extend((await _session_calls(url, None, [
                (tool, arguments) for n in range(8) for tool, arguments in (
                    ("fold_annotate", {"item": "trip", "text": f"{name} {n}", "author": name}),
                    ("fold_report", {"agent": name, "title": "t", "text": f"{name} {n}", "report_id": f"{name}{n}"}))
            ]))[1:])

        async with anyio.create_task_group() as group:
            group.start_soon(agent, "one")
            group.start_soon(agent, "two")
        return results

    with world.http() as (url, _process):
        results = anyio.run(both, url)
    assert len(results) == 32 and not any(is_error for _, is_error in results)
    assert world.foldctl("verify")[0] == 0
    history = world.foldctl("history")[1]["records"]
    assert [r["event_seq"] for r in history] == list(range(1, 19))
    assert len(world.foldctl("inbox", "--limit", "100")[1]["observations"]) == 16


def _raw_session(url: str, headers: dict, calls: list[tuple[str, dict]]) -> list[httpx.Response]:
    """initialize, initialized, then each tools/call with ``headers`` on every request; every response."""
    answers = [httpx.post(url, json=INITIALIZE, headers={**HEADERS, **headers})]
    session = answers[0].headers.get("mcp-session-id")
    more = {**HEADERS, **headers, **({"Mcp-Session-Id": session} if session else {}),
            "MCP-Protocol-Version": "2025-11-25"}
    answers.append(httpx.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=more))
    for number, (name, arguments) in enumerate(calls, start=2):
        answers.append(httpx.post(url, json={"jsonrpc": "2.0", "id": number, "method": "tools/call",
                                             "params": {"name": name, "arguments": arguments}},
                                  headers=more, timeout=60))
    return answers


REPORT = ("fold_report", {"agent": "evil", "title": "Rebound", "text": "written through DNS rebinding"})


def test_the_host_check_covers_every_loopback_address(tmp_path):
    """``--host 127.0.0.2`` (loopback, so no token): a rebinding page's Host or Origin is refused, nothing written."""
    world = World(tmp_path)
    with world.http("--host", "127.0.0.2") as (url, _process):
        port = url.split(":")[2].split("/")[0]
        foreign = _raw_session(url, {"Host": "attacker.example"}, [REPORT])
        wrong_port = _raw_session(url, {"Host": "127.0.0.2:1"}, [REPORT])
        from_page = _raw_session(url, {"Origin": "http://attacker.example"}, [REPORT])
        own = _raw_session(url, {"Origin": f"http://127.0.0.2:{port}"},
                           [("fold_report", {"agent": "cursor", "title": "Own", "text": "from this machine"})])
    assert url.startswith("http://127.0.0.2:")
    assert {r.status_code for r in foreign + wrong_port} == {421}
    assert {r.status_code for r in from_page} == {403}
    assert codes(foreign[0].json()["error"]["data"]) == ["invalid_host"]
    assert own[0].status_code == 200 and own[-1].json()["result"]["isError"] is False
    titles = [o["title"] for o in world.foldctl("inbox", "--limit", "100")[1]["observations"]]
    assert titles == ["Own"]


def test_wrong_tokens_are_throttled(tmp_path):
    """Five wrong tokens from one address: the next try is 429 with Retry-After, even with the right token."""
    world = World(tmp_path, mcp='token_env = "FOLD_TEST_MCP_TOKEN"\n')
    with world.http(env={"FOLD_TEST_MCP_TOKEN": TOKEN}) as (url, _process):
        before = httpx.post(url, json=INITIALIZE, headers={**HEADERS, "Authorization": f"Bearer {TOKEN}"})
        wrong = [httpx.post(url, json=INITIALIZE, headers={**HEADERS, "Authorization": f"Bearer guess-{n:012d}"})
                 for n in range(5)]
        limited = httpx.post(url, json=INITIALIZE, headers={**HEADERS, "Authorization": f"Bearer {TOKEN}"})
        guessing = httpx.post(url, json=INITIALIZE, headers={**HEADERS, "Authorization": "Bearer guess-more"})
    assert before.status_code == 200
    assert [r.status_code for r in wrong] == [401] * 5
    assert limited.status_code == 429 and guessing.status_code == 429
    assert int(limited.headers["retry-after"]) >= 1
    assert codes(limited.json()["error"]["data"]) == ["too_many_wrong_tokens"]


def test_error_messages_do_not_echo_a_huge_value(tmp_path):
    """A megabyte in a tool's name or argument: the error document names it, but short."""
    world = World(tmp_path)
    huge = "x" * 1_000_000
    with world.http() as (url, _process):
        answers = _raw_session(url, {}, [(huge, {}), ("fold_state", {"kinds": [huge]}),
                                         ("fold_item", {"id": huge}), ("fold_annotate", {"item": huge, "text": "t"})])
        unknown = httpx.post(url, json={"jsonrpc": "2.0", "id": 9, "method": huge}, headers={
            **HEADERS, "Mcp-Session-Id": answers[0].headers["mcp-session-id"], "MCP-Protocol-Version": "2025-11-25"})
    for answer in answers[2:]:
        assert answer.status_code == 200 and answer.json()["result"]["isError"] is True
        assert len(answer.content) < 8_000, answer.content[:300]
        assert "characters, cut)" in answer.text
    assert unknown.json()["error"]["message"] == "Method not found"  # the SDK's own error, which quotes it
    assert len(unknown.content) < 8_000 and "characters, cut)" in unknown.text


def test_the_host_policy_of_each_kind_of_bind():
    from fold_host.web.security import HostPolicy

    loopback, other, wildcard = (HostPolicy("127.0.0.1", 8766), HostPolicy("127.0.0.2", 8766),
                                 HostPolicy("0.0.0.0", 8766, machine_names=frozenset({"fold-box"})))
    assert [loopback.host_allowed(h) for h in ("127.0.0.1:8766", "localhost:8766", "[::1]:8766", "127.0.0.2:8766",
                                               "127.0.0.1:9", "evil.example:8766", None)] == \
        [True, True, True, False, False, False, False]
    assert [other.host_allowed(h) for h in ("127.0.0.2:8766", "localhost:8766", "127.0.0.1:8766")] == \
        [True, False, False]
    assert [wildcard.host_allowed(h) for h in ("192.168.1.20:8766", "[fe80::1]:8766", "fold-box:8766",
                                               "localhost:8766", "attacker.example:8766", "fold-box:80")] == \
        [True, True, True, True, False, False]
    assert HostPolicy("127.0.0.1", 80).host_allowed("127.0.0.1")  # the default port may go unwritten
    assert [other.origin_allowed(o) for o in (None, "http://127.0.0.2:8766", "https://127.0.0.2:8766",
                                               "http://attacker.example:8766", "null")] == \
        [True, True, False, False, False]
