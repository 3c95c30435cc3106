"""``foldctl mcp`` on a store in PostgreSQL: an agent reads, reports, annotates and gives feedback there as on a
directory, and what it wrote is in the store and the host's tables of that database."""

from __future__ import annotations

import json
import os

import anyio
import pytest

from fold_core.store.locate import open_store, verify
from fold_host.hostdb import open_host_db
from tests.support.mcp_world import World, call


@pytest.fixture
def world(postgres_cluster, request, tmp_path):
    url = postgres_cluster.url(store=f"m-{os.getpid()}-{request.node.name}"[:64])
    return World(tmp_path, store_url=url)


def test_an_agent_works_on_a_store_in_postgresql(world):
    report = {"agent": "codex", "report_id": "run-7", "title": "Migrated the billing tables", "text": "All 12 tables moved.",
              "status": "done", "at": "2026-10-09T07:30:00+08:00"}

    async def scenario():
        async with world.stdio() as session:
            state = await call(session, "fold_state")
            reported = await call(session, "fold_report", report)
            again = await call(session, "fold_report", report)
            seen = await call(session, "fold_observation", {"id": reported[0]["observation"]["id"]})
            annotated = await call(session, "fold_annotate", {"item": "visa", "text": "statement requested"})
            feedback = await call(session, "fold_feedback", {"item": "news", "meaning": "ack"})
            history = await call(session, "fold_history", {"item": "visa"})
            return state, reported, again, seen, annotated, feedback, history

    state, reported, again, seen, annotated, feedback, history = anyio.run(scenario)
    assert state[1] is False and [item["id"] for item in state[0]["root"]["items"]][:2] == ["visa", "trip"]
    assert reported[1] is False and reported[0]["new"] is True
    assert again == ({**reported[0], "new": False}, False)  # a retried report is the same observation
    assert seen[1] is False and seen[0]["found"] and "Migrated the billing tables" in json.dumps(seen[0])
    assert annotated[1] is False and annotated[0]["ok"] is True
    assert feedback[1] is False, feedback
    assert history[1] is False and any(r["type"] == "annotation" for r in history[0]["records"])
    # Written where the host and the store keep them: the database, not a directory.
    assert not world.store.exists()
    with open_host_db(world.location) as db:
        ids = {row["id"] for row in db.observations(limit=100)}
    assert reported[0]["observation"]["id"] in ids
    document = open_store(world.location).state_document(now="2026-10-09T09:00:00+08:00").document
    assert document["pending_annotations"][0]["text"] == "statement requested"
    assert verify(world.location)["ok"] is True


def test_an_agent_asks_and_reads_the_answer_on_a_store_in_postgresql(world):
    asked = {"agent": "codex", "question_id": "q-1", "question": "Ship today or tomorrow?",
             "options": [{"id": "today", "label": "Today"}, {"id": "tomorrow", "label": "Tomorrow"}]}

    async def scenario():
        async with world.stdio() as session:
            return await call(session, "fold_ask", asked), await call(session, "fold_answers", {"agent": "codex"})

    (ask, ask_error), (answers, _) = anyio.run(scenario)
    assert not ask_error and ask["observation"]["id"] == "agents:question/q-1"
    assert [(a["question_id"], a["status"], a["source"]) for a in answers["answers"]] == [("q-1", "open", "agents")]
    with open_host_db(world.location) as db:  # found by its thread in the host's tables of that database
        assert [row["observation"].meta["question_id"] for row in db.questions()] == ["q-1"]
