"""Decisions end to end with the default (baseline) editor: no scripted editor anywhere.

Real processes on a real store and host.db in a temporary directory: an
agent asks through a work-log ``question`` line (the ``worklog`` adapter) or
through ``fold_ask`` over a real ``foldctl mcp`` stdio session; ``foldctl
tick`` runs the baseline editor, which raises the question as a needs-you
item with the frame verbatim; the user answers with one click on the
Pinboard in Debian's Chromium (one browser for the module), with ``foldctl
decide`` or with ``fold_decide``; the next cycles route the answer back (the
answers file, ``fold_answers``) exactly once, and the baseline moves the
item on. A stale digest stores nothing (CLI, Pinboard, MCP); a passed
``decide_by`` falls back once (``tick --now``, and real ``foldctl run``
daemons SIGKILLed and restarted around the deadline on the real clock).
The answers and the fallback read as text (``foldctl inbox show``, the
Pinboard's observation page).
"""

from __future__ import annotations

import json
import signal
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from fold_host.hostdb import open_host_db
from fold_host.pinboard.app import create_app
from fold_host.web.server import Bind, ServerThread
from tests.e2e.test_agent_questions import FALLBACK, OPTIONS, QUESTION
from tests.e2e.test_agent_questions import mcp_calls as mcp_session_calls
from tests.integration.test_pinboard_decisions import chromium  # noqa: F401  (the module's one browser)
from tests.support.host_workspace import Workspace

ZONE = "Asia/Shanghai"
ASKED = "2026-12-08T09:00:00+08:00"
DECIDE_BY = "2026-12-11T18:00:00+08:00"
BASIS = "负载测试显示迁移需停服 2 小时。"


def workspace(tmp_path: Path) -> Workspace:
    """A host whose editor is the baseline (no ``[agent]``), with a work-log instance and an MCP source."""
    (tmp_path / "logs").mkdir(parents=True)
    return Workspace(tmp_path, sources=(), agent="", host=f'timezone = "{ZONE}"\n', extra='''
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
              "options": OPTIONS, "recommended": "mitigate", "basis": BASIS, "fallback": FALLBACK,
              "decide_by": DECIDE_BY, **line}
    with open(ws.root / "logs" / "codex.jsonl", "a", encoding="utf-8") as log:
        log.write(json.dumps(record, ensure_ascii=False) + "\n")


def answer_lines(ws: Workspace) -> list[dict]:
    path = ws.root / "answers.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()] if path.exists() else []


def decisions(ws: Workspace, now: str, *args: str) -> list[dict]:
    code, out, err = ws.call("decisions", "--now", now, "--format", "json", *args)
    assert code == 0, err
    return json.loads(out)["decisions"]


def item(ws: Workspace, item_id: str, now: str) -> dict:
    code, document, err = ws.run("state", "--now", now, "--item", item_id, "--depth", "0")
    assert code == 0, (document, err)
    return document["item"]


def feedback_count(ws: Workspace) -> int:
    with open_host_db(str(ws.store)) as db:
        return len(db.observations(source="feedback", limit=1000))


def mcp_calls(ws: Workspace, now: str, *calls: tuple[str, dict]) -> list[tuple[dict, bool]]:
    """One real ``foldctl mcp`` session's answers; in a thread of its own, since the module's Chromium
    (Playwright's sync API) holds this thread's event loop."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(mcp_session_calls, ws, now, *calls).result()


def inbox_text(ws: Workspace, observation_id: str) -> str:
    code, out, err = ws.call("inbox", "show", observation_id, "--format", "json")
    assert code == 0, err
    return json.loads(out)["observation"]["text"]


def answer_ids(ws: Workspace, meaning: str) -> list[str]:
    with open_host_db(str(ws.store)) as db:
        kept = db.observations_by_id([row["id"] for row in db.observations(source="feedback", limit=1000)])
    return [o.id for o in kept if (o.feedback or {}).get("meaning") == meaning]


def wait_for(condition, timeout: float = 90.0, every: float = 0.2):
    """Wait for a condition (never a fixed sleep asserted on)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(every)
    raise AssertionError("condition not met in time")


def serve(ws: Workspace, clock: datetime):
    app = create_app(str(ws.store), timezone=ZONE, language="en", clock=lambda: clock, board_cache=0)
    return ServerThread(app, Bind("127.0.0.1", 0, None))


@pytest.fixture
def page(chromium):  # noqa: F811
    context = chromium.new_context(viewport={"width": 1280, "height": 900})
    tab = context.new_page()
    errors: list[str] = []
    tab.on("pageerror", lambda error: errors.append(str(error)))
    yield tab
    context.close()
    assert errors == []


def raised(ws: Workspace, now: str) -> dict:
    """The one decision the baseline raised from the agent's question, checked verbatim."""
    (listed,) = decisions(ws, now)
    assert listed["status"] == "open" and listed["question"] == QUESTION
    assert listed["options"] == OPTIONS  # ids, labels and consequences as the agent gave them
    assert (listed["recommended"], listed["fallback"], listed["decide_by"]) == ("mitigate", FALLBACK, DECIDE_BY)
    frame = item(ws, listed["item"], now)["decision"]
    assert frame["basis"] == BASIS and frame["digest"] == listed["digest"]
    return listed


def test_work_log_question_raised_by_the_baseline_answered_by_one_click_heard_back_once(tmp_path, page):
    ws = workspace(tmp_path)
    ask_in_log(ws)
    assert ws.tick("2026-12-08T09:01:00+08:00")["outcome"] == "committed"
    listed = raised(ws, "2026-12-08T09:02:00+08:00")
    assert listed["asked_by"] == {"source": "agent-log", "question_id": "q-17"}
    item_id, digest = listed["item"], listed["digest"]
    before = item(ws, item_id, "2026-12-08T09:02:00+08:00")
    assert before["kind"] == "needs-you"

    with serve(ws, datetime.fromisoformat("2026-12-08T10:00:00+08:00")) as server:
        page.goto(server.url + f"item/{item_id}")
        assert page.locator("#decision").get_attribute("data-digest") == digest
        assert page.locator("#decision button").all_inner_texts() == ["先临时缓解", "本周迁移"]
        page.click("#decision li[data-option=migrate] button")  # the one click
        assert "You chose “本周迁移”" in page.locator("#notice").inner_text()
        # The answer reads as one: on its observation page and in `foldctl inbox show`.
        (answer_id,) = answer_ids(ws, "decide")
        page.goto(server.url + f"observation/{answer_id}")
        assert "decided: 本周迁移" in page.locator("main").inner_text()
    assert inbox_text(ws, answer_id) == "decided: 本周迁移"
    assert answer_lines(ws) == []  # the next cycle routes it, not the click

    for now in ("2026-12-08T10:01:00+08:00", "2026-12-08T10:05:00+08:00", "2026-12-12T09:00:00+08:00"):
        ws.tick(now)  # more cycles, and decide_by passing after the answer, write nothing more
    (line,) = answer_lines(ws)
    assert (line["question_id"], line["status"], line["option"], line["item"]) == \
        ("q-17", "answered", "migrate", item_id)
    (answered,) = decisions(ws, "2026-12-12T09:00:00+08:00", "--status", "answered")
    assert answered["item"] == item_id and answered["answer"]["option"] == "migrate"
    assert answered["answer"]["via"] == "button" and answered["asked_by"] == listed["asked_by"]
    # The baseline moved the item on: the frame cleared, the summary states the decision.
    after = item(ws, item_id, "2026-12-12T09:00:00+08:00")
    assert after.get("decision") is None and after["kind"] == "in-progress"
    assert "本周迁移" in after["summary"]


def test_mcp_question_raised_by_the_baseline_answered_from_the_cli_then_over_mcp(tmp_path):
    ws = workspace(tmp_path)
    ws.tick("2026-12-08T08:00:00+08:00")  # the first tick creates the store
    asked = {"agent": "claude", "question": QUESTION, "options": OPTIONS, "recommended": "mitigate",
             "basis": BASIS, "fallback": FALLBACK, "decide_by": DECIDE_BY, "question_id": "auth-7",
             "context": "登录服务的 refresh token 过期策略有误。"}
    ((ask, ask_error),) = mcp_calls(ws, ASKED, ("fold_ask", asked))
    assert not ask_error and ask["ok"] and ask["new"], ask
    ws.tick("2026-12-08T09:01:00+08:00")
    listed = raised(ws, "2026-12-08T09:02:00+08:00")
    assert listed["asked_by"] == {"source": "agents", "question_id": "auth-7"}
    item_id, digest = listed["item"], listed["digest"]

    before = feedback_count(ws)
    code, out, err = ws.call("decide", "--item", item_id, "--option", "migrate", "--digest", "0123456789abcdef",
                             "--now", "2026-12-08T09:59:00+08:00", "--format", "json")
    assert code == 1 and json.loads(out)["errors"][0]["code"] == "stale_decision"
    assert feedback_count(ws) == before  # a stale digest from the command line stores nothing
    code, out, err = ws.call("decide", "--item", item_id, "--option", "mitigate", "--digest", digest,
                             "--note", "先止血", "--now", "2026-12-08T10:00:00+08:00", "--format", "json")
    assert code == 0, err
    assert inbox_text(ws, json.loads(out)["observation"]["id"]) == "decided: 先临时缓解 — 先止血"
    ws.tick("2026-12-08T10:01:00+08:00")
    ((heard, _),) = mcp_calls(ws, "2026-12-08T10:02:00+08:00", ("fold_answers", {"agent": "claude"}))
    assert [(a["question_id"], a["status"], a["option"], a["note"], a["item"]) for a in heard["answers"]] == \
        [("auth-7", "answered", "mitigate", "先止血", item_id)]

    # The baseline cleared the frame after the answer: a change of mind over MCP finds no frame to answer...
    moved = item(ws, item_id, "2026-12-08T10:02:00+08:00")
    assert moved.get("decision") is None and "先临时缓解" in moved["summary"]
    before = feedback_count(ws)
    (stale, stale_error), (late, late_error), (still, _) = mcp_calls(
        ws, "2026-12-08T11:00:00+08:00",
        ("fold_decide", {"item": item_id, "option": "migrate", "digest": "0123456789abcdef"}),
        ("fold_decide", {"item": item_id, "option": "migrate"}),
        ("fold_answers", {"question_id": "auth-7"}))
    assert stale_error and stale["errors"][0]["code"] == "no_decision"
    assert late_error and late["errors"][0]["code"] == "no_decision"
    assert feedback_count(ws) == before  # nothing stored
    assert [(a["status"], a["option"]) for a in still["answers"]] == [("answered", "mitigate")]


def test_mcp_change_of_mind_before_the_cycle_and_a_stale_digest_over_mcp(tmp_path):
    ws = workspace(tmp_path)
    ws.tick("2026-12-08T08:00:00+08:00")
    asked = {"agent": "claude", "question": QUESTION, "options": OPTIONS, "recommended": "mitigate",
             "basis": BASIS, "fallback": FALLBACK, "decide_by": DECIDE_BY, "question_id": "auth-7"}
    mcp_calls(ws, ASKED, ("fold_ask", asked))
    ws.tick("2026-12-08T09:01:00+08:00")
    listed = raised(ws, "2026-12-08T09:02:00+08:00")
    item_id, digest = listed["item"], listed["digest"]
    code, out, err = ws.call("decide", "--item", item_id, "--option", "mitigate", "--now",
                             "2026-12-08T10:00:00+08:00", "--format", "json")
    assert code == 0, err
    before = feedback_count(ws)
    (stale, stale_error), (changed, changed_error), (heard, _) = mcp_calls(
        ws, "2026-12-08T10:00:30+08:00",
        ("fold_decide", {"item": item_id, "option": "migrate", "digest": "0123456789abcdef"}),
        ("fold_decide", {"item": item_id, "option": "migrate", "digest": digest, "note": "还是迁移"}),
        ("fold_answers", {"question_id": "auth-7"}))
    assert stale_error and stale["errors"][0]["code"] == "stale_decision" and stale["errors"][0]["current"] == digest
    assert not changed_error and changed["ok"], changed
    assert inbox_text(ws, changed["observation"]["id"]) == "decided: 本周迁移 — 还是迁移"
    assert feedback_count(ws) == before + 1  # the stale answer stored nothing
    # One entry: the latest answer stands.
    assert [(a["status"], a["option"], a["note"]) for a in heard["answers"]] == [("answered", "migrate", "还是迁移")]
    ws.tick("2026-12-08T10:01:00+08:00")
    ((after, _),) = mcp_calls(ws, "2026-12-08T10:02:00+08:00", ("fold_answers", {"question_id": "auth-7"}))
    assert [(a["status"], a["option"]) for a in after["answers"]] == [("answered", "migrate")]
    moved = item(ws, item_id, "2026-12-08T10:02:00+08:00")
    assert moved.get("decision") is None and "本周迁移" in moved["summary"]


def test_a_pinboard_click_on_a_frame_the_agent_changed_stores_nothing(tmp_path, page):
    ws = workspace(tmp_path)
    ask_in_log(ws)
    ws.tick("2026-12-08T09:01:00+08:00")
    listed = raised(ws, "2026-12-08T09:02:00+08:00")
    item_id = listed["item"]
    with serve(ws, datetime.fromisoformat("2026-12-08T10:00:00+08:00")) as server:
        page.goto(server.url + f"item/{item_id}")
        old_digest = page.locator("#decision").get_attribute("data-digest")
        # While the page is open the agent asks again under the same id with a later deadline; the
        # baseline carries the new frame over the old one.
        ask_in_log(ws, decide_by="2026-12-12T18:00:00+08:00", at="2026-12-08T09:30:00+08:00")
        ws.tick("2026-12-08T09:35:00+08:00")
        new_digest = item(ws, item_id, "2026-12-08T09:36:00+08:00")["decision"]["digest"]
        assert new_digest != old_digest
        before = feedback_count(ws)
        page.click("#decision li[data-option=migrate] button")
        stale = page.locator("#stale").inner_text()
        assert "your answer was not saved" in stale and "The time to decide by changed" in stale
        assert feedback_count(ws) == before
        assert page.locator("#decision").get_attribute("data-digest") == new_digest
    ws.tick("2026-12-08T10:01:00+08:00")
    assert answer_lines(ws) == []
    assert decisions(ws, "2026-12-08T10:02:00+08:00")[0]["status"] == "open"


def test_a_passed_decide_by_falls_back_once_with_the_baseline(tmp_path):
    ws = workspace(tmp_path)
    ask_in_log(ws, decide_by="2026-12-08T12:00:00+08:00")
    ws.tick("2026-12-08T09:01:00+08:00")
    (listed,) = decisions(ws, "2026-12-08T09:02:00+08:00")
    item_id = listed["item"]
    for now in ("2026-12-08T11:59:59+08:00", "2026-12-08T12:00:00+08:00", "2026-12-08T12:00:30+08:00",
                "2026-12-08T13:00:00+08:00"):
        ws.tick(now)
    assert answer_lines(ws) == [{"question_id": "q-17", "status": "fell_back", "option": "mitigate", "note": None,
                                 "at": "2026-12-08T12:00:00+08:00", "item": item_id}]
    with open_host_db(str(ws.store)) as db:
        kept = db.observations_by_id([row["id"] for row in db.observations(source="feedback", limit=1000)])
    fallbacks = [o for o in kept if (o.feedback or {}).get("meaning") == "fallback"]
    assert len(fallbacks) == 1 and fallbacks[0].feedback["option"] == "mitigate"
    assert inbox_text(ws, fallbacks[0].id) == f"fallback after 2026-12-08T12:00:00+08:00: {FALLBACK['summary']}"
    (fell,) = decisions(ws, "2026-12-08T13:00:00+08:00", "--status", "fell_back")
    assert fell["item"] == item_id and fell["answer"]["via"] == "host"
    moved = item(ws, item_id, "2026-12-08T13:00:00+08:00")
    assert moved.get("decision") is None and moved["kind"] == "in-progress"
    assert FALLBACK["summary"] in moved["summary"]


def test_a_deadline_passing_while_the_baseline_daemon_is_dead_falls_back_once_after_the_restart(tmp_path):
    """Real ``foldctl run`` processes on the real clock, the baseline editing: SIGKILL before the deadline,
    restart after it, SIGKILL again once it fell back, a third daemon records nothing more."""
    (tmp_path / "logs").mkdir(parents=True)
    ws = Workspace(tmp_path, sources=(), agent="", host='review_every = "1d"\ninput_delay = "1s"\n', extra='''
        [[adapters]]
        name = "agent-log"
        type = "worklog"
        every = "1s"
        path = "logs"
        answers = "answers.jsonl"
        ''')
    ws.tick(datetime.now(timezone.utc).isoformat(timespec="seconds"))  # the store exists
    decide_by = datetime.now(timezone.utc).replace(microsecond=0) + timedelta(seconds=20)  # room to kill first
    ask_in_log(ws, id="q-9", at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
               decide_by=decide_by.isoformat())

    def listed() -> list[dict]:
        return decisions(ws, datetime.now(timezone.utc).isoformat(timespec="seconds"))

    def daemon(name: str, until, stop: int) -> None:
        with open(ws.root / name, "wb") as log:
            run = ws.spawn("run", stderr=log)
            try:
                wait_for(until)
            finally:
                run.send_signal(stop)
                run.wait(timeout=30)

    daemon("run1.log", lambda: listed(), signal.SIGKILL)
    (open_one,) = listed()
    assert open_one["status"] == "open" and answer_lines(ws) == []
    wait_for(lambda: datetime.now(timezone.utc) > decide_by + timedelta(seconds=1))
    daemon("run2.log", lambda: len(answer_lines(ws)) == 1, signal.SIGKILL)
    daemon("run3.log", lambda: b" cycle " in (ws.root / "run3.log").read_bytes(), signal.SIGTERM)
    assert len(answer_ids(ws, "fallback")) == 1
    (line,) = answer_lines(ws)
    assert (line["question_id"], line["status"], line["option"], line["item"]) == \
        ("q-9", "fell_back", "mitigate", open_one["item"])
    assert b"Traceback" not in b"".join((ws.root / f"run{n}.log").read_bytes() for n in (1, 2, 3))
    moved = item(ws, open_one["item"], datetime.now(timezone.utc).isoformat(timespec="seconds"))
    assert moved.get("decision") is None and FALLBACK["summary"] in moved["summary"]
