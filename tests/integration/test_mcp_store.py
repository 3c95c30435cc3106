"""``foldctl mcp`` and the store: busy, corrupt and missing stores are tool errors; the lock is never kept;
two agents writing at once leave a store that verifies, with every write in it once."""

from __future__ import annotations

import shutil

import anyio
import pytest

from fold_core.store.locking import StoreLock
from tests.support.mcp_world import World, call, codes


@pytest.fixture
def world(tmp_path):
    return World(tmp_path)


def test_a_busy_store_is_a_tool_error_and_the_lock_is_free_between_calls(world):
    lock_path = str(world.store / "lock")

    async def scenario():
        async with world.stdio(env={"FOLD_LOCK_TIMEOUT": "0.3"}) as session:
            held = StoreLock(lock_path, exclusive=True, create=False, timeout=0)
            try:
                busy = await call(session, "fold_annotate", {"item": "visa", "text": "while busy"})
                busy_read = await call(session, "fold_state")
            finally:
                held.release()
            done = await call(session, "fold_annotate", {"item": "visa", "text": "after"})
            # The server still runs, and holds nothing: this process takes the lock at once.
            StoreLock(lock_path, exclusive=True, create=False, timeout=0).release()
            read = await call(session, "fold_state")
            StoreLock(lock_path, exclusive=True, create=False, timeout=0).release()
            return busy, busy_read, done, read

    busy, busy_read, done, read = anyio.run(scenario)
    for document, is_error in (busy, busy_read):
        assert is_error and codes(document) == ["store_unavailable"]
        assert "busy" in document["errors"][0]["message"]
    assert done == ({"ok": True, "annotation": "ann-1", "event_seq": 3}, False)
    assert read[1] is False and read[0]["pending_annotations"][0]["text"] == "after"


def test_a_corrupt_store_is_a_tool_error(world):
    async def scenario():
        async with world.stdio() as session:
            before = await call(session, "fold_state")
            with open(world.store / "events.jsonl", "a", encoding="utf-8") as log:
                log.write('{"v": 1, "event_seq": 3, "type": "comm\n')
            return before, await call(session, "fold_state"), await call(session, "fold_annotate",
                                                                          {"item": "visa", "text": "x"})

    before, read, write = anyio.run(scenario)
    assert before[1] is False
    for document, is_error in (read, write):
        assert is_error and codes(document) == ["store_corrupt"] and document["errors"][0]["line"] == 3


def test_a_missing_store_is_a_tool_error_and_nothing_is_created(world):
    shutil.rmtree(world.store)

    async def scenario():
        async with world.stdio() as session:
            return [await call(session, name, arguments) for name, arguments in (
                ("fold_state", {}), ("fold_annotate", {"item": "visa", "text": "x"}),
                ("fold_report", {"agent": "a", "title": "t", "text": "x"}), ("fold_observation", {"id": "a:b"}))]

    for document, is_error in anyio.run(scenario):
        assert is_error and codes(document) == ["store_unavailable"]
        assert "no store at" in document["errors"][0]["message"] and "foldctl init" in document["errors"][0]["message"]
    assert not world.store.exists()


def test_two_agents_writing_at_once_never_corrupt_the_store(world):
    per_agent = 12

    async def agent(name: str, results: list) -> None:
        async with world.stdio() as session:
            for n in range(per_agent):
                results.append(await call(session, "fold_annotate", {"item": "visa", "text": f"{name} note {n}",
                                                                     "author": name}))
                results.append(await call(session, "fold_report", {"agent": name, "title": f"task {n}",
                                                                    "text": f"{name} finished step {n}",
                                                                    "report_id": f"{name}-{n}"}))

    async def scenario() -> list:
        results: list = []
        async with anyio.create_task_group() as group:
            group.start_soon(agent, "codex", results)
            group.start_soon(agent, "claude", results)
        return results

    results = anyio.run(scenario)
    assert len(results) == 4 * per_agent and not any(is_error for _, is_error in results)
    code, verified, _ = world.foldctl("verify")
    assert code == 0, verified
    code, history, _ = world.foldctl("history")
    notes = [record["annotation"] for record in history["records"] if record["type"] == "annotation"]
    assert [record["event_seq"] for record in history["records"]] == list(range(1, 3 + 2 * per_agent))
    assert sorted(note["id"] for note in notes) == sorted(f"ann-{n}" for n in range(1, 1 + 2 * per_agent))
    assert sorted(note["text"] for note in notes) == sorted(f"{name} note {n}" for name in ("codex", "claude")
                                                            for n in range(per_agent))
    code, inbox, _ = world.foldctl("inbox", "--limit", "100")
    assert sorted(o["id"] for o in inbox["observations"]) == sorted(
        f"agents:report/{name}-{n}" for name in ("codex", "claude") for n in range(per_agent))
