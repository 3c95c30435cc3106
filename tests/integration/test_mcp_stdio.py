"""``foldctl mcp`` over stdio, driven by the ``mcp`` SDK's own client (``stdio_client`` + ``ClientSession``).

What an agent would notice: the tools and resources it is offered, what each
tool answers, a report that reaches the state after ``foldctl tick``, and a
clear tool error — never a dead server — for bad arguments, unknown items,
rejected annotations, a read-only server, a missing, busy or corrupt store.
"""

from __future__ import annotations

import json

import anyio
import pytest

from fold_host.mcp.catalogue import TOOLS
from fold_host.skill import load_skill
from tests.support.mcp_world import NOW, World, call, codes


@pytest.fixture
def world(tmp_path):
    return World(tmp_path)


def test_the_tools_and_resources_on_offer(world):
    async def scenario():
        async with world.stdio() as session:
            listed = (await session.list_tools()).tools
            resources = (await session.list_resources()).resources
            templates = (await session.list_resource_templates()).resource_templates
            state = json.loads((await session.read_resource("fold://state")).contents[0].text)
            item = json.loads((await session.read_resource("fold://item/trip")).contents[0].text)
            skills = {lang: (await session.read_resource(f"fold://skill/{lang}")).contents[0].text
                      for lang in ("zh", "en")}
            return listed, resources, templates, state, item, skills

    listed, resources, templates, state, item, skills = anyio.run(scenario)
    assert [tool.name for tool in listed] == [tool.name for tool in TOOLS] == [
        "fold_state", "fold_item", "fold_history", "fold_observation", "fold_annotate", "fold_feedback",
        "fold_report", "fold_ask", "fold_decide", "fold_answers"]
    for offered, entry in zip(listed, TOOLS):
        assert offered.description == entry.description and "\n" not in offered.description
        assert offered.input_schema == entry.schema() and offered.input_schema["type"] == "object"
        assert offered.annotations.read_only_hint is (not entry.writes)
    assert {str(r.uri) for r in resources} == {"fold://state", "fold://skill/zh", "fold://skill/en"}
    assert [t.uri_template for t in templates] == ["fold://item/{id}"]
    assert state["schema"] == "fold.state/1" and [i["id"] for i in state["root"]["items"]][:2] == ["visa", "trip"]
    assert item["item"]["id"] == "trip" and [c["id"] for c in item["item"]["children"]["items"]] == ["flight",
                                                                                                     "hotel"]
    assert skills == {"zh": load_skill("zh"), "en": load_skill("en")}


def test_every_tool_answers_what_its_command_would(world):
    async def scenario():
        async with world.stdio("--now", "2026-10-09T09:00:00+08:00") as session:
            answers = {
                "state": await call(session, "fold_state", {"min_weight": "normal", "kinds": ["needs-you",
                                                                                                "in-progress"]}),
                "shallow": await call(session, "fold_state", {"depth": 1, "not_active": 1}),
                "item": await call(session, "fold_item", {"id": "hotel"}),
                "history": await call(session, "fold_history", {"limit": 1}),
                "batch": await call(session, "fold_history", {"batch": "b1"}),
                "annotate": await call(session, "fold_annotate", {"item": "visa", "text": "The deadline moved."}),
                "feedback": await call(session, "fold_feedback", {"item": "report", "meaning": "act",
                                                                  "value": "sent on Monday"}),
                "report": await call(session, "fold_report", {
                    "agent": "codex", "title": "Fix the CI", "text": "The CI is green again.", "status": "done",
                    "links": ["https://example.com/pr/7", "a1b2c3d"], "report_id": "ci-7"}),
            }
            answers["observation"] = await call(session, "fold_observation", {"id": "agents:report/ci-7"})
            answers["item history"] = await call(session, "fold_history", {"item": "visa"})
            return answers

    answers = anyio.run(scenario)
    assert not any(is_error for _, is_error in answers.values()), answers
    state = answers["state"][0]
    assert [i["id"] for i in state["root"]["items"]] == ["visa", "trip", "report"]
    assert [c["id"] for c in state["root"]["items"][1]["children"]["items"]] == ["hotel"]
    assert state["filter"] == {"min_weight": "normal", "kinds": ["in-progress", "needs-you"], "omitted": 3}
    assert state["root"]["used"] == 64 - state["root"]["free"] and state["now"] == "2026-10-09T09:00:00+08:00"
    shallow = answers["shallow"][0]
    assert shallow["root"]["items"][1]["children"] == {"budget": 64, "used": 12, "free": 52, "count": 2}
    assert [entry["id"] for entry in shallow["not_active"]] == ["gone"] and shallow["not_active_total"] == 3
    assert answers["item"][0]["item"]["id"] == "hotel" and answers["item"][0]["item"]["rank"] == 2
    assert [r["batch_id"] for r in answers["history"][0]["records"]] == ["b2"]
    assert answers["batch"][0]["found"] is True and answers["batch"][0]["record"]["event_seq"] == 1
    assert answers["annotate"][0] == {"ok": True, "annotation": "ann-1", "event_seq": 3}
    assert [r["type"] for r in answers["item history"][0]["records"]] == ["commit", "annotation"]
    feedback = answers["feedback"][0]["observation"]
    assert feedback["feedback"] == {"target": "report", "action": "act", "meaning": "act", "via": "mcp",
                                    "value": "sent on Monday"}
    report = answers["report"][0]
    assert report["new"] is True and report["observation"] == {
        "id": "agents:report/ci-7", "source": "agents", "channel": "worklog", "from": "codex",
        "at": "2026-10-09T09:00:00+08:00", "title": "Fix the CI", "text": "The CI is green again.",
        "url": "https://example.com/pr/7", "thread": "Fix the CI",
        "meta": {"status": "done", "ref": "https://example.com/pr/7", "via": "mcp",
                 "links": ["https://example.com/pr/7", "a1b2c3d"], "report_id": "ci-7"}}
    observation = answers["observation"][0]
    assert observation["found"] is True and observation["status"] == "pending" and observation["dispositions"] == []
    assert {key: observation["observation"][key] for key in report["observation"]} == report["observation"]
    assert observation["observation"]["observed_at"] == "2026-10-09T09:00:00+08:00"
    code, inbox, _ = world.foldctl("inbox")
    assert code == 0 and [o["id"] for o in inbox["observations"]] == ["agents:report/ci-7", feedback["id"]]


def test_a_report_becomes_part_of_the_state_after_a_tick(world):
    async def report():
        async with world.stdio() as session:
            sent = await call(session, "fold_report", {
                "agent": "claude-code", "title": "Migrate the billing service", "text": "Blocked: the staging "
                "database refuses the new schema; needs the DBA's approval.", "status": "blocked",
                "at": "2026-10-09T08:30:00+08:00"})
            again = await call(session, "fold_report", {
                "agent": "claude-code", "title": "Migrate the billing service", "text": "Blocked: the staging "
                "database refuses the new schema; needs the DBA's approval.", "status": "blocked",
                "at": "2026-10-09T08:30:00+08:00"})
            return sent, again

    (sent, error), (again, _) = anyio.run(report)
    assert not error and sent["new"] is True
    observation_id = sent["observation"]["id"]
    assert observation_id.startswith("agents:report/")
    code, tick, _ = world.foldctl("tick", "--now", "2026-10-09T08:31:00+08:00")
    assert code == 0 and tick["outcome"] == "committed", tick

    async def after():
        async with world.stdio() as session:
            return (await call(session, "fold_state"))[0], (await call(session, "fold_observation",
                                                                       {"id": observation_id}))[0]

    state, seen = anyio.run(after)
    holding = [item for item in state["root"]["items"]
               if any(source["ref"] == f"event:{observation_id}" for source in item["sources"])]
    assert len(holding) == 1 and "billing" in holding[0]["title"].lower()
    assert seen["status"] == "processed" and [(d["disposition"], d["related"]) for d in seen["dispositions"]] == [
        ("used", [holding[0]["id"]])]
    assert seen["dispositions"][0]["batch_id"] == tick["receipt"]["batch_id"]


def test_bad_calls_are_clear_tool_errors_and_the_server_goes_on(world):
    async def scenario():
        async with world.stdio() as session:
            first = await call(session, "fold_report", {"agent": "x", "title": "t", "text": "one", "report_id": "r"})
            answers = [
                await call(session, "fold_state", {"min_weight": "heavy", "colour": "red"}),
                await call(session, "fold_item", {}),
                await call(session, "fold_item", {"id": "nope"}),
                await call(session, "fold_item", {"id": "a1"}),
                await call(session, "fold_annotate", {"item": "a1", "text": "still here?"}),
                await call(session, "fold_annotate", {"item": "visa", "text": "   "}),
                await call(session, "fold_annotate", {"item": "nope", "text": "hello"}),
                await call(session, "fold_feedback", {"item": "visa", "meaning": "snooze"}),
                await call(session, "fold_feedback", {"item": "nope", "meaning": "ack"}),
                await call(session, "fold_history", {"batch": "b1", "limit": 3}),
                await call(session, "fold_observation", {"id": "mail:never"}),
                await call(session, "fold_report", {"agent": "x", "title": "t", "text": "two", "report_id": "r"}),
                await call(session, "fold_report", {"agent": "x", "title": "t", "text": "t", "at": "yesterday"}),
                await call(session, "fold_feedback", {"item": "visa", "meaning": "ack", "until": 5}),
                await call(session, "fold_rewrite", {}),
            ]
            after = await call(session, "fold_item", {"id": "visa"})
            try:
                await session.read_resource("fold://item/nope")
                unread = None
            except Exception as error:  # the SDK raises MCPError for a JSON-RPC error
                unread = error
            return first, answers, after, unread

    first, answers, after, unread = anyio.run(scenario)
    assert first[1] is False and first[0]["new"] is True
    assert all(is_error for _, is_error in answers)
    documents = [document for document, _ in answers]
    assert all(document["ok"] is False and document["errors"][0]["message"] for document in documents)
    assert codes(documents[0]) == ["invalid_arguments", "invalid_arguments"]
    assert {e["field"] for e in documents[0]["errors"]} == {None, "min_weight"}
    assert "'colour' was unexpected" in documents[0]["errors"][0]["message"]
    assert codes(documents[1]) == ["invalid_arguments"] and "'id' is a required property" in \
        documents[1]["errors"][0]["message"]
    assert codes(documents[2]) == ["item_not_found"]
    assert codes(documents[3]) == ["item_merged"] and documents[3]["errors"][0]["merged_into"] == "parcels"
    assert codes(documents[4]) == ["item_merged"] and documents[4]["revision"] == 2
    assert codes(documents[5]) == ["invalid_field"] and documents[5]["errors"][0]["field"] == "text"
    assert codes(documents[6]) == ["item_not_found"]
    assert codes(documents[7]) == ["usage"] and "--until" in documents[7]["errors"][0]["message"]
    assert codes(documents[8]) == ["item_not_found"]
    assert codes(documents[9]) == ["invalid_arguments"]
    assert codes(documents[10]) == ["observation_not_found"]
    assert codes(documents[11]) == ["report_conflict"]
    assert codes(documents[12]) == ["invalid_arguments"] and documents[12]["errors"][0]["field"] == "at"
    assert codes(documents[13]) == ["invalid_arguments"] and documents[13]["errors"][0]["field"] == "until"
    assert codes(documents[14]) == ["unknown_tool"]
    assert after[1] is False and after[0]["item"]["id"] == "visa"
    assert unread is not None and unread.error.data["errors"][0]["code"] == "item_not_found"
    code, history, _ = world.foldctl("history")
    assert [r["type"] for r in history["records"]] == ["commit", "commit"]  # nothing rejected was written


def test_read_only_offers_and_runs_only_the_reading_tools(world):
    async def scenario():
        async with world.stdio("--read-only") as session:
            names = [tool.name for tool in (await session.list_tools()).tools]
            refused = [await call(session, name, arguments) for name, arguments in (
                ("fold_annotate", {"item": "visa", "text": "x"}),
                ("fold_feedback", {"item": "visa", "meaning": "ack"}),
                ("fold_report", {"agent": "a", "title": "t", "text": "x"}))]
            read = await call(session, "fold_state")
            return names, refused, read

    names, refused, read = anyio.run(scenario)
    assert names == ["fold_state", "fold_item", "fold_history", "fold_observation", "fold_answers"]
    assert all(is_error and codes(document) == ["read_only"] for document, is_error in refused)
    assert read[1] is False
    assert world.foldctl("inbox")[1] == {"observations": []}
    assert [r["type"] for r in world.foldctl("history")[1]["records"]] == ["commit", "commit"]


def test_over_stdio_the_command_prints_nothing_of_its_own(world):
    import subprocess

    from tests.support.mcp_world import FOLDCTL

    request = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}}
    done = subprocess.run([FOLDCTL, "--config", str(world.config), "mcp"], input=json.dumps(request) + "\n",
                          capture_output=True, text=True, timeout=60, env=world.env())
    lines = done.stdout.splitlines()
    assert done.returncode == 0 and len(lines) == 1, done
    answer = json.loads(lines[0])
    assert answer["id"] == 1 and answer["result"]["serverInfo"]["name"] == "fold"
    assert "over stdio" in done.stderr and "Traceback" not in done.stderr
