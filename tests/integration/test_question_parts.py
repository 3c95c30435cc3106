"""The parts of an agent's question on real files and a real host.db: the work-log line, the answers file's
ledger across a crash between the append and its mark, the fallback recorded once (contract §10, §3.6)."""

from __future__ import annotations

import json
from datetime import datetime, timezone

from fold_core.kernel.decision import frame_digest
from fold_core.observation import Observation
from fold_core.store.locate import create, open_store
from fold_host.cycle.answers_file import LEDGER_PREFIX, answer_line, route_answers
from fold_host.cycle.questions import fire_fallbacks
from fold_host.hostdb import open_host_db
from tests.integration.test_worklog import Log, append

OPTIONS = [{"id": "mitigate", "label": "先临时缓解", "consequence": "今天恢复登录"}, {"id": "migrate", "label": "本周迁移"}]


def question(**fields) -> str:
    line = {"type": "question", "id": "q-17", "agent": "codex", "at": "2026-12-08T09:00:00+08:00",
            "question": "先临时缓解，还是本周迁移？", "options": OPTIONS, "recommended": "mitigate",
            "fallback": {"option": "mitigate", "summary": "周五前无答复则先缓解"},
            "decide_by": "2026-12-11T18:00:00+08:00", "context": "登录故障\n影响所有用户", **fields}
    return json.dumps(line, ensure_ascii=False) + "\n"


def test_a_question_line_carries_its_frame_and_a_bad_one_is_refused_with_a_why(tmp_path):
    append(tmp_path / "codex.jsonl", question(task="login-outage", status="blocked"))
    append(tmp_path / "codex.jsonl", question(id="q-18", fallback={"option": "wait", "summary": "s"}))
    append(tmp_path / "codex.jsonl", question(id="q-19", options=[OPTIONS[0]]))
    append(tmp_path / "codex.jsonl", question(id="q 20"))
    append(tmp_path / "codex.jsonl", json.dumps({"agent": "codex", "text": "still read", "at": "x"}) + "\n")
    result = Log(tmp_path).poll()
    first, after = result.observations
    assert first.id == "agent-log:codex.jsonl#1" and first.sender == "codex" and first.title == "先临时缓解，还是本周迁移？"
    assert first.thread == "question:q-17" and first.at == "2026-12-08T09:00:00+08:00"
    frame = first.meta["decision"]
    assert first.meta["type"] == "question" and first.meta["question_id"] == "q-17"
    assert frame == {"question": "先临时缓解，还是本周迁移？", "options": OPTIONS, "recommended": "mitigate",
                     "fallback": {"option": "mitigate", "summary": "周五前无答复则先缓解"},
                     "decide_by": "2026-12-11T18:00:00+08:00", "evidence": "complete"}
    assert first.meta["context"] == "登录故障\n影响所有用户" and first.meta["task"] == "login-outage"
    assert first.meta["status"] == "blocked"
    assert "- migrate: 本周迁移" in first.text and "Without an answer: 周五前无答复则先缓解" in first.text
    assert after.text == "still read"
    notes = "\n".join(result.health.notes)
    assert "line 2: a question refused (fallback.option): unknown_option" in notes and "wait" in notes
    assert "line 3: a question refused (options): invalid_field" in notes and "2–5" in notes
    assert "line 4: a question refused (id)" in notes


class Instance:
    def __init__(self, name: str, answers) -> None:
        self.name = name
        self.settings = type("S", (), {"answers": answers})()


def _answer(db, observation: str, option: str, at: str) -> None:
    db.add_observations([Observation(
        id=f"feedback:{observation}", source="feedback", channel="feedback", sender="user", at=at, observed_at=at,
        title="decide: q-17", feedback={"target": "q-17", "action": "decide", "meaning": "decide", "via": "cli",
                                       "option": option, "digest": "0" * 16, "asked_by": {
                                           "source": "agent-log", "question_id": "q-17"}})])


def test_the_answers_file_is_written_once_across_a_crash_between_the_append_and_its_mark(tmp_path):
    create(str(tmp_path / "store"), 64)
    path = tmp_path / "answers.jsonl"
    adapters = [(Instance("agent-log", path), None), (Instance("other", None), None)]
    with open_host_db(str(tmp_path / "store")) as db:
        _answer(db, "a1", "mitigate", "2026-12-08T10:00:00+08:00")
        assert route_answers(db, adapters, now_text="2026-12-08T10:00:01+08:00") == []
        assert route_answers(db, adapters, now_text="2026-12-08T10:00:02+08:00") == []
        assert len(path.read_text(encoding="utf-8").splitlines()) == 1
        # a change of mind, and a host that died after appending its line but before marking it
        _answer(db, "a2", "migrate", "2026-12-08T11:00:00+08:00")
        ledger = db.meta(LEDGER_PREFIX + "agent-log")
        line = answer_line({"asked_by": {"question_id": "q-17"}, "meaning": "decide", "option": "migrate",
                            "note": None, "at": "2026-12-08T11:00:00+08:00", "item": "q-17"})
        size = path.stat().st_size
        db.set_meta(LEDGER_PREFIX + "agent-log", {**ledger, "writing": {
            "observation": "feedback:a2", "size": size, "line": line.decode()}})
        with open(path, "ab") as file:
            file.write(line)
        assert route_answers(db, adapters, now_text="2026-12-08T11:00:05+08:00") == []
        # and one that died after marking the intent but before appending: the line is appended then
        _answer(db, "a3", "mitigate", "2026-12-08T12:00:00+08:00")
        line3 = answer_line({"asked_by": {"question_id": "q-17"}, "meaning": "decide", "option": "mitigate",
                             "note": None, "at": "2026-12-08T12:00:00+08:00", "item": "q-17"})
        db.set_meta(LEDGER_PREFIX + "agent-log", {**db.meta(LEDGER_PREFIX + "agent-log"), "writing": {
            "observation": "feedback:a3", "size": path.stat().st_size, "line": line3.decode()}})
        assert route_answers(db, adapters, now_text="2026-12-08T12:00:05+08:00") == []
    lines = [json.loads(text) for text in path.read_text(encoding="utf-8").splitlines()]
    assert [(entry["status"], entry["option"]) for entry in lines] == \
        [("answered", "mitigate"), ("answered", "migrate"), ("answered", "mitigate")]


def test_an_answers_file_that_cannot_be_written_is_reported_and_tried_again(tmp_path):
    create(str(tmp_path / "store"), 64)
    (tmp_path / "answers.jsonl").mkdir()  # a directory where the file should be
    adapters = [(Instance("agent-log", tmp_path / "answers.jsonl"), None)]
    with open_host_db(str(tmp_path / "store")) as db:
        _answer(db, "a1", "mitigate", "2026-12-08T10:00:00+08:00")
        (problem,) = route_answers(db, adapters, now_text="2026-12-08T10:00:01+08:00")
        assert "answers file of agent-log" in problem
        (tmp_path / "answers.jsonl").rmdir()
        assert route_answers(db, adapters, now_text="2026-12-08T10:00:02+08:00") == []
    assert len((tmp_path / "answers.jsonl").read_text(encoding="utf-8").splitlines()) == 1


def test_a_fallback_is_recorded_once_however_often_the_deadline_is_looked_at(tmp_path):
    location = str(tmp_path / "store")
    create(location, 64)
    store = open_store(location)
    frame = {"question": "Q?", "options": OPTIONS, "fallback": {"option": "migrate", "summary": "then migrate"},
             "decide_by": "2026-12-11T18:00:00+08:00", "evidence": "complete"}
    answer = store.commit({"batch_id": "b1", "declarations": [
        {"id": "q-17", "title": "Q", "weight": "high", "kind": "needs-you", "decision": frame},
        {"id": "open", "title": "No fallback", "weight": "low", "kind": "needs-you",
         "decision": {**frame, "fallback": None}}]}, actor="agent", now="2026-12-08T09:00:00+08:00")
    assert answer.exit_code == 0
    before = datetime(2026, 12, 11, 9, 59, 59, tzinfo=timezone.utc)
    after = datetime(2026, 12, 11, 10, 0, 0, tzinfo=timezone.utc)
    with open_host_db(location) as db:
        assert fire_fallbacks(store, db, before, before.isoformat()) == 0
        assert fire_fallbacks(store, db, after, after.isoformat()) == 1
        assert fire_fallbacks(store, db, after, after.isoformat()) == 0
        (row,) = db.observations(source="feedback")
        (observation,) = db.observations_by_id([row["id"]])
    assert observation.id == f"feedback:fallback-q-17-{frame_digest(frame)}"
    assert observation.feedback == {"target": "q-17", "action": "fallback", "meaning": "fallback", "via": "host",
                                    "option": "migrate", "digest": frame_digest(frame), "summary": "then migrate",
                                    "decide_by": "2026-12-11T18:00:00+08:00"}
