"""An agent asks, the user answers, the asker hears back — both routes (contract §3.6, §10, §11.2).

Real processes on a real store and host.db: a work-log ``question`` line
(read by the ``worklog`` adapter) and ``fold_ask`` over a real ``foldctl mcp``
stdio session each become a needs-you item carrying the frame (a scripted
editor raises every question verbatim); the user answers with ``foldctl
decide`` and with ``fold_decide``; the asker gets exactly one line in the
instance's answers file / one ``fold_answers`` entry per answer, never twice
however many cycles run. A stale digest stores nothing; a passed
``decide_by`` falls back once.
"""

from __future__ import annotations

import json
import sys
from contextlib import asynccontextmanager
from pathlib import Path

import anyio

from fold_core.kernel.decision import frame_digest
from fold_host.hostdb import open_host_db
from tests.support.host_workspace import Workspace

FOLDCTL = str(Path(sys.executable).parent / "foldctl")
ASKED = "2026-12-08T09:00:00+08:00"
OPTIONS = [{"id": "mitigate", "label": "先临时缓解", "consequence": "今天恢复登录；下周仍需迁移"},
           {"id": "migrate", "label": "本周迁移", "consequence": "周四停服 2 小时，根治"}]
FALLBACK = {"option": "mitigate", "summary": "周五 18:00 前无答复则先缓解"}
QUESTION = "先临时缓解，还是本周迁移到按字段合并？"


def workspace(tmp_path: Path) -> Workspace:
    (tmp_path / "logs").mkdir(parents=True)
    return Workspace(tmp_path, sources=(), script=["frames"], extra='''
        [[adapters]]
        name = "agent-log"
        type = "worklog"
        every = "1m"
        path = "logs"
        answers = "answers.jsonl"

        [mcp]
        source = "agents"
        ''')


def ask_in_log(ws: Workspace, **line) -> None:
    record = {"type": "question", "id": "q-17", "agent": "codex", "at": ASKED, "question": QUESTION,
              "options": OPTIONS, "recommended": "mitigate", "basis": "负载测试显示迁移需停服 2 小时。",
              "fallback": FALLBACK, "decide_by": "2026-12-11T18:00:00+08:00", **line}
    with open(ws.root / "logs" / "codex.jsonl", "a", encoding="utf-8") as log:
        log.write(json.dumps(record, ensure_ascii=False) + "\n")


def answer_lines(ws: Workspace) -> list[dict]:
    path = ws.root / "answers.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()] if path.exists() else []


def decisions(ws: Workspace, now: str) -> list[dict]:
    code, out, err = ws.call("decisions", "--now", now, "--format", "json")
    assert code == 0, err
    return json.loads(out)["decisions"]


def feedback_count(ws: Workspace) -> int:
    with open_host_db(str(ws.store)) as db:
        return len(db.observations(source="feedback", limit=1000))


@asynccontextmanager
async def mcp_session(ws: Workspace, now: str):
    from mcp import ClientSession, StdioServerParameters, stdio_client

    params = StdioServerParameters(command=FOLDCTL, args=["--config", str(ws.config), "mcp", "--now", now],
                                   env=ws.env(), cwd=str(ws.root))
    with open(ws.root / "mcp-stderr.log", "a", encoding="utf-8") as log:
        async with stdio_client(params, errlog=log) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                yield session
    assert "Traceback" not in (ws.root / "mcp-stderr.log").read_text(encoding="utf-8")


def mcp_calls(ws: Workspace, now: str, *calls: tuple[str, dict]) -> list[tuple[dict, bool]]:
    """Each tool call's ``(document, is_error)``, in one session of a real ``foldctl mcp``."""
    async def scenario():
        answers = []
        async with mcp_session(ws, now) as session:
            for name, arguments in calls:
                result = await session.call_tool(name, arguments)
                answers.append((json.loads(result.content[0].text), bool(result.is_error)))
        return answers

    return anyio.run(scenario)


def test_the_work_log_route_asks_is_answered_from_the_cli_and_hears_back_once(tmp_path):
    ws = workspace(tmp_path)
    ask_in_log(ws)
    ask_in_log(ws, id="q-bad", recommended="later")  # refused with a why, the good line still read
    report = ws.tick("2026-12-08T09:01:00+08:00")
    assert report["outcome"] == "committed"
    (listed,) = decisions(ws, "2026-12-08T09:02:00+08:00")
    assert listed["item"] == "q-q-17" and listed["question"] == QUESTION and listed["status"] == "open"
    assert [o["id"] for o in listed["options"]] == ["mitigate", "migrate"] and listed["fallback"] == FALLBACK
    assert listed["asked_by"] == {"source": "agent-log", "question_id": "q-17"}
    digest = listed["digest"]
    events = ws.requests()[0]["input"]["events"]
    assert [(e["meta"]["question_id"], e["thread"]) for e in events] == [("q-17", "question:q-17")]

    code, out, err = ws.call("decide", "--item", "q-q-17", "--option", "migrate", "--digest", digest,
                             "--note", "本周做完", "--now", "2026-12-08T10:00:00+08:00", "--format", "json")
    assert code == 0, err
    assert answer_lines(ws) == []  # the daemon's next window routes it, not the command
    ws.tick("2026-12-08T10:00:05+08:00")
    ws.tick("2026-12-08T10:05:00+08:00")  # another cycle writes nothing twice
    assert answer_lines(ws) == [{"question_id": "q-17", "status": "answered", "option": "migrate",
                                 "note": "本周做完", "at": "2026-12-08T10:00:00+08:00", "item": "q-q-17"}]
    # the editor saw the answer like any feedback, and the deadline passing later falls back to nothing
    events = [e for r in ws.requests() for e in r["input"]["events"]]
    assert any((e.get("feedback") or {}).get("option") == "migrate" for e in events)
    ws.tick("2026-12-12T09:00:00+08:00")
    assert len(answer_lines(ws)) == 1 and decisions(ws, "2026-12-12T09:00:00+08:00")[0]["status"] == "answered"

    # a change of mind relayed over MCP reaches the work-log asker as exactly one more line
    ((done, error),) = mcp_calls(ws, "2026-12-12T10:00:00+08:00",
                                 ("fold_decide", {"item": "q-q-17", "option": "mitigate", "digest": digest}))
    assert not error and done["ok"], done
    ws.tick("2026-12-12T10:00:05+08:00")
    ws.tick("2026-12-12T10:10:00+08:00")
    assert [(line["option"], line["at"]) for line in answer_lines(ws)] == \
        [("migrate", "2026-12-08T10:00:00+08:00"), ("mitigate", "2026-12-12T10:00:00+08:00")]


def test_the_mcp_route_asks_is_answered_over_mcp_and_a_stale_digest_stores_nothing(tmp_path):
    ws = workspace(tmp_path)
    ws.tick("2026-12-08T08:00:00+08:00")  # the first tick creates the store
    asked = {"agent": "claude", "question": QUESTION, "options": OPTIONS, "recommended": "mitigate",
             "fallback": FALLBACK, "decide_by": "2026-12-11T18:00:00+08:00", "question_id": "auth-7",
             "context": "登录服务的 refresh token 过期策略有误。"}
    (ask, _), (again, _), (conflict, conflict_error), (bad, bad_error), (empty, _) = mcp_calls(
        ws, ASKED, ("fold_ask", asked), ("fold_ask", asked), ("fold_ask", {**asked, "question": "另一个问题？"}),
        ("fold_ask", {**asked, "question_id": "x", "fallback": {"summary": "s", "option": "wait"}}),
        ("fold_answers", {"agent": "claude"}))
    assert ask["ok"] and ask["new"] and ask["question_id"] == "auth-7"
    assert ask["observation"]["id"] == "agents:question/auth-7"
    assert again["ok"] and again["new"] is False
    assert conflict_error and conflict["errors"][0]["code"] == "question_conflict"
    assert bad_error and bad["errors"][0]["code"] == "unknown_option" and bad["errors"][0]["field"] == "fallback.option"
    assert empty["answers"] == [{"question_id": "auth-7", "source": "agents", "agent": "claude", "item": None,
                                 "status": "open", "option": None, "note": None, "at": ASKED, "digest": None}]

    ws.tick("2026-12-08T09:01:00+08:00")
    (listed,) = decisions(ws, "2026-12-08T09:02:00+08:00")
    assert listed["asked_by"] == {"source": "agents", "question_id": "auth-7"}
    digest = listed["digest"]
    assert digest == frame_digest({"question": QUESTION, "options": OPTIONS, "recommended": "mitigate",
                                   "fallback": FALLBACK, "decide_by": "2026-12-11T18:00:00+08:00",
                                   "evidence": "complete"})
    before = feedback_count(ws)
    (stale, stale_error), (done, done_error), (answers, _) = mcp_calls(
        ws, "2026-12-08T10:00:00+08:00",
        ("fold_decide", {"item": listed["item"], "option": "mitigate", "digest": "0123456789abcdef"}),
        ("fold_decide", {"item": listed["item"], "option": "mitigate", "digest": digest, "note": "先止血"}),
        ("fold_answers", {"question_id": "auth-7"}))
    assert stale_error and stale["errors"][0]["code"] == "stale_decision" and stale["errors"][0]["current"] == digest
    assert not done_error and done["ok"] and done["observation"]["feedback"]["via"] == "mcp"
    assert feedback_count(ws) == before + 1  # the stale answer stored nothing
    assert answers["answers"] == [{"question_id": "auth-7", "source": "agents", "agent": "claude",
                                   "item": listed["item"], "status": "answered", "option": "mitigate",
                                   "note": "先止血", "at": "2026-12-08T10:00:00+08:00", "digest": digest}]
    ws.tick("2026-12-08T10:01:00+08:00")
    ws.tick("2026-12-12T10:00:00+08:00")  # past decide_by: answered, so no fallback
    ((later, _),) = mcp_calls(ws, "2026-12-12T10:00:00+08:00", ("fold_answers", {"since": "2026-12-08T09:30:00+08:00"}))
    assert [(a["status"], a["option"]) for a in later["answers"]] == [("answered", "mitigate")]
    assert answer_lines(ws) == []  # the MCP source has no answers file
    # answered again from the command line: the MCP asker reads the new answer, still one entry
    code, out, err = ws.call("decide", "--item", listed["item"], "--option", "migrate", "--now",
                             "2026-12-12T11:00:00+08:00", "--format", "json")
    assert code == 0, err
    ((latest, _),) = mcp_calls(ws, "2026-12-12T11:00:00+08:00", ("fold_answers", {"question_id": "auth-7"}))
    assert [(a["status"], a["option"], a["at"]) for a in latest["answers"]] == \
        [("answered", "migrate", "2026-12-12T11:00:00+08:00")]


def test_a_passed_decide_by_falls_back_once_and_the_asker_hears_it(tmp_path):
    ws = workspace(tmp_path)
    ask_in_log(ws, decide_by="2026-12-08T12:00:00+08:00")
    ws.tick("2026-12-08T09:01:00+08:00")
    ws.tick("2026-12-08T11:59:59+08:00")
    assert decisions(ws, "2026-12-08T11:59:59+08:00")[0]["status"] == "open" and answer_lines(ws) == []
    for now in ("2026-12-08T12:00:00+08:00", "2026-12-08T12:00:30+08:00", "2026-12-08T13:00:00+08:00"):
        ws.tick(now)
    (listed,) = decisions(ws, "2026-12-08T13:00:00+08:00")
    assert listed["status"] == "fell_back" and listed["answer"]["option"] == "mitigate"
    assert listed["answer"]["via"] == "host"
    assert answer_lines(ws) == [{"question_id": "q-17", "status": "fell_back", "option": "mitigate", "note": None,
                                 "at": "2026-12-08T12:00:00+08:00", "item": "q-q-17"}]
    fallbacks = [e for r in ws.requests() for e in r["input"]["events"]
                 if (e.get("feedback") or {}).get("meaning") == "fallback"]
    assert len(fallbacks) == 1 and fallbacks[0]["feedback"]["option"] == "mitigate"
    assert fallbacks[0]["feedback"]["target"] == "q-q-17"
    code, out, err = ws.call("decisions", "--status", "fell_back", "--now", "2026-12-08T13:00:00+08:00",
                             "--format", "text")
    assert code == 0, err
    assert "fell back to mitigate" in out and "asked by agent-log: q-17" in out
    ((answers, _),) = mcp_calls(ws, "2026-12-08T13:00:00+08:00", ("fold_answers", {}))
    assert [(a["question_id"], a["status"], a["option"]) for a in answers["answers"]] == \
        [("q-17", "fell_back", "mitigate")]
