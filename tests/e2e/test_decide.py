"""Answering a decision frame from the command line, bound to the frame seen (contract §3.6, §11.2).

Real ``foldctl`` processes on a real store and host.db: a frame committed
with ``foldctl commit`` is answered with ``foldctl decide``; a stale digest,
an unknown option or an item without a frame store nothing; answering again
is a change of mind; ``foldctl decisions`` lists the frame with its latest
answer, and an answer to an earlier frame leaves a changed frame open.
"""

from __future__ import annotations

import json

from fold_core.kernel.decision import frame_digest
from fold_host.hostdb import open_host_db
from tests.support.host_workspace import Workspace

NOW = "2026-12-08T09:00:00+08:00"
FRAME = {"question": "先临时缓解，还是本周迁移到按字段合并？",
         "options": [{"id": "mitigate", "label": "先临时缓解", "consequence": "今天恢复登录；下周仍需迁移"},
                     {"id": "migrate", "label": "本周迁移", "consequence": "周四停服 2 小时，根治"}],
         "recommended": "mitigate", "basis": "负载测试显示迁移需停服 2 小时。",
         "fallback": {"option": "mitigate", "summary": "周五 18:00 前无答复则先缓解"},
         "decide_by": "2026-12-11T18:00:00+08:00", "evidence": "partial", "gap": "移动端是否受影响尚未验证"}


def _commit(ws: Workspace, name: str, batch: dict, now: str) -> None:
    path = ws.root / f"{name}.json"
    path.write_text(json.dumps(batch, ensure_ascii=False), encoding="utf-8")
    code, out, err = ws.call("commit", "--actor", "agent", "--now", now, str(path), "--format", "json")
    assert code == 0, (out, err)


def _json(ws: Workspace, *args: str) -> tuple[int, dict]:
    code, out, err = ws.call(*args, "--format", "json")
    return code, json.loads(out)


def _feedback_count(ws: Workspace) -> int:
    with open_host_db(str(ws.store)) as db:
        return len(db.observations(source="feedback", limit=1000))


def test_a_frame_is_answered_bound_to_its_digest(tmp_path):
    ws = Workspace(tmp_path, agent="")
    _commit(ws, "b1", {"batch_id": "b1", "declarations": [
        {"id": "auth", "title": "登录故障待定方案", "weight": "high", "kind": "needs-you", "decision": FRAME},
        {"id": "plain", "title": "普通事项", "weight": "low", "kind": "needs-you"}]}, NOW)
    digest = frame_digest(FRAME)

    code, answer = _json(ws, "decide", "--item", "auth", "--option", "mitigate", "--digest", digest,
                         "--note", "先止血", "--now", "2026-12-08T10:00:00+08:00")
    assert code == 0, answer
    assert (answer["ok"], answer["item"], answer["option"], answer["digest"], answer["revision"]) == \
        (True, "auth", "mitigate", digest, 1)
    feedback = answer["observation"]["feedback"]
    assert feedback == {"target": "auth", "action": "decide", "meaning": "decide", "via": "cli",
                        "option": "mitigate", "digest": digest, "revision": 1, "note": "先止血"}
    assert _feedback_count(ws) == 1

    code, listed = _json(ws, "decisions", "--now", NOW)
    assert code == 0
    (entry,) = listed["decisions"]
    assert entry["item"] == "auth" and entry["status"] == "answered" and entry["asked_by"] is None
    assert entry["question"] == FRAME["question"] and entry["digest"] == digest
    assert entry["recommended"] == "mitigate" and entry["evidence"] == "partial"
    assert entry["answer"] == {"option": "mitigate", "at": "2026-12-08T10:00:00+08:00", "via": "cli",
                               "digest": digest, "note": "先止血"}

    # a change of mind: the latest answer stands
    code, again = _json(ws, "decide", "--item", "auth", "--option", "migrate", "--now", "2026-12-08T11:00:00+08:00")
    assert code == 0 and again["digest"] == digest
    code, listed = _json(ws, "decisions", "--status", "answered", "--now", NOW)
    assert [d["answer"]["option"] for d in listed["decisions"]] == ["migrate"]
    assert _feedback_count(ws) == 2


def test_wrong_answers_store_nothing(tmp_path):
    ws = Workspace(tmp_path, agent="", host='language = "zh"\ntimezone = "Asia/Shanghai"\n')
    _commit(ws, "b1", {"batch_id": "b1", "declarations": [
        {"id": "auth", "title": "登录故障待定方案", "weight": "high", "kind": "needs-you", "decision": FRAME},
        {"id": "plain", "title": "普通事项", "weight": "low", "kind": "needs-you"}]}, NOW)
    old = frame_digest(FRAME)
    changed = {**FRAME, "options": [*FRAME["options"], {"id": "wait", "label": "再观察一天"}]}
    _commit(ws, "b2", {"batch_id": "b2", "declarations": [
        {"id": "auth", "relation": "supersedes:auth", "title": "登录故障待定方案", "weight": "high",
         "kind": "needs-you", "decision": changed}]},
        "2026-12-08T09:30:00+08:00")
    current = frame_digest(changed)

    def refused(*args: str) -> dict:
        code, document = _json(ws, "decide", *args, "--now", "2026-12-08T10:00:00+08:00")
        assert code == 1 and document["ok"] is False and len(document["errors"]) == 1, document
        return document["errors"][0]

    stale = refused("--item", "auth", "--option", "mitigate", "--digest", old)
    assert (stale["code"], stale["given"], stale["current"], stale["changed_at_revision"]) == \
        ("stale_decision", old, current, 2)
    unknown = refused("--item", "auth", "--option", "later")
    assert unknown["code"] == "unknown_option" and unknown["options"] == ["mitigate", "migrate", "wait"]
    assert refused("--item", "plain", "--option", "mitigate")["code"] == "no_decision"
    assert refused("--item", "nobody", "--option", "mitigate")["code"] == "item_not_found"
    assert _feedback_count(ws) == 0

    # the current frame, answered with its digest; then listed in Chinese
    code, answer = _json(ws, "decide", "--item", "auth", "--option", "wait", "--digest", current,
                         "--now", "2026-12-08T10:05:00+08:00")
    assert code == 0 and answer["revision"] == 2
    code, out, err = ws.call("decisions", "--now", NOW, "--format", "text")
    assert code == 0, err
    assert "先临时缓解，还是本周迁移到按字段合并？" in out and "* mitigate" in out
    assert "已回答" in out and "答复：wait" in out


def test_an_answer_to_an_earlier_frame_leaves_the_new_one_open(tmp_path):
    ws = Workspace(tmp_path, agent="")
    _commit(ws, "b1", {"batch_id": "b1", "declarations": [
        {"id": "auth", "title": "登录故障待定方案", "weight": "high", "kind": "needs-you", "decision": FRAME}]}, NOW)
    code, _ = _json(ws, "decide", "--item", "auth", "--option", "mitigate", "--now", "2026-12-08T10:00:00+08:00")
    assert code == 0
    changed = {**FRAME, "question": "先临时缓解，还是下周迁移？"}
    _commit(ws, "b2", {"batch_id": "b2", "declarations": [
        {"id": "auth", "relation": "supersedes:auth", "title": "登录故障待定方案", "weight": "high",
         "kind": "needs-you", "decision": changed}]},
        "2026-12-08T10:30:00+08:00")
    code, listed = _json(ws, "decisions", "--status", "open", "--now", NOW)
    (entry,) = listed["decisions"]
    assert entry["question"] == changed["question"] and entry["answer"] is None
    code, listed = _json(ws, "decisions", "--status", "answered", "--now", NOW)
    assert listed["decisions"] == []
