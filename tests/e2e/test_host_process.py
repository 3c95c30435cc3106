"""The host as real processes: SIGKILL between commit and marking, the daemon, one daemon per store."""

from __future__ import annotations

import json
import signal
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

from fold_core.store.file import file_store
from fold_host.hostdb import open_host_db
from tests.support.host_workspace import Workspace

NOW = "2026-10-09T08:00:00+08:00"


def mail(n: int) -> dict:
    return {"native": str(n), "title": f"mail {n}", "text": f"body {n}"}


def wait_for(condition, timeout: float = 60.0, every: float = 0.1):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(every)
    raise AssertionError(f"not reached within {timeout}s: {condition.__doc__ or condition}")


def killed_after_commit(ws: Workspace, now: str, pause_dir=None) -> None:
    """``foldctl tick`` at ``now``, SIGKILLed while it waits between the store's commit and host.db's marks.

    ``pause_dir`` is where the paused host leaves its marker (the store's directory unless given: a store
    URL has none).
    """
    env = {"FOLD_HOST_PAUSE": "after_commit"}
    if pause_dir is not None:
        env["FOLD_HOST_PAUSE_DIR"] = str(pause_dir)
    marker = Path(pause_dir if pause_dir is not None else ws.store) / "paused.after_commit"
    process = ws.spawn("tick", "--now", now, env=env)
    try:
        wait_for(marker.exists)
        process.send_signal(signal.SIGKILL)
        assert process.wait(timeout=30) == -signal.SIGKILL
    finally:
        process.kill()
        process.communicate()


def inbox(ws: Workspace) -> list[dict]:
    with open_host_db(ws.store) as db:
        return db.observations(limit=100_000)


def commits(ws: Workspace) -> list[dict]:
    return [r for r in file_store(ws.store).history().document["records"] if r["type"] != "annotation"]


def test_a_host_killed_after_the_commit_and_before_marking_gets_its_receipt_replayed(tmp_path):
    ws = Workspace(tmp_path, script=["track", "noise"])
    ws.feed("mail", mail(1), mail(2))
    killed_after_commit(ws, NOW)
    [record] = commits(ws)
    assert {o["id"]: o["status"] for o in inbox(ws)} == {"mail:1": "pending", "mail:2": "pending"}
    code, out, err = ws.call("tick", "--now", "2026-10-09T08:05:00+08:00")
    report = json.loads(out)
    assert code == 0 and report["outcome"] == "committed" and report["attempts"] == 0
    assert report["receipt"]["replayed"] is True and report["receipt"]["batch_id"] == record["batch_id"]
    assert len(commits(ws)) == 1 and len(ws.requests()) == 1  # nothing committed twice, the editor not asked again
    assert {o["status"] for o in inbox(ws)} == {"processed"}
    assert {o["related"][0] for o in inbox(ws)} == {"t-mail-1", "t-mail-2"}
    state = file_store(ws.store).state_document(now=NOW).document
    assert sorted(item["id"] for item in state["root"]["items"]) == ["t-mail-1", "t-mail-2"]


def test_a_deferred_observation_offered_again_is_marked_once_across_a_kill_after_the_commit(tmp_path):
    ws = Workspace(tmp_path, script=[{"defer": ["mail:1"]}])
    ws.feed("mail", mail(1), mail(2))
    assert ws.tick(NOW)["outcome"] == "committed"
    ws.feed("mail", mail(3))
    killed_after_commit(ws, "2026-10-09T09:00:00+08:00")
    assert [o["status"] for o in inbox(ws) if o["id"] in ("mail:1", "mail:3")] == ["pending", "deferred"]
    code, out, _ = ws.call("tick", "--now", "2026-10-09T09:05:00+08:00")
    report = json.loads(out)
    assert code == 0 and report["receipt"]["replayed"] is True and len(ws.requests()) == 2
    code, out, _ = ws.call("inbox", "show", "mail:1")
    shown = json.loads(out)
    assert shown["status"] == "deferred" and shown["deferred"] == {"at": NOW, "times": 2}
    assert [d["disposition"] for d in shown["dispositions"]] == ["deferred", "deferred"]
    assert {o["id"]: o["status"] for o in inbox(ws)} == {"mail:1": "deferred", "mail:2": "processed",
                                                          "mail:3": "processed"}


def test_a_host_killed_before_the_commit_asks_again_in_the_same_window(tmp_path):
    ws = Workspace(tmp_path, script=[{"unavailable": "timeout"}, "track"])
    ws.feed("mail", mail(1))
    process = ws.spawn("tick", "--now", NOW, env={"FOLD_HOST_PAUSE": "after_commit"})
    process.communicate(timeout=60)  # the editor failed: the window is closed, nothing committed
    assert commits(ws) == [] and [o["status"] for o in inbox(ws)] == ["pending"]
    code, out, _ = ws.call("tick", "--now", "2026-10-09T08:05:00+08:00")
    assert json.loads(out)["outcome"] == "committed" and [o["status"] for o in inbox(ws)] == ["processed"]


def test_the_daemon_runs_sources_cycles_and_reminders_and_stops_on_sigterm(tmp_path):
    ws = Workspace(tmp_path, sources=("alpha", "beta"), script=["track"], host='review_every = "1d"\n')
    ws.config.write_text(ws.config.read_text().replace('every = "1m"', 'every = "1s"'))
    ws.feed("alpha", mail(1), mail(2))
    ws.feed("beta", mail(3))
    run = ws.spawn("run")
    try:
        wait_for(lambda: len(inbox(ws)) == 3 and all(o["status"] == "processed" for o in inbox(ws)))
        ws.feed("alpha", mail(4))
        wait_for(lambda: any(o["id"] == "alpha:4" and o["status"] == "processed" for o in inbox(ws)))
        code, _, err = ws.call("run")  # a second daemon on the same store is refused
        assert code == 3 and "another Fold host" in err and "foldctl run" in err
        until = (datetime.now(timezone.utc) + timedelta(seconds=4)).isoformat(timespec="seconds")
        code, out, _ = ws.call("feedback", "--item", "t-alpha-1", "--meaning", "snooze", "--until", until)
        assert code == 0
    finally:
        run.send_signal(signal.SIGTERM)
        started = time.monotonic()
        out, err = run.communicate(timeout=30)
        stopped_in = time.monotonic() - started
    assert run.returncode == 0 and stopped_in < 5, (stopped_in, err.decode()[-2000:])
    assert json.loads(out)["stopped_by"] == "SIGTERM"
    log = err.decode()
    assert "Traceback" not in log and " poll source=alpha status=ok" in log and " cycle signal=events" in log

    # A restart continues from the saved cursors: only new lines become observations; the reminder fires once.
    ws.feed("beta", mail(5))
    run = ws.spawn("run", "--log-format", "json")
    try:
        wait_for(lambda: any(o["id"] == "beta:5" and o["status"] == "processed" for o in inbox(ws)))
        wait_for(lambda: any(o["source"] == "reminder" and o["status"] == "processed" for o in inbox(ws)), 30)
        time.sleep(3)  # time for a second firing, which must not happen
    finally:
        run.send_signal(signal.SIGTERM)
        out, err = run.communicate(timeout=30)
    assert run.returncode == 0
    lines = [json.loads(line) for line in err.decode().splitlines()]
    assert {"start", "poll", "cycle", "stop"} <= {line["event"] for line in lines}
    ids = [o["id"] for o in inbox(ws)]
    assert len(ids) == len(set(ids))
    assert sorted(i for i in ids if i.startswith(("alpha:", "beta:"))) == \
        ["alpha:1", "alpha:2", "alpha:4", "beta:3", "beta:5"]
    reminders = [o for o in inbox(ws) if o["source"] == "reminder"]
    assert len(reminders) == 1 and reminders[0]["status"] == "processed"
    events = [e for request in ws.requests() for e in request["input"]["events"]]
    assert sum(1 for e in events if e["channel"] == "reminder") == 1
    state = file_store(ws.store).state_document(now=datetime.now(timezone.utc).isoformat()).document
    assert {"t-alpha-1", "t-alpha-2", "t-beta-3", "t-alpha-4", "t-beta-5"} <= {i["id"] for i in state["root"]["items"]}
