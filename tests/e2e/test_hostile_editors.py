"""A hostile editor endpoint costs one failed attempt, bounded in time and memory — never the host.

Each case is a real ``foldctl tick`` process (peak memory read with
``os.wait4``) against the scripted server through the real openai and
anthropic SDKs, or a real ``command`` editor program, with ``timeout = "5s"``
and the default ``max_answer_bytes`` (1 MB):

* an endless chunked answer and a 400 MB one fail as ``too_large``;
* an answer that trickles one byte a second fails as ``timeout``;
* a program that floods stdout (300 MB) is killed as ``too_large``; one that
  trickles is killed at the timeout.

The tick returns within the timeout and a margin, its peak memory stays within
64 MB of a tick whose editor answers normally, the observation stays pending
(nothing lost) and is committed once the editor answers again.
"""

from __future__ import annotations

import json
import sys

import pytest

from fold_host.hostdb import open_host_db
from tests.support.host_workspace import REPO, Workspace
from tests.support.hostile_http import endless, oversized, trickle_body
from tests.support.llm_servers import LLMServer, hostile, respond
from tests.support.measured import run_measured

NOW = "2026-10-09T08:00:00+08:00"
LATER = "2026-10-09T09:00:00+08:00"
TIMEOUT = 5.0
MEMORY_MARGIN = 64 * 1024 * 1024
TIME_MARGIN = 5.0  # seconds past the timeout for a tick to notice, fail the attempt and finish
EDITOR = str(REPO / "tests" / "fixtures" / "command_editor.py")


def noise(request) -> str:
    """A correct answer to whatever the request holds: every event noise, an empty batch."""
    document = json.loads(request.message_texts("user")[0])
    return json.dumps({"dispositions": [{"event": e["id"], "disposition": "noise", "why": "scripted",
                                         "related": []} for e in document["events"]],
                       "batch": {"declarations": [], "acknowledges": []}})


@pytest.fixture(scope="module")
def server():
    with LLMServer() as running:
        yield running


def workspace(tmp_path, agent: str) -> Workspace:
    ws = Workspace(tmp_path, agent=agent + f'timeout = "{TIMEOUT:g}s"\n')
    ws.feed("mail", {"native": "1", "title": "签证材料", "text": "还缺近 6 个月银行流水"})
    return ws


def sdk_agent(server: LLMServer, api: str) -> str:
    url = server.openai_url if api == "openai" else server.anthropic_url
    return f'type = "{api}"\nmodel = "scripted-model"\nbase_url = "{url}"\n'


def tick(ws: Workspace, now: str = NOW):
    done = run_measured(ws.args("tick", "--now", now), cwd=ws.root, env=ws.env(), timeout=120)
    assert "Traceback" not in done.err and "internal error" not in done.err, done.err
    return done


def baseline(tmp_path, agent: str, server: LLMServer | None = None):
    """A tick whose editor answers normally: the time and memory the hostile ticks are compared with."""
    if server is not None:
        server.reset().script(respond(noise))
    done = tick(workspace(tmp_path / "baseline", agent))
    assert done.code == 0 and json.loads(done.out)["outcome"] == "checked", done.err
    return done


def assert_bounded(done, normal, kind: str) -> None:
    report = json.loads(done.out)
    assert done.code == 0 and report["outcome"] == "failed", done.err
    assert f"({kind})" in done.err or f"{kind}:" in done.err, done.err
    assert done.seconds < normal.seconds + TIMEOUT + TIME_MARGIN, (done.seconds, normal.seconds)
    grown = done.max_rss - normal.max_rss
    assert grown < MEMORY_MARGIN, f"peak {done.max_rss_mb:.0f} MB, {grown / 1024 ** 2:.0f} MB above a normal tick"


def assert_nothing_lost(ws: Workspace) -> None:
    with open_host_db(ws.store) as db:
        assert [o["status"] for o in db.observations()] == ["pending"]


HOSTILE = {"endless": (endless, (), "too_large"), "oversized": (oversized, (400 * 1024 ** 2,), "too_large"),
           "trickle": (trickle_body, (1.0,), "timeout")}


@pytest.mark.parametrize("api", ["openai", "anthropic"])
@pytest.mark.parametrize("case", list(HOSTILE))
def test_a_hostile_llm_endpoint_fails_one_attempt_within_time_and_memory(tmp_path, server, api, case):
    writer, arguments, kind = HOSTILE[case]
    normal = baseline(tmp_path, sdk_agent(server, api), server)
    ws = workspace(tmp_path / "hostile", sdk_agent(server, api))
    server.reset().script(*[hostile(writer(*arguments))] * 3)
    done = tick(ws)
    assert_bounded(done, normal, kind)
    print(f"{api} {case}: {done.seconds:.1f}s, peak {done.max_rss_mb:.0f} MB "
          f"(normal tick {normal.seconds:.1f}s, {normal.max_rss_mb:.0f} MB)")
    assert_nothing_lost(ws)
    server.reset().script(respond(noise))
    assert json.loads(tick(ws, LATER).out)["outcome"] == "checked"
    with open_host_db(ws.store) as db:
        assert [o["status"] for o in db.observations()] == ["processed"]
        calls = db.calls(limit=10)
    assert calls[-1]["outcome"] == "unavailable" and kind in calls[-1]["error"]


def command_agent(mode: str, *arguments: str) -> str:
    return f"type = \"command\"\ncommand = {json.dumps([sys.executable, EDITOR, mode, *arguments])}\n"


@pytest.mark.parametrize("case", ["flood", "trickle"])
def test_a_hostile_editor_program_is_killed_within_time_and_memory(tmp_path, case):
    normal = baseline(tmp_path, command_agent("answer"))
    ws = workspace(tmp_path / "hostile", command_agent("flood", "300") if case == "flood" else command_agent(case))
    done = tick(ws)
    kind = "too_large" if case == "flood" else "timeout"
    assert_bounded(done, normal, kind)
    print(f"command {case}: {done.seconds:.1f}s, peak {done.max_rss_mb:.0f} MB "
          f"(normal tick {normal.seconds:.1f}s, {normal.max_rss_mb:.0f} MB)")
    assert_nothing_lost(ws)
