"""The consumer framework: durable cursors, in order and at least once, isolation of a failing
consumer (recorded in host.db with backoff), new instances starting now or from the start,
and a consumer that cannot write to the store."""

from __future__ import annotations

import gc
import sqlite3
import threading
import types
from datetime import datetime

import pytest

from fold_host.cycle.delivery import deliver_all, register_new
from fold_core.plugin_api import Consumer, StateView
from fold_core.store.base import Recorder, Session, Store
from fold_host.hostdb import open_host_db

from consumer_support import commit, instance, store_files

T0 = "2026-10-09T08:00:00+08:00"


def batch(n: int) -> dict:
    return {"batch_id": f"b-{n}", "declarations": [
        {"id": f"item-{n}", "title": f"Item {n}", "weight": "normal", "kind": "fyi"}]}


class Recording(Consumer):
    """Keeps what it was given (class-level, so the test sees every instance built)."""

    type_name = "recording-test"
    seen: dict[str, list] = {}

    def deliver(self, records, context):
        type(self).seen.setdefault(self.name, []).append(([r["event_seq"] for r in records], context))
        for record in records:  # a consumer may scribble on its records: no other consumer sees it
            record["type"] = "scribbled"


class Raising(Consumer):
    type_name = "raising-test"
    calls = 0

    def deliver(self, records, context):
        type(self).calls += 1
        raise RuntimeError(f"broken on event {records[0]['event_seq'] if records else None}")


@pytest.fixture
def env(tmp_path):
    Recording.seen = {}
    Raising.calls = 0
    store_dir = tmp_path / "store"
    for n in (1, 2, 3):
        commit(store_dir, batch(n), T0)
    db = open_host_db(store_dir)
    yield types.SimpleNamespace(store=store_dir, db=db, tmp=tmp_path)
    db.close()


def run(env, instances, now=T0):
    return deliver_all(env.db, str(env.store), instances, now=now, timezone="Asia/Shanghai", language="zh",
                       coverage=[{"source": "work-mail", "channel": "email", "status": "ok"}])


def rec(env, name, **settings):
    return instance(name, "recording-test", env.tmp, cls=Recording, **settings)


def test_new_instance_starts_now_or_from_the_start(env):
    now_one, start_one = rec(env, "now-one"), rec(env, "start-one", **{"from": "start"})
    assert register_new(env.db, str(env.store), [now_one, start_one], now=T0) == ["now-one", "start-one"]
    commit(env.store, batch(4), T0)  # the cycle's own commit, after register_new
    results = run(env, [now_one, start_one])
    assert results == [{"consumer": "now-one", "status": "ok", "delivered": 1, "event_seq": 4},
                       {"consumer": "start-one", "status": "ok", "delivered": 4, "event_seq": 4}]
    assert [seqs for seqs, _ in Recording.seen["now-one"]] == [[4]]
    assert [seqs for seqs, _ in Recording.seen["start-one"]] == [[1, 2, 3, 4]]
    assert run(env, [now_one, start_one])[0]["delivered"] == 0  # the cursor is durable: nothing twice
    rows = {row["name"]: row for row in env.db.consumer_rows()}
    assert rows["now-one"]["event_seq"] == 4 and rows["start-one"]["failures"] == 0


def test_an_instance_first_seen_by_deliver_all_starts_at_the_current_event(env):
    late = rec(env, "late")
    assert run(env, [late]) == [{"consumer": "late", "status": "ok", "delivered": 0, "event_seq": 3}]
    commit(env.store, batch(4), T0)
    assert run(env, [late])[0]["delivered"] == 1


def test_records_come_in_order_with_a_read_only_view(env):
    one = rec(env, "one", **{"from": "start"})
    run(env, [one])
    [(seqs, context)] = Recording.seen["one"]
    assert seqs == [1, 2, 3]
    assert isinstance(context.state, StateView) and context.state.event_seq == 3
    assert set(context.state.active_ids()) == {"item-1", "item-2", "item-3"}
    assert context.timezone == "Asia/Shanghai" and context.language == "zh" and context.now == T0
    assert context.coverage[0]["source"] == "work-mail"
    with pytest.raises(AttributeError):
        context.state.anything = 1
    document = context.state.document
    document["root"]["items"].clear()  # a copy: the view does not change
    assert len(context.state.document["root"]["items"]) == 3


def test_a_failing_consumer_is_recorded_retried_with_backoff_and_never_stops_the_others(env):
    bad = instance("bad", "raising-test", env.tmp, cls=Raising, **{"from": "start"})
    good = rec(env, "good", **{"from": "start"})
    results = run(env, [bad, good])
    assert results[0]["status"] == "failed" and "RuntimeError: broken on event 1" in results[0]["error"]
    assert results[0]["next_try_at"] == "2026-10-09T08:00:30+08:00"
    assert results[1] == {"consumer": "good", "status": "ok", "delivered": 3, "event_seq": 3}
    row = {r["name"]: r for r in env.db.consumer_rows()}["bad"]
    assert (row["event_seq"], row["failures"], row["last_error_at"]) == (0, 1, T0)
    assert "broken on event 1" in row["last_error"]
    # Before next_try_at it waits (not called); after it, it is tried again and the wait doubles.
    assert run(env, [bad, good])[0]["status"] == "waiting" and Raising.calls == 1
    results = run(env, [bad, good], now="2026-10-09T08:00:31+08:00")
    assert results[0]["status"] == "failed" and Raising.calls == 2
    assert results[0]["next_try_at"] == "2026-10-09T08:01:31+08:00"
    assert {r["name"]: r for r in env.db.consumer_rows()}["bad"]["failures"] == 2
    # The same records again (at least once) once it works: nothing was skipped.
    fixed = instance("bad", "recording-test", env.tmp, cls=Recording)
    results = run(env, [fixed], now="2026-10-09T09:00:00+08:00")
    assert results == [{"consumer": "bad", "status": "ok", "delivered": 3, "event_seq": 3}]
    assert Recording.seen["bad"][0][0] == [1, 2, 3]
    row = {r["name"]: r for r in env.db.consumer_rows()}["bad"]
    assert (row["failures"], row["next_try_at"]) == (0, None)


class Hanging(Consumer):
    """Blocks in deliver() until the test releases it (a push server that never answers)."""

    type_name = "hanging-test"
    release = threading.Event()
    calls = 0

    def deliver(self, records, context):
        type(self).calls += 1
        type(self).release.wait(30)


def test_a_consumer_that_hangs_times_out_and_never_stops_the_others(env):
    Hanging.release, Hanging.calls = threading.Event(), 0
    stuck = instance("stuck", "hanging-test", env.tmp, cls=Hanging, **{"from": "start", "deliver_timeout": "1s"})
    good = rec(env, "good", **{"from": "start"})
    try:
        results = run(env, [stuck, good])
        assert results[0]["status"] == "failed" and "deliver_timeout" in results[0]["error"]
        assert results[0]["event_seq"] == 0  # nothing acknowledged: handed over again later
        assert results[1] == {"consumer": "good", "status": "ok", "delivered": 3, "event_seq": 3}
        # While that call still hangs the instance is skipped, not called a second time at once.
        again = run(env, [stuck, good], now="2026-10-09T09:00:00+08:00")
        assert again[0]["status"] == "failed" and "has not finished" in again[0]["error"] and Hanging.calls == 1
    finally:
        Hanging.release.set()
    for _ in range(100):  # the hung call returns once released
        results = run(env, [stuck], now="2026-10-09T10:00:00+08:00")
        if results[0]["status"] != "failed" or "has not finished" not in results[0]["error"]:
            break
        threading.Event().wait(0.05)
    assert results == [{"consumer": "stuck", "status": "ok", "delivered": 3, "event_seq": 3}]
    assert Hanging.calls == 2


class SqliteKeeping(Consumer):
    """Opens an SQLite connection when built and uses it in deliver and close (thread-bound in sqlite3)."""

    type_name = "sqlite-keeping-test"
    path = None
    closed = False

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.connection = sqlite3.connect(type(self).path)
        self.connection.execute("CREATE TABLE IF NOT EXISTS seen (event_seq INTEGER)")

    def deliver(self, records, context):
        self.connection.executemany("INSERT INTO seen VALUES (?)", [(r["event_seq"],) for r in records])
        self.connection.commit()

    def close(self):
        self.connection.close()
        type(self).closed = True


def test_build_deliver_and_close_of_one_instance_run_on_one_thread(env):
    SqliteKeeping.path, SqliteKeeping.closed = str(env.tmp / "kept.sqlite"), False
    keeping = instance("keeping", "sqlite-keeping-test", env.tmp, cls=SqliteKeeping, **{"from": "start"})
    assert run(env, [keeping]) == [{"consumer": "keeping", "status": "ok", "delivered": 3, "event_seq": 3}]
    assert SqliteKeeping.closed
    with sqlite3.connect(SqliteKeeping.path) as check:
        assert [row[0] for row in check.execute("SELECT event_seq FROM seen")] == [1, 2, 3]


def test_each_consumer_gets_its_own_copy_of_the_records(env):
    first, second = rec(env, "first", **{"from": "start"}), rec(env, "second", **{"from": "start"})
    run(env, [first, second])
    assert Recording.seen["first"][0][0] == Recording.seen["second"][0][0] == [1, 2, 3]


def _reachable(roots):
    """Every object reachable from ``roots`` through attributes, slots, containers and closures."""
    seen, stack, found = set(), list(roots), []
    while stack:
        obj = stack.pop()
        if id(obj) in seen or isinstance(obj, (str, bytes, int, float, bool, type(None), type, types.ModuleType)):
            continue
        seen.add(id(obj))
        found.append(obj)
        stack.extend(gc.get_referents(obj))
    return found


def test_a_consumer_cannot_reach_a_write_path_and_leaves_the_store_byte_identical(env):
    one = rec(env, "one", **{"from": "start"})
    from fold_core.store.file import file_store

    file_store(env.store).state_document(now=T0)  # the store's own cache refresh happens on any read
    before = store_files(env.store)
    run(env, [one])
    assert store_files(env.store) == before
    [(records, context)] = Recording.seen["one"]
    reachable = _reachable([context, Recording.seen["one"][0][0]])
    forbidden = (Store, Recorder, Session)
    assert not [o for o in reachable if isinstance(o, forbidden)]
    # Nothing with the store's write API (commit + annotate), no open file of the store directory.
    assert not [o for o in reachable if hasattr(type(o), "commit") and hasattr(type(o), "annotate")]
    store_dir = str(env.store.resolve())
    assert not [o for o in reachable if isinstance(getattr(o, "name", None), str)
                and str(o.name).startswith(store_dir) and not str(o.name).endswith(("host.db", "-wal", "-shm"))]


def test_store_missing_or_cursor_ahead_is_reported_not_raised(tmp_path, env):
    nowhere = tmp_path / "empty"
    with open_host_db(nowhere) as db:
        one = rec(env, "one")
        assert deliver_all(db, str(nowhere), [one], now=T0, timezone="UTC", language="en", coverage=()) == [
            {"consumer": "one", "status": "ok", "delivered": 0, "event_seq": 0}]
    env.db.set_consumer_cursor("ahead", 99, now=T0)
    result = run(env, [rec(env, "ahead")])[0]
    assert result["status"] == "failed" and "ahead of the store" in result["error"]


def test_the_built_ins_only_read_the_records_they_share(tmp_path, monkeypatch):
    """``shares_records = True`` is a promise: the built-ins leave every record as they got it."""
    import copy
    import json

    from fold_core.plugin_api import ConsumerContext
    from fold_core.store.file import file_store

    from consumer_support import FIXTURES, play, registry

    spec = json.loads((FIXTURES / "briefing" / "since.steps.json").read_text(encoding="utf-8"))
    store_dir = tmp_path / "store"
    play(store_dir, spec["steps"])
    store = file_store(store_dir)
    records = store.history().document["records"]
    view = StateView(store.state_document(now=spec["now"]).document)
    monkeypatch.setenv("FOLD_TEST_PUSH_URLS", "json://127.0.0.1:9/unused")
    settings = {"briefing": {"path": "b.md"}, "log": {"path": "c.md"},
                "push": {"urls_env": "FOLD_TEST_PUSH_URLS", "quiet_hours": "00:00-23:59"}}
    for type_name, extra in settings.items():
        entry = instance(type_name, type_name, tmp_path, **extra)
        assert entry.cls.shares_records is True and type_name in registry().names("consumer")
        given = copy.deepcopy(records)
        entry.build().deliver(given, ConsumerContext(state=view, now=spec["now"], timezone="Asia/Shanghai",
                                                     memory={}, language="zh"))
        assert given == records, type_name
