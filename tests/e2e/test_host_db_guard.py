"""host.db is guarded like the store: damage and loss are noticed, said, and cannot bring withdrawn items back.

* A host.db with 4 KB of a page overwritten: ``doctor`` lists its checks and
  fails the host database one; ``inbox`` and ``tick`` are exit 4 naming
  host.db and how to rebuild it — never exit 3 "internal error"; a daemon
  started on it stops its cycles at once and says why.
* host.db deleted under a running daemon: the daemon notices, stops its
  cycles with one log line and builds no new host.db under itself;
  ``doctor`` fails. Restarted, it builds a new host.db and reads its sources
  again from the start, but what the store's records already cite is settled
  without the editor: the items the user withdrew stay withdrawn.
"""

from __future__ import annotations

import json
import os
import signal
import threading
import time

from fold_core.store.file import file_store
from fold_host.hostdb import open_host_db
from fold_host.hostdb.guard import problem
from tests.e2e.test_host_process import wait_for
from tests.support.host_workspace import Workspace

NOW = "2026-10-09T08:00:00+08:00"


def mail(n: int) -> dict:
    return {"native": str(n), "title": f"mail {n}", "text": f"body {n} " + "正文" * 200}


class Daemon:
    """``foldctl run --log-format json`` with its log lines collected as they come."""

    def __init__(self, ws: Workspace) -> None:
        self.process = ws.spawn("run", "--log-format", "json")
        self.lines: list[dict] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        for raw in self.process.stderr:
            try:
                self.lines.append(json.loads(raw))
            except ValueError:
                self.lines.append({"event": "not-json", "text": raw.decode("utf-8", "replace")})

    def events(self, name: str) -> list[dict]:
        return [line for line in self.lines if line.get("event") == name]

    def stop(self) -> int:
        self.process.send_signal(signal.SIGTERM)
        self.process.wait(timeout=30)
        self._reader.join(timeout=10)
        return self.process.returncode


def corrupt(store) -> None:
    """Overwrite 4 KB in the middle of host.db (after every connection closed and the WAL was checkpointed)."""
    path = store / "host.db"
    assert not os.path.exists(str(path) + "-wal") or os.path.getsize(str(path) + "-wal") == 0
    size = os.path.getsize(path)
    with open(path, "r+b") as file:
        file.seek((size // 4096 // 2) * 4096)
        file.write(os.urandom(4096))


def test_a_damaged_host_db_is_a_failing_check_and_a_clear_exit_4(tmp_path):
    ws = Workspace(tmp_path, script=["track"])
    ws.feed("mail", *[mail(n) for n in range(1, 65)])
    ws.tick(NOW)
    corrupt(ws.store)
    code, out, err = ws.call("doctor")
    assert code == 1 and "internal error" not in err, err
    checks = {check["name"]: check for check in json.loads(out)["checks"]}
    assert {"config", "store", "host database", "daemon", "agent"} <= set(checks)
    assert checks["store"]["status"] == "ok" and checks["host database"]["status"] == "fail"
    assert "Rebuilding host.db" in checks["host database"]["detail"]
    for command in (["inbox", "--limit", "1000"], ["tick", "--now", "2026-10-09T09:00:00+08:00"]):
        code, out, err = ws.call(*command)
        assert code == 4 and "internal error" not in err, (command, code, err)
        assert "host database is damaged" in err or "integrity check failed" in err, err
        assert "Rebuilding host.db" in err
    assert problem(str(ws.store), deep=True) is not None
    daemon = Daemon(ws)
    try:
        [halt] = wait_for(lambda: daemon.events("halt"), 30)
        assert "HostDBCorrupt" in halt["error"] and not daemon.events("cycle")
        code, out, _ = ws.call("doctor")
        host_db = next(c for c in json.loads(out)["checks"] if c["name"] == "host database")
        assert code == 1 and host_db["status"] == "fail"
    finally:
        assert daemon.stop() == 0


def test_host_db_deleted_under_the_daemon_stops_its_cycles_and_brings_nothing_back(tmp_path):
    ws = Workspace(tmp_path, script=["track"], host='review_every = "1d"\n')
    ws.config.write_text(ws.config.read_text().replace('every = "1m"', 'every = "1s"'))
    ws.feed("mail", mail(1), mail(2), mail(3))
    daemon = Daemon(ws)
    try:
        wait_for(lambda: len(inbox(ws)) == 3 and all(o["status"] == "processed" for o in inbox(ws)))
        withdraw = tmp_path / "withdraw.json"
        withdraw.write_text(json.dumps({"batch_id": "user-withdraws", "declarations": [
            {"id": f"t-mail-{n}", "relation": "withdraw", "reason": "done already"} for n in (1, 2)]}))
        code, _, err = ws.call("commit", "--actor", "user", str(withdraw))
        assert code == 0, err
        asked = len(ws.requests())
        for name in ("host.db", "host.db-wal", "host.db-shm"):
            (ws.store / name).unlink(missing_ok=True)
        [halt] = wait_for(lambda: daemon.events("halt"), 30)
        assert "was removed while the daemon ran" in halt["error"]
        ws.feed("mail", mail(4))
        time.sleep(3)  # time for polls and cycles, which must not happen
        assert not (ws.store / "host.db").exists() and len(ws.requests()) == asked
        code, out, _ = ws.call("doctor")
        host_db = next(c for c in json.loads(out)["checks"] if c["name"] == "host database")
        assert code == 1 and host_db["status"] == "fail" and "stopped its cycles" in host_db["detail"]
    finally:
        assert daemon.stop() == 0
    daemon = Daemon(ws)  # restarted: a new host.db, every source read from the start
    try:
        try:
            wait_for(lambda: any(o["id"] == "mail:4" and o["status"] == "processed" for o in inbox(ws)))
        except AssertionError as missed:  # say what the daemon did instead
            raise AssertionError(f"{missed}; inbox {inbox(ws)}; daemon log {daemon.lines[-20:]}") from None
    finally:
        assert daemon.stop() == 0
    events = [e["id"] for request in ws.requests()[asked:] for e in request["input"]["events"]]
    assert events == ["mail:4"]  # mail 1–3 were not offered again
    recalled = {o["id"]: o for o in inbox(ws)}
    assert all(recalled[f"mail:{n}"]["status"] == "processed" and "already cited" in recalled[f"mail:{n}"]["why"]
               for n in (1, 2, 3))
    assert recalled["mail:1"]["related"] == ["t-mail-1"]
    items = {item["id"]: item["status"] for item in state_items(ws)}
    assert items["t-mail-1"] == items["t-mail-2"] == "withdrawn" and items["t-mail-3"] == items["t-mail-4"] == "active"
    code, out, _ = ws.call("doctor")
    assert next(c for c in json.loads(out)["checks"] if c["name"] == "host database")["status"] == "ok"


def test_a_host_db_rebuilt_between_ticks_settles_what_the_store_cites(tmp_path):
    ws = Workspace(tmp_path, script=["track"])
    ws.feed("mail", mail(1), mail(2))
    ws.tick(NOW)
    for name in ("host.db", "host.db-wal", "host.db-shm"):
        (ws.store / name).unlink(missing_ok=True)
    ws.feed("mail", mail(3))
    report = ws.tick("2026-10-09T09:00:00+08:00")
    assert report["outcome"] == "committed" and report["signal"]["received"] == 1
    assert [e["id"] for e in ws.requests()[-1]["input"]["events"]] == ["mail:3"]


def inbox(ws: Workspace) -> list[dict]:
    with open_host_db(ws.store) as db:
        return db.observations(limit=100_000)


def state_items(ws: Workspace) -> list[dict]:
    document = file_store(ws.store).state_document(now="2026-10-10T08:00:00+08:00", not_active=100).document
    return [{**item, "status": "active"} for item in document["root"]["items"]] + document["not_active"]


def test_a_poll_landing_after_the_citations_were_learned_offers_nothing_again(tmp_path):
    """The daemon polls on other threads: a poll may land after a cycle learned the store's citations and before
    it opens its window. What the records cite must be settled by then, not offered to the editor again."""
    from datetime import datetime, timedelta

    from fold_host.cycle.citations import settle_cited
    from fold_host.cycle.pipeline import Host
    from fold_host.plugins import load_config

    ws = Workspace(tmp_path, script=["track"])
    ws.feed("mail", mail(1), mail(2))
    ws.tick(NOW)
    for name in ("host.db", "host.db-wal", "host.db-shm"):
        (ws.store / name).unlink(missing_ok=True)
    host = Host(load_config(str(ws.config)), str(ws.store))
    with open_host_db(ws.store) as db:
        assert settle_cited(host.store, db, NOW) == []  # the cycle learned the citations; nothing polled yet
        [(instance, adapter)] = host.adapters
        host.poller.poll_one(db, instance, adapter, datetime.fromisoformat(NOW), NOW, timedelta(0))
        kept = {row["id"]: row["status"] for row in db.observations(limit=10)}
    assert kept == {"mail:1": "processed", "mail:2": "processed"}
