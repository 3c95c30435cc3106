"""Several hosts on one PostgreSQL host database: claims, leases, expiry, take-over, fencing, consumer turns.

Two (or three) ``PgHostDB`` connections with different host ids stand for
hosts on different machines, against the private cluster. Leases here are a
fraction of a second so that an expiry is reached by waiting for it (the
configuration's minimum is 3 s); nothing asserts how long anything took.
"""

from __future__ import annotations

import os
import time

import pytest

from fold_core.observation import Observation, Poll
from fold_core.timefmt import parse_instant
from fold_host.hostdb import ClaimLost
from fold_host.hostdb.pg.database import open_pg_host_db

NOW = "2026-10-09T08:00:00+08:00"
SHORT = 0.3  # seconds: a lease that a test waits out


@pytest.fixture
def url(postgres_cluster, request):
    return postgres_cluster.url(store=f"s-{os.getpid()}-{request.node.name}"[:64])


@pytest.fixture
def hosts(url):
    opened = []

    def open_host(name: str, lease: float = 30.0):
        db = open_pg_host_db(url, holder=name, lease=lease)
        opened.append(db)
        return db
    yield open_host
    for db in opened:
        db.close()


def observations(count: int) -> list[Observation]:
    return [Observation(id=f"mail:{n}", source="mail", channel="email", observed_at=NOW, title=f"m {n}", text="")
            for n in range(count)]


def claim(db, batch_id: str, limit: int, *, review: bool = False) -> list[str] | None:
    """Choose and claim a window the way a cycle does (one transaction); its event ids, None if refused."""
    with db.claiming():
        ids = [o.id for o in db.window_events(limit, parse_instant(NOW))] if not review else []
        window = {"batch_id": batch_id, "signal": {"type": "review" if review else "events"}, "event_ids": ids,
                  "now": NOW}
        return ids if db.open_window_row(window, ids, review=review) else None


def wait_until(condition, timeout: float = 30.0):
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "not reached"
        time.sleep(0.05)


def test_two_hosts_claiming_at_once_take_different_observations(hosts):
    a, b = hosts("a"), hosts("b")
    a.add_observations(observations(10))
    with a.claiming():  # a chose its rows and has not committed yet: b skips them, never waits
        mine = [o.id for o in a.window_events(4, parse_instant(NOW))]
        theirs = claim(b, "wb", 4)
        a.open_window_row({"batch_id": "wa", "signal": {"type": "events"}, "event_ids": mine, "now": NOW}, mine)
    # One poll brought them all: each window takes the newest of those still free.
    assert mine == [f"mail:{n}" for n in range(6, 10)] and theirs == [f"mail:{n}" for n in range(2, 6)]
    assert claim(hosts("c"), "wc", 4) == ["mail:0", "mail:1"]
    assert a.ready_count(parse_instant(NOW)) == 0 and a.pending_count() == 10
    assert a.window_row()["batch_id"] == "wa" and b.window_row()["batch_id"] == "wb"


def test_two_hosts_choosing_from_several_polls_at_once_never_overlap(hosts):
    """The ordinary path: several polls, none larger than a window. A host that has chosen (not yet claimed)
    holds its rows; another host choosing at that moment takes the next ones, neither the same nor waiting."""
    a, b = hosts("a"), hosts("b")
    for poll in range(4):  # four polls of three: each fits in a window, so no "newest of one poll" path
        at = f"2026-10-09T0{poll}:00:00+08:00"
        a.add_observations([Observation(id=f"mail:{poll}-{n}", source="mail", channel="email", observed_at=at,
                                        title=f"m {poll}-{n}", text="") for n in range(3)])
    b.connection.execute("SET lock_timeout = '20s'")  # a choice that waits on a's rows fails instead of hanging
    with a.claiming():
        mine = [o.id for o in a.window_events(5, parse_instant(NOW))]
        theirs = claim(b, "wb", 5)
        a.open_window_row({"batch_id": "wa", "signal": {"type": "events"}, "event_ids": mine, "now": NOW}, mine)
    assert len(mine) == 5 and theirs is not None and len(theirs) == 5
    assert not set(mine) & set(theirs), (mine, theirs)
    assert a.window_row()["batch_id"] == "wa" and b.window_row()["batch_id"] == "wb"
    assert sorted(claim(hosts("c"), "wc", 5) or []) == sorted(
        {f"mail:{p}-{n}" for p in range(4) for n in range(3)} - set(mine) - set(theirs))


def test_one_review_at_a_time(hosts):
    a, b = hosts("a"), hosts("b")
    assert claim(a, "review-1", 0, review=True) == []
    assert claim(b, "review-2", 0, review=True) is None
    a.drop_window_row("review-1")
    assert claim(b, "review-2", 0, review=True) == []


def test_a_window_whose_holder_stops_renewing_is_taken_over_with_its_intent(hosts):
    a, b = hosts("a", lease=SHORT), hosts("b", lease=SHORT)
    a.add_observations(observations(3))
    assert claim(a, "wa", 3) == ["mail:0", "mail:1", "mail:2"]
    a.save_window_intent("wa", {"batch_id": "wa", "batch": {"declarations": []}})
    assert b.window_row() is None  # a's lease has not expired yet
    assert a.heartbeat() == 1
    wait_until(lambda: b.ready_count(parse_instant(NOW)) == 1)  # expired: one window to take over
    taken = b.window_row()
    assert taken["batch_id"] == "wa" and b.window_intent("wa") == {"batch_id": "wa", "batch": {"declarations": []}}
    # a comes back (it was only slow): every write about the window is refused, nothing is marked twice.
    with pytest.raises(ClaimLost):
        a.save_window_intent("wa", {"batch_id": "wa", "batch": {"other": True}})
    with pytest.raises(ClaimLost):
        a.settle_window([{"event": "mail:0", "disposition": "used"}], batch_id="wa", now=NOW, drop=(),
                        note=("last_window", {"batch_id": "wa"}))
    assert a.window_intent("wa") is None and a.status_counts() == {"pending": 3}
    b.settle_window([{"event": f"mail:{n}", "disposition": "noise"} for n in range(3)], batch_id="wa", now=NOW,
                    drop=(), note=("last_window", {"batch_id": "wa"}))
    assert b.status_counts() == {"processed": 3} and b.window_row() is None
    assert [d["batch_id"] for d in b.observation_detail("mail:0")["dispositions"]] == ["wa"]


def test_a_heartbeat_keeps_what_a_host_holds(hosts):
    a, b = hosts("a", lease=2.0), hosts("b", lease=2.0)
    a.add_observations(observations(1))
    claim(a, "wa", 1)
    assert a.take_lease("source:mail")
    for _ in range(10):  # longer than the lease, renewed often within it
        time.sleep(0.3)
        a.heartbeat()
        assert b.window_row() is None and not b.take_lease("source:mail")


def test_a_clean_stop_lets_the_work_go_at_once(hosts):
    a, b = hosts("a"), hosts("b")
    a.register_host(hostname="one", pid=1, command="foldctl run")
    a.add_observations(observations(1))
    claim(a, "wa", 1)
    assert a.take_lease("source:mail") and not b.take_lease("source:mail")
    a.host_stopped()
    assert b.take_lease("source:mail") and b.window_row()["batch_id"] == "wa"
    [row] = b.hosts()
    assert row["id"] == "a" and row["alive"] is False and row["stopped_at"] is not None


def test_a_source_is_polled_by_one_host_and_a_lost_lease_keeps_nothing(hosts):
    a, b = hosts("a", lease=SHORT), hosts("b", lease=SHORT)
    assert a.take_lease("source:mail") and not b.take_lease("source:mail")
    wait_until(lambda: b.take_lease("source:mail"))  # a stopped renewing (it hung): b polls now
    with pytest.raises(ClaimLost):
        a.record_poll("mail", Poll(observations=observations(2), cursor=2), now=NOW)
    assert a.pending_count() == 0 and a.cursor("mail") is None
    assert b.record_poll("mail", Poll(observations=observations(2), cursor=2), now=NOW) == 2
    b.release_lease("source:mail")
    assert a.take_lease("source:mail")


def test_a_consumer_delivers_from_one_host_at_a_time(hosts):
    a, b = hosts("a"), hosts("b")
    a.add_consumer("log", 0, now=NOW)
    with a.consumer_turn("log") as mine:
        assert mine["event_seq"] == 0
        with b.consumer_turn("log") as theirs:
            assert theirs is None  # skipped, not waited for
        a.set_consumer_cursor("log", 7, now=NOW)
        a.memory("log")["seen"] = 7
    with b.consumer_turn("log") as theirs:
        assert theirs["event_seq"] == 7 and b.memory("log")["seen"] == 7


def test_doctor_rows_say_who_is_alive(hosts):
    a, b = hosts("a", lease=SHORT), hosts("b")
    a.register_host(hostname="one", pid=11, command="foldctl run")
    b.register_host(hostname="two", pid=22, command="foldctl run")
    wait_until(lambda: {row["id"]: row["alive"] for row in b.hosts()} == {"a": False, "b": True})
    row = next(row for row in b.hosts() if row["id"] == "b")
    assert (row["hostname"], row["pid"], row["windows"]) == ("two", 22, 0) and row["heartbeat_at"]
