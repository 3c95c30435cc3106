"""The bounded tool box (``fold_core.editor_tools``): answers fit, bad calls are answers, the bound holds."""

from __future__ import annotations

import json

from fold_core.editor_tools import TOOLS, EditorTools, ToolBox, fit


class Lookups(EditorTools):
    """Canned answers; ``get_item("boom")`` fails like a broken store would."""

    def get_item(self, item_id):
        if item_id == "boom":
            raise OSError("the disk went away")
        return {"found": True, "status": "active", "item": {"id": item_id, "title": "签证" * 10}}

    def get_history(self, item_id, limit):
        return {"item": item_id, "total": 100, "records": [{"event_seq": n, "text": "记录" * 40}
                                                          for n in range(limit)]}

    def get_observation(self, observation_id):
        return {"found": True, "observation": {"id": observation_id, "text": "长" * 6000}}

    def search_observations(self, query, limit):
        return {"query": query, "hits": []}

    def list_not_active(self, query, limit):
        return {"query": query, "total": 0, "entries": []}


def test_a_long_list_is_shortened_from_its_end_and_says_how_many_it_left_out():
    box = ToolBox(Lookups(), max_bytes=2000)
    answer = box.call("fold_get_history", '{"item": "visa", "limit": 50}')
    document = json.loads(answer.text)
    assert not answer.error and len(answer.text.encode()) <= 2000
    kept = len(document["records"])
    assert 0 < kept < 50 and document["cut"]["omitted"] == 50 - kept
    assert [r["event_seq"] for r in document["records"]] == list(range(kept))  # the first ones stay
    assert box.calls == [{"name": "fold_get_history", "arguments": {"item": "visa", "limit": 50},
                          "bytes": len(answer.text.encode())}]


def test_anything_else_is_cut_with_a_mark_at_a_character_boundary():
    text = fit({"observation": {"text": "长" * 6000}}, 1500)
    assert len(text.encode()) <= 1500 and text.endswith("max_tool_bytes is 1500]") and "[cut: " in text
    assert text.encode().decode() == text


def test_bad_calls_are_answered_with_errors_and_counted():
    box = ToolBox(Lookups(), max_calls=8)
    answers = {
        "unknown_tool": box.call("fold_write", "{}"),
        "not json": box.call("fold_get_item", "{id: visa}"),
        "not an object": box.call("fold_get_item", "[1]"),
        "missing": box.call("fold_get_item", {}),
        "unknown key": box.call("fold_get_item", {"id": "visa", "depth": 2}),
        "bool is no integer": box.call("fold_get_history", {"item": "visa", "limit": True}),
        "too long": box.call("fold_search_observations", {"query": "x" * 201}),
        "fails": box.call("fold_get_item", {"id": "boom"}),
    }
    codes = {why: json.loads(answer.text)["error"]["code"] for why, answer in answers.items()}
    assert codes == {"unknown_tool": "unknown_tool", "not json": "invalid_arguments",
                     "not an object": "invalid_arguments", "missing": "invalid_arguments",
                     "unknown key": "invalid_arguments", "bool is no integer": "invalid_arguments",
                     "too long": "invalid_arguments", "fails": "tool_failed"}
    assert all(answer.error for answer in answers.values())
    assert "the disk went away" in json.loads(answers["fails"].text)["error"]["message"]
    assert box.exhausted and len(box.calls) == 8
    over = box.call("fold_get_item", {"id": "visa"})
    assert json.loads(over.text)["error"]["code"] == "too_many_tool_calls" and len(box.calls) == 9


def test_an_event_ref_opens_its_observation_and_defaults_apply():
    box = ToolBox(Lookups(), max_bytes=100_000)
    assert json.loads(box.call("fold_get_observation", {"id": "event:mail:7"}).text)["observation"]["id"] == "mail:7"
    assert len(json.loads(box.call("fold_get_history", {"item": "visa"}).text)["records"]) == 10


def test_every_tool_spec_is_a_closed_json_schema_object():
    for tool in TOOLS:
        spec = tool.spec()
        assert spec["name"].startswith("fold_") and len(spec["description"]) > 40
        assert spec["parameters"]["type"] == "object" and spec["parameters"]["additionalProperties"] is False
        assert set(spec["parameters"]["required"]) <= set(spec["parameters"]["properties"])
