"""The editor's §9 input shows frames and the answers to them, and the baseline moves the item on.

Real ``foldctl`` commands on a real store and host.db, the baseline editor as
the configured editor: a frame committed on an item is answered with
``foldctl decide``; the next ``tick`` hands the editor the frame (with its
digest) on the item and the answer (option, digest, note, and what it
answered) on the feedback event, as the call log's request shows; the
baseline clears the frame and says what was decided.
"""

from __future__ import annotations

import json

from fold_core.kernel.decision import frame_digest
from tests.support.host_workspace import Workspace

NOW = "2026-12-08T09:00:00+08:00"
FRAME = {"question": "先临时缓解，还是本周迁移到按字段合并？",
         "options": [{"id": "mitigate", "label": "先临时缓解", "consequence": "今天恢复登录；下周仍需迁移"},
                     {"id": "migrate", "label": "本周迁移", "consequence": "周四停服 2 小时，根治"}],
         "recommended": "mitigate", "fallback": {"option": "mitigate", "summary": "周五 18:00 前无答复则先缓解"},
         "decide_by": "2026-12-11T18:00:00+08:00", "evidence": "complete"}


def _workspace(tmp_path) -> Workspace:
    ws = Workspace(tmp_path, sources=(), agent="", host='language = "zh"\ntimezone = "Asia/Shanghai"\n')
    batch = {"batch_id": "b1", "declarations": [
        {"id": "auth", "title": "coding-agent：待你决定", "weight": "high", "kind": "needs-you", "decision": FRAME,
         "sources": [{"channel": "worklog", "ref": "event:agent-log:q-17"}]}]}
    path = ws.root / "b1.json"
    path.write_text(json.dumps(batch, ensure_ascii=False), encoding="utf-8")
    code, out, err = ws.run_text("commit", "--actor", "agent", "--now", NOW, str(path), "--format", "json")
    assert code == 0, (out, err)
    return ws


def _last_input(ws: Workspace) -> dict:
    code, calls, _ = ws.run("calls", "--limit", "1")
    assert code == 0 and calls["calls"], calls
    code, shown, _ = ws.run("calls", "show", str(calls["calls"][0]["id"]))
    return shown["call"]["request"]["input"]


def test_the_editor_sees_the_frame_and_the_answer_and_the_baseline_moves_the_item_on(tmp_path):
    ws = _workspace(tmp_path)
    digest = frame_digest(FRAME)
    code, answer, _ = ws.run("decide", "--item", "auth", "--option", "migrate", "--digest", digest,
                             "--note", "周四晚上停服", "--now", "2026-12-08T10:00:00+08:00")
    assert code == 0, answer
    report = ws.tick("2026-12-08T10:05:00+08:00")
    assert report["outcome"] == "committed", report

    given = _last_input(ws)
    (item,) = given["state"]["root"]["items"]
    assert item["decision"]["question"] == FRAME["question"] and item["decision"]["digest"] == digest
    (event,) = given["events"]
    assert {k: event["feedback"][k] for k in ("meaning", "option", "digest", "note")} == {
        "meaning": "decide", "option": "migrate", "digest": digest, "note": "周四晚上停服"}
    assert event["feedback"]["answered"] == {"question": FRAME["question"], "label": "本周迁移", "current": True}

    code, state, _ = ws.run("state", "--now", "2026-12-08T10:05:00+08:00")
    (moved,) = state["root"]["items"]
    assert moved["decision"] is None and moved["kind"] == "in-progress"
    assert "本周迁移" in moved["summary"] and "待智能体执行" in moved["summary"]
    code, listed, _ = ws.run("decisions", "--now", "2026-12-08T10:05:00+08:00")
    # moved on, still listed with the answer that settled it: nothing open is asked of the user any more
    assert [(d["status"], d["answer"]["option"]) for d in listed["decisions"] if d["item"] == "auth"] == \
        [("answered", "migrate")]


def test_an_answer_to_a_frame_that_changed_is_shown_as_not_current(tmp_path):
    ws = _workspace(tmp_path)
    code, answer, _ = ws.run("decide", "--item", "auth", "--option", "migrate", "--now", "2026-12-08T10:00:00+08:00")
    assert code == 0, answer
    changed = {**FRAME, "question": "先临时缓解，还是下周迁移到按字段合并？"}
    path = ws.root / "b2.json"
    path.write_text(json.dumps({"batch_id": "b2", "declarations": [
        {"id": "auth", "relation": "supersedes:auth", "weight": "high", "kind": "needs-you", "decision": changed}]},
        ensure_ascii=False), encoding="utf-8")
    code, out, err = ws.run_text("commit", "--actor", "agent", "--now", "2026-12-08T10:01:00+08:00", str(path))
    assert code == 0, (out, err)
    ws.tick("2026-12-08T10:05:00+08:00")
    (event,) = _last_input(ws)["events"]
    assert event["feedback"]["answered"]["current"] is False
    code, state, _ = ws.run("state", "--now", "2026-12-08T10:05:00+08:00")
    (kept,) = state["root"]["items"]
    assert kept["decision"]["question"] == changed["question"] and kept["kind"] == "needs-you"
