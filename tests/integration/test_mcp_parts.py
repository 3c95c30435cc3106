"""The parts of ``foldctl mcp`` below the protocol: reports as work-log lines, the state filter, the catalogue."""

from __future__ import annotations

import json
from datetime import datetime, timezone

import pytest
from jsonschema import Draft202012Validator

from fold_adapters.worklog.adapter import WorklogAdapter, WorklogSettings
from fold_core.shares import KINDS, WEIGHTS
from fold_host.mcp.catalogue import RESOURCE_TEMPLATES, RESOURCES, TOOLS
from fold_host.mcp.report import ReportProblem, report_observation, same_report
from fold_host.mcp.views import filter_state

NOW = "2026-10-09T09:00:00+08:00"


@pytest.mark.parametrize("report", [
    {"agent": "codex", "title": "Fix the CI", "text": "  The CI is green again.\r\n\r\n\r\nSee the run.  ",
     "status": "done", "links": ["https://example.com/pr/7", "a1b2c3d"], "at": "2026-10-09T08:30:00+08:00"},
    {"agent": "claude-code", "title": "任务" * 200, "text": "长文本" * 2000, "links": ["src/fold/x.py"]},
    {"agent": "a", "title": "t", "text": "x", "status": "blocked", "at": "2026-10-09T00:30:00Z"},
])
def test_a_report_is_what_the_same_work_log_line_would_be(tmp_path, report):
    line = {"at": report.get("at", NOW), "agent": report["agent"], "text": report["text"], "task": report["title"]}
    if "status" in report:
        line["status"] = report["status"]
    if report.get("links"):
        line["ref"] = report["links"][0]
    (tmp_path / "agent.jsonl").write_text(json.dumps(line, ensure_ascii=False) + "\n", encoding="utf-8")
    adapter = WorklogAdapter("agents", WorklogSettings(path=tmp_path))
    [logged] = adapter.poll(None, now=datetime(2026, 10, 9, 1, 0, tzinfo=timezone.utc)).observations
    reported = report_observation(report, source="agents", now=NOW)
    compared = ("source", "channel", "sender", "at", "title", "text", "url", "thread")
    assert {key: getattr(reported, key) for key in compared} == {key: getattr(logged, key) for key in compared}
    kept = {key: value for key, value in logged.meta.items() if key not in ("file", "line")}
    assert reported.meta == {**kept, "via": "mcp", **({"links": report["links"]} if report.get("links") else {})}
    assert reported.id.startswith("agents:report/") and reported.observed_at == NOW


def test_report_ids_retries_and_problems():
    base = {"agent": "codex", "title": "t", "text": "x", "report_id": "r-1"}
    first = report_observation(base, source="agents", now=NOW)
    later = report_observation(base, source="agents", now="2026-10-09T10:00:00+08:00")
    assert first.id == later.id == "agents:report/r-1" and first.meta["report_id"] == "r-1"
    assert same_report(first, later, at_given=False) and not same_report(first, later, at_given=True)
    assert not same_report(first, report_observation({**base, "text": "y"}, source="agents", now=NOW),
                           at_given=False)
    plain = {key: value for key, value in base.items() if key != "report_id"}
    assert report_observation(plain, source="agents", now=NOW).id == report_observation(plain, source="agents",
                                                                                         now=NOW).id
    assert report_observation(plain, source="agents", now=NOW).id != report_observation(
        plain, source="agents", now="2026-10-09T09:00:01+08:00").id
    for bad, field in (({"text": " \n\t"}, "text"), ({"at": "soon"}, "at"), ({"agent": "\u200b"}, "agent"),
                       ({"at": "0001-01-01T00:00:00+14:00"}, "at"), ({"at": "9999-12-31T23:59:59-14:00"}, "at")):
        with pytest.raises(ReportProblem) as problem:
            report_observation({**base, **bad}, source="agents", now=NOW)
        assert problem.value.field == field


def _item(item_id, weight, kind, children=None):
    return {"id": item_id, "weight": weight, "kind": kind, "children": children}


def test_the_state_filter_keeps_layers_and_counts_what_it_leaves_out():
    document = {"schema": "fold.state/1", "root": {"budget": 64, "used": 40, "free": 24, "items": [
        _item("a", "critical", "needs-you", {"budget": 64, "used": 7, "free": 57, "items": [
            _item("a1", "trace", "fyi"), _item("a2", "high", "needs-you")]}),
        _item("b", "low", "needs-you", {"budget": 64, "used": 12, "free": 52, "items": [
            _item("b1", "critical", "needs-you"), _item("b2", "normal", "done")]}),
        _item("c", "high", "done", {"budget": 64, "used": 6, "free": 58, "count": 3})]}}
    assert filter_state(document, None, None) is document
    narrowed = filter_state(document, "high", ["needs-you"])
    assert [i["id"] for i in narrowed["root"]["items"]] == ["a"]
    assert [i["id"] for i in narrowed["root"]["items"][0]["children"]["items"]] == ["a2"]
    assert narrowed["root"]["used"] == 40 and narrowed["root"]["free"] == 24
    assert narrowed["filter"] == {"min_weight": "high", "kinds": ["needs-you"], "omitted": 1 + 3 + 4}
    assert [i["id"] for i in filter_state(document, "trace", ["done"])["root"]["items"]] == ["c"]
    assert [i["id"] for i in document["root"]["items"]] == ["a", "b", "c"]  # the document itself is untouched


def test_the_catalogue_is_what_a_model_needs():
    assert len({tool.name for tool in TOOLS}) == len(TOOLS)
    for tool in TOOLS:
        schema = tool.schema()
        Draft202012Validator.check_schema(schema)
        assert schema["type"] == "object" and schema["additionalProperties"] is False
        assert set(schema.get("required", ())) <= set(schema["properties"])
        assert "\n" not in tool.description and 250 <= len(tool.description) <= 1200, tool.name
        assert tool.writes == (tool.name in ("fold_annotate", "fold_feedback", "fold_report", "fold_ask", "fold_decide"))
    state = next(tool for tool in TOOLS if tool.name == "fold_state").schema()["properties"]
    assert state["min_weight"]["enum"] == list(WEIGHTS) and state["kinds"]["items"]["enum"] == list(KINDS)
    assert {entry.uri for entry in RESOURCES + RESOURCE_TEMPLATES} == {
        "fold://state", "fold://item/{id}", "fold://skill/zh", "fold://skill/en"}


def test_fold_feedback_reads_until_as_people_write_it(tmp_path):
    from fold_host.mcp.operations import FoldDesk
    from tests.support.mcp_world import World

    world = World(tmp_path, timezone="Europe/Berlin")
    desk = FoldDesk(str(world.store), timezone="Europe/Berlin", now="2026-12-07T08:00:00+01:00")  # a Monday
    try:
        document, ok = desk.call("fold_feedback", {"item": "visa", "meaning": "snooze", "until": "周一 9:00"})
        assert ok and document["reminder"]["due_at"] == "2026-12-07T09:00:00+01:00"
        assert document["until"] == {"given": "周一 9:00", "instant": "2026-12-07T09:00:00+01:00",
                                     "timezone": "Europe/Berlin"}
        document, ok = desk.call("fold_feedback", {"item": "visa", "meaning": "snooze", "until": "2h"})
        assert ok and document["reminder"]["due_at"] == "2026-12-07T10:00:00+01:00"
        document, ok = desk.call("fold_feedback", {"item": "visa", "meaning": "snooze", "until": "someday"})
        error = document["errors"][0]
        assert not ok and error["code"] == "invalid_arguments" and error["field"] == "until"
        assert "someday" in error["message"] and "tomorrow 09:00" in error["message"]
    finally:
        desk.close()
