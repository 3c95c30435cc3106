"""A big state's trace items are sent brief to an editor that can look them up (contract §9, "Big states").

The store holds 55 trace items and one normal one (56 active items, over
``BRIEF_ABOVE``); one trace item has a pending annotation. Through the real
openai SDK against the scripted server, the §9 input the model reads lists
the trace items brief (id, title, weight, kind, share), the annotated one and
the normal one whole, and ``fold_get_item`` gives the whole of a brief item.
With ``max_tool_calls = 0`` (no way to look one up) and for a small state the
whole state is sent; the view never changes the layers' budget figures.
"""

from __future__ import annotations

import json

import pytest

from fold_host.cycle.bounded_view import BRIEF_ABOVE, brief_state
from tests.support.host_workspace import Workspace
from tests.support.llm_servers import LLMServer, text, tool_calls

NOW = "2026-10-09T08:00:00+08:00"
TRACE = 55


def setup_batch(count: int) -> dict:
    items = [{"id": f"t{n}", "title": f"旧动态 {n}", "summary": f"第 {n} 条旧动态的摘要，已无需操作。",
              "weight": "trace", "kind": "fyi", "reason": "早先的动态。",
              "sources": [{"channel": "email", "ref": f"event:old-{n}", "quote": "一段引文"}]} for n in range(count)]
    items.append({"id": "visa", "title": "签证材料待补", "summary": "缺近 6 个月银行流水", "weight": "normal",
                  "kind": "needs-you"})
    return {"batch_id": "setup", "declarations": items}


def answer(event: str) -> str:
    return json.dumps({"dispositions": [{"event": event, "disposition": "noise", "why": "无关", "related": []}],
                       "batch": {"declarations": [], "acknowledges": []}}, ensure_ascii=False)


@pytest.fixture(scope="module")
def server():
    with LLMServer() as running:
        yield running


def workspace(tmp_path, server: LLMServer, count: int = TRACE, extra: str = "") -> Workspace:
    ws = Workspace(tmp_path, agent=f'type = "openai"\nmodel = "scripted-model"\nbase_url = "{server.openai_url}"\n'
                                    f'timeout = "10s"\n{extra}')
    path = tmp_path / "setup.json"
    path.write_text(json.dumps(setup_batch(count), ensure_ascii=False))
    assert ws.run("commit", "--actor", "user", "--now", NOW, str(path))[0] == 0
    assert ws.run("annotate", "--item", "t7", "--text", "这条还要留意", "--now", NOW)[0] == 0
    ws.feed("mail", {"native": "1", "title": "周报", "text": "本周没有新进展。"})
    server.reset()
    return ws


def sent_state(server: LLMServer) -> dict:
    document = json.loads(server.requests[0].message_texts("user")[0])
    return document["state"]


def by_id(state: dict) -> dict[str, dict]:
    return {view["id"]: view for view in state["root"]["items"]}


def test_trace_items_of_a_big_state_are_brief_and_fold_get_item_gives_them_whole(tmp_path, server):
    ws = workspace(tmp_path, server)
    server.script(tool_calls(("fold_get_item", {"id": "t3"})), text(answer("mail:1")))
    assert ws.tick("2026-10-09T09:00:00+08:00")["outcome"] in ("committed", "acknowledged", "checked")
    state = sent_state(server)
    items = by_id(state)
    assert len(items) == TRACE + 1
    assert items["t3"] == {"id": "t3", "title": "旧动态 3", "weight": "trace", "kind": "fyi", "share": 1,
                           "brief": True}
    assert items["t7"]["summary"] == "第 7 条旧动态的摘要，已无需操作。"  # a pending annotation: sent whole
    assert "brief" not in items["t7"]
    assert items["visa"]["summary"] == "缺近 6 个月银行流水"
    full_state = ws.run("state", "--now", "2026-10-09T09:00:00+08:00")[1]
    assert (state["root"]["used"], state["root"]["free"]) == (full_state["root"]["used"], full_state["root"]["free"])
    looked_up = server.requests[1].tool_results()[0][1]
    assert looked_up["found"] is True and looked_up["item"]["summary"] == "第 3 条旧动态的摘要，已无需操作。"


def test_without_tools_or_for_a_small_state_the_whole_state_is_sent(tmp_path, server):
    ws = workspace(tmp_path / "no-tools", server, extra="max_tool_calls = 0\n")
    server.script(text(answer("mail:1")))
    ws.tick("2026-10-09T09:00:00+08:00")
    assert all("brief" not in view and "summary" in view for view in by_id(sent_state(server)).values())
    ws = workspace(tmp_path / "small", server, count=BRIEF_ABOVE - 5)
    server.script(text(answer("mail:1")))
    ws.tick("2026-10-09T09:00:00+08:00")
    assert all("brief" not in view for view in by_id(sent_state(server)).values())


def test_brief_state_keeps_children_layers_and_leaves_the_document_alone():
    child = {"id": "c", "title": "子", "summary": "s", "weight": "trace", "kind": "fyi", "share": 1}
    parent = {"id": "p", "title": "父", "summary": "s", "weight": "trace", "kind": "fyi", "share": 1,
              "children": {"budget": 64, "used": 1, "free": 63, "items": [child]}}
    fillers = [{"id": f"f{n}", "title": "x", "summary": "s", "weight": "low", "kind": "fyi", "share": 3}
               for n in range(BRIEF_ABOVE)]
    document = {"state": {"root": {"budget": 64, "used": 1, "free": 63, "items": [parent, *fillers]}}, "now": NOW}
    shown = brief_state(document, {"c"})
    top = shown["state"]["root"]["items"][0]
    assert top["brief"] is True and "summary" not in top
    assert top["children"]["items"][0] == child  # kept whole: the window points at it
    assert shown["state"]["root"]["items"][1] == fillers[0]  # not trace: whole
    assert document["state"]["root"]["items"][0] is parent and "brief" not in parent


def test_the_items_the_window_points_at_stay_whole():
    from fold_host.cycle.bounded_view import whole_ids

    def trace(item_id, **more):
        return {"id": item_id, "title": item_id, "summary": "s", "weight": "trace", "kind": "fyi", "share": 1, **more}
    items = [trace(f"t{n}") for n in range(BRIEF_ABOVE)] + [
        trace("snoozed"), trace("acked"), trace("framed", kind="needs-you", decision={"question": "A or B?"})]
    document = {"state": {"root": {"budget": 64, "used": 53, "free": 11, "items": items}},
                "pending_annotations": [],
                "events": [{"id": "r-1", "reminder": {"target": "snoozed"}},
                           {"id": "f-1", "feedback": {"target": "acked", "meaning": "ack"}}]}
    keep = whole_ids(document, None)
    assert keep == {"snoozed", "acked"}
    shown = {v["id"]: v for v in brief_state(document, keep)["state"]["root"]["items"]}
    assert all("summary" in shown[i] for i in ("snoozed", "acked", "framed"))  # targets and a frame: whole
    assert shown["t0"].get("brief") is True
