"""``foldctl migrate``: a store and its host state to PostgreSQL and back, exactly; refusals.

The source is a real host's store directory: observations processed,
deferred and pending, a failed window, a reminder, a consumer with its
cursor and memory, the call log — and a window whose answer was committed
by a host killed before marking. After the move, the store's records and
state and every host table are the same (the command compares them itself;
the test compares what a user sees: ``state``, ``inbox``, ``calls``,
``doctor``), and the moved window is finished by the next tick on either
side with the original receipt.
"""

from __future__ import annotations

import os
import signal
import sqlite3

import pytest

from fold_host.daemon.hostlock import host_running
from tests.e2e.test_host_process import killed_after_commit, mail, wait_for
from tests.support.host_workspace import Workspace

NOW = "2026-10-09T08:00:00+08:00"
LATER = "2026-10-09T09:05:00+08:00"


@pytest.fixture
def url(postgres_cluster, request):
    return postgres_cluster.url(store=f"m-{os.getpid()}-{request.node.name}"[:64])


def host_with_history(tmp_path) -> Workspace:
    ws = Workspace(tmp_path, script=[{"defer": ["mail:1"]}, {"unavailable": "timeout"}, "track", "noise"],
                   extra='[[consumers]]\nname = "changes"\ntype = "log"\npath = "changes.md"\n')
    ws.feed("mail", mail(1), mail(2))
    assert ws.tick(NOW)["outcome"] == "committed"
    assert ws.run("feedback", "--item", "t-mail-2", "--meaning", "snooze", "--until", "2026-10-20T08:00:00+08:00",
                  "--now", NOW)[0] == 0
    ws.feed("mail", mail(3))
    assert ws.tick("2026-10-09T08:30:00+08:00")["outcome"] == "failed"  # the editor was out of reach
    killed_after_commit(ws, "2026-10-09T09:00:00+08:00")
    (ws.store / "paused.after_commit").unlink()
    return ws


def seen(ws: Workspace, store: str) -> dict:
    """What a user reads about the store at ``store``."""
    views = {}
    for name, args in {"state": ("state", "--now", LATER), "inbox": ("inbox",), "calls": ("calls",),
                       "deferred": ("inbox", "show", "mail:1"), "history": ("history",)}.items():
        code, document, _ = ws.run("--store", store, *args)
        assert code == 0, document
        views[name] = document
    return views


def test_a_host_store_moves_to_postgresql_and_back_exactly(tmp_path, url):
    ws = host_with_history(tmp_path / "host")
    before = seen(ws, str(ws.store))
    code, report, err = ws.run("migrate", "--from", str(ws.store), "--to", url)
    assert code == 0, err
    assert report["verified"] is True and report["records"] == before["history"]["last_event_seq"]
    assert report["host"]["verified"] is True and report["host"]["windows"] == 1
    assert report["host"]["tables"]["observations"] == 4 and report["host"]["tables"]["reminders"] == 1
    assert seen(ws, url) == before
    back = tmp_path / "back"
    code, report, err = ws.run("migrate", "--from", url, "--to", str(back))
    assert code == 0 and report["host"]["verified"] is True, err
    assert seen(ws, str(back)) == before and ws.run("--store", str(back), "verify")[1]["ok"] is True
    with sqlite3.connect(back / "host.db") as connection:  # the search index agrees with the bodies it reads
        connection.execute("INSERT INTO observation_text (observation_text, rank) VALUES ('integrity-check', 1)")
    # The window whose answer was committed before the kill is finished on each side, with the original receipt.
    for store in (url, str(back)):
        code, report, err = ws.run("--store", store, "tick", "--now", LATER)
        assert code == 0 and report["attempts"] == 0 and report["receipt"]["replayed"] is True, (report, err)
    code, doctor, _ = ws.run("--store", url, "doctor")
    consumers = [check for check in doctor["checks"] if check["name"] == "consumer changes"]
    assert consumers and consumers[0]["status"] == "ok"


def test_moves_are_refused_where_they_could_lose_or_mix(tmp_path, url, postgres_cluster):
    ws = host_with_history(tmp_path / "host")
    assert ws.run("migrate", "--from", str(ws.store), "--to", url)[0] == 0
    code, _, err = ws.run("migrate", "--from", str(ws.store), "--to", url)
    assert code == 2 and "new" in err  # the target holds host state already
    code, _, err = ws.run("migrate", "--from", str(ws.store), "--to", str(tmp_path / "x"), "--name", "n")
    assert code == 2 and "--name" in err
    daemon = ws.spawn("run")
    try:
        wait_for(lambda: host_running(str(ws.store)))
        code, _, err = ws.run("migrate", "--from", str(ws.store), "--to", str(tmp_path / "y"))
        assert code == 3 and "stop it" in err
    finally:
        daemon.send_signal(signal.SIGTERM)
        daemon.communicate(timeout=30)
    assert not (tmp_path / "y").exists()
    name = f"renamed-{os.getpid()}"
    code, report, err = ws.run("migrate", "--from", str(ws.store), "--to", postgres_cluster.url(), "--name", name)
    assert code == 0 and f"store={name}" in report["to"] and report["host"]["verified"] is True, err
