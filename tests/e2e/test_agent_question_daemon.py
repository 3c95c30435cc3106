"""The daemon and the user's decisions: a passed ``decide_by`` falls back once, also across SIGKILL and restart;
the user's word (an annotation) wakes the next window within ``[host] input_delay`` (contract §3.6, §11.1, §11.2).

Real ``foldctl run`` processes on the real clock; every wait is for a condition (never a fixed sleep asserted
on), with ``review_every = "1d"`` so only the deadline or the user's word can start the windows waited for.
"""

from __future__ import annotations

import json
import signal
import time
from datetime import datetime, timedelta, timezone

from fold_host.hostdb import open_host_db
from tests.e2e.test_agent_questions import FALLBACK, OPTIONS, QUESTION, answer_lines
from tests.support.host_workspace import Workspace


def wait_for(condition, timeout: float = 90.0, every: float = 0.2):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(every)
    raise AssertionError("condition not met in time")


def workspace(tmp_path) -> Workspace:
    (tmp_path / "logs").mkdir(parents=True)
    return Workspace(tmp_path, sources=(), script=["frames"], host='review_every = "1d"\ninput_delay = "1s"\n',
                     extra='''
        [[adapters]]
        name = "agent-log"
        type = "worklog"
        every = "1s"
        path = "logs"
        answers = "answers.jsonl"
        ''')


def ask(ws: Workspace, decide_by: datetime) -> None:
    record = {"type": "question", "id": "q-9", "agent": "codex", "at": datetime.now(timezone.utc).isoformat(),
              "question": QUESTION, "options": OPTIONS, "fallback": FALLBACK,
              "decide_by": decide_by.isoformat(timespec="seconds")}
    with open(ws.root / "logs" / "codex.jsonl", "a", encoding="utf-8") as log:
        log.write(json.dumps(record, ensure_ascii=False) + "\n")


def fallbacks(ws: Workspace) -> list[dict]:
    with open_host_db(str(ws.store)) as db:
        return [o for o in db.observations(source="feedback", limit=100) if o["title"].startswith("fallback:")]


def framed(ws: Workspace) -> bool:
    code, out, _ = ws.call("decisions", "--format", "json")
    return code == 0 and any(d["item"] == "q-q-9" for d in json.loads(out)["decisions"])


def start(ws: Workspace, name: str):
    log = open(ws.root / name, "wb")
    return ws.spawn("run", stderr=log), log


def test_a_deadline_passing_while_the_daemon_is_dead_falls_back_once_after_the_restart(tmp_path):
    ws = workspace(tmp_path)
    ws.tick(datetime.now(timezone.utc).isoformat(timespec="seconds"))  # the store exists
    # room for a slow machine: the daemon must be killed before the deadline
    decide_by = datetime.now(timezone.utc).replace(microsecond=0) + timedelta(seconds=30)
    ask(ws, decide_by)
    run, log = start(ws, "run1.log")
    try:
        wait_for(lambda: framed(ws))
    finally:
        run.send_signal(signal.SIGKILL)
        run.wait(timeout=30)
        log.close()
    assert fallbacks(ws) == [] and answer_lines(ws) == []
    wait_for(lambda: datetime.now(timezone.utc) > decide_by + timedelta(seconds=1))

    run, log = start(ws, "run2.log")
    try:
        wait_for(lambda: len(answer_lines(ws)) == 1)
        # SIGKILLed again once the fallback was recorded and routed; a third daemon records nothing more
    finally:
        run.send_signal(signal.SIGKILL)
        run.wait(timeout=30)
        log.close()
    run, log = start(ws, "run3.log")
    try:
        wait_for(lambda: b" cycle " in (ws.root / "run3.log").read_bytes())
    finally:
        run.send_signal(signal.SIGTERM)
        run.wait(timeout=30)
        log.close()
    assert len(fallbacks(ws)) == 1
    (line,) = answer_lines(ws)
    assert (line["question_id"], line["status"], line["option"], line["item"]) == ("q-9", "fell_back", "mitigate",
                                                                                   "q-q-9")
    seen = [e for r in ws.requests() for e in r["input"]["events"]
            if (e.get("feedback") or {}).get("meaning") == "fallback"]
    assert len(seen) == 1 and seen[0]["feedback"]["option"] == "mitigate"
    assert b"Traceback" not in b"".join((ws.root / f"run{n}.log").read_bytes() for n in (1, 2, 3))


def test_a_running_daemon_falls_back_at_the_deadline_and_an_annotation_wakes_it(tmp_path):
    ws = workspace(tmp_path)
    ws.tick(datetime.now(timezone.utc).isoformat(timespec="seconds"))
    decide_by = datetime.now(timezone.utc).replace(microsecond=0) + timedelta(seconds=12)
    ask(ws, decide_by)
    run, log = start(ws, "run.log")
    try:
        wait_for(lambda: framed(ws))
        # nothing pending, the review a day away: only the deadline job can start the next window
        wait_for(lambda: len(answer_lines(ws)) == 1)
        assert answer_lines(ws)[0]["status"] == "fell_back"
        asked = len(ws.requests())
        code, out, err = ws.call("annotate", "--item", "q-q-9", "--text", "移动端也要验证", "--format", "json")
        assert code == 0, err
        request = wait_for(lambda: len(ws.requests()) > asked and ws.requests()[-1])
        assert request["input"]["signal"]["type"] == "review"
        assert "annotation" in request["input"]["signal"]["reason"]
        assert [a["text"] for a in request["input"]["pending_annotations"]] == ["移动端也要验证"]
        # the user changes their mind after the fallback: the answer wakes the daemon, the asker hears it
        code, out, err = ws.call("decide", "--item", "q-q-9", "--option", "migrate", "--note", "改主意了",
                                 "--format", "json")
        assert code == 0, err
        wait_for(lambda: len(answer_lines(ws)) == 2)
    finally:
        run.send_signal(signal.SIGTERM)
        run.wait(timeout=30)
        log.close()
    assert len(fallbacks(ws)) == 1
    assert [(line["status"], line["option"], line["note"]) for line in answer_lines(ws)] == \
        [("fell_back", "mitigate", None), ("answered", "migrate", "改主意了")]
    log = (ws.root / "run.log").read_bytes()
    assert b"Traceback" not in log and b" input waiting=1" in log
