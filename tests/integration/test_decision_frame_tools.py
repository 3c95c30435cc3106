"""The decision frame as the editor reads it: the §9 state, ``fold_get_item`` and ``fold_get_history`` (contract §3.6, §9).

A real file store holds a needs-you item with a frame; the host's tools
(``HostTools``, what the LLM editors call) show the frame with its digest for
the active item, keep it on the withdrawn item's record, and show it in the
history's post-images, the same digest everywhere.
"""

from __future__ import annotations

from fold_core.kernel.decision import frame_digest
from fold_core.store.base import Store
from fold_core.store.file import FileRecorder
from fold_core.store.meta import create_store
from host.cycle.tools import HostTools

NOW = "2026-12-08T09:00:00+08:00"
FRAME = {"question": "先临时缓解，还是本周迁移到按字段合并？",
         "options": [{"id": "mitigate", "label": "先临时缓解", "consequence": "今天恢复登录；下周仍需迁移"},
                     {"id": "migrate", "label": "本周迁移", "consequence": None}],
         "recommended": "mitigate", "fallback": {"summary": "周五 18:00 前无答复则先缓解", "option": "mitigate"},
         "decide_by": "2026-12-11T18:00:00+08:00", "evidence": "partial", "gap": "移动端是否受影响尚未验证"}


def test_the_editor_tools_show_the_frame_with_its_digest(tmp_path):
    path = tmp_path / "store"
    create_store(str(path), 64)
    store = Store(FileRecorder(path))
    batch = {"batch_id": "b1", "declarations": [
        {"id": "auth", "title": "登录故障待定方案", "weight": "high", "kind": "needs-you", "decision": FRAME},
        {"id": "old", "title": "旧问题", "weight": "low", "kind": "needs-you", "decision": FRAME}]}
    assert store.commit(batch, actor="agent", now=NOW).exit_code == 0
    withdraw = {"batch_id": "b2", "declarations": [{"id": "old", "relation": "withdraw", "reason": "已解决"}]}
    assert store.commit(withdraw, actor="agent", now=NOW).exit_code == 0
    digest = frame_digest(FRAME)
    assert len(digest) == 16

    tools = HostTools(str(path), NOW)
    active = tools.get_item("auth")["item"]["decision"]
    assert active["digest"] == digest and active["question"] == FRAME["question"]
    assert "consequence" not in active["options"][1]  # null keys are left out of the stored frame
    withdrawn = tools.get_item("old")
    assert withdrawn["status"] == "withdrawn" and withdrawn["item"]["decision"]["digest"] == digest
    history = tools.get_history("auth", 5)["records"]
    assert history[0]["item"]["decision"]["digest"] == digest

    state = Store(FileRecorder(path)).state_document(now=NOW).document  # the §9 input's state, read anew
    assert state["root"]["items"][0]["decision"]["digest"] == digest
