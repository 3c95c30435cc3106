"""The host on a store in PostgreSQL, as real processes: ticks, a host killed mid-window, doctor, a daemon.

The host's state is in the store's database (no host.db, no host.lock, no
file at all beside the configuration). A ``tick`` killed after its commit and
before marking leaves a window that another host takes over once its lease
expired: the intent is committed again (the original receipt comes back),
the observations are marked once, the editor is not asked again.
"""

from __future__ import annotations

import json
import os
import signal

import pytest

from fold_core.store.locate import open_store
from fold_host.hostdb import open_host_db
from tests.e2e.test_host_process import killed_after_commit, mail, wait_for
from tests.support.host_workspace import Workspace

NOW = "2026-10-09T08:00:00+08:00"


@pytest.fixture
def url(postgres_cluster, request):
    return postgres_cluster.url(store=f"e-{os.getpid()}-{request.node.name}"[:64])


def inbox(ws: Workspace) -> dict[str, str]:
    with open_host_db(ws.location) as db:
        return {row["id"]: row["status"] for row in db.observations(limit=100_000)}


def commits(ws: Workspace) -> list[dict]:
    return [r for r in open_store(ws.location).history().document["records"] if r["type"] != "annotation"]


def test_ticks_on_a_store_url_keep_no_file(url, tmp_path):
    ws = Workspace(tmp_path, script=["track", "noise"], host='lease = "3s"\n', store_url=url)
    ws.feed("mail", mail(1), mail(2))
    report = ws.tick(NOW)
    assert report["outcome"] == "committed" and report["polled"][0]["observations"] == 2
    assert inbox(ws) == {"mail:1": "processed", "mail:2": "processed"}
    assert sorted(os.listdir(tmp_path)) == ["mail.jsonl", "plugins.toml", "script.json", "script.json.pos",
                                            "script.json.requests.jsonl"]
    code, doctor, _ = ws.run("doctor")
    checks = {check["name"]: check for check in doctor["checks"]}
    assert checks["store"]["status"] == "ok" and "***" not in checks["store"]["detail"]
    assert checks["host database"]["status"] == "ok" and "2 processed" in checks["host database"]["detail"]
    assert checks["daemon"]["detail"] == "not running"
    stopped = [check for name, check in checks.items() if name.startswith("host ") and name != "host database"]
    assert len(stopped) == 1 and "foldctl tick" in stopped[0]["detail"] and "stopped at" in stopped[0]["detail"]
    code, calls, _ = ws.run("calls")
    assert code == 0 and [call["outcome"] for call in calls["calls"]] == ["committed"]


def test_a_window_left_by_a_killed_host_is_finished_by_another(url, tmp_path):
    ws = Workspace(tmp_path, script=["track", "noise"], host='lease = "3s"\n', store_url=url)
    ws.feed("mail", mail(1), mail(2))
    killed_after_commit(ws, NOW, pause_dir=tmp_path)
    [record] = commits(ws)
    assert inbox(ws) == {"mail:1": "pending", "mail:2": "pending"}
    # Until the killed host's lease expires its window is its own: another host finds nothing to do.
    reports = []

    def finished():
        code, out, err = ws.call("tick", "--now", "2026-10-09T08:05:00+08:00")
        assert code == 0, err
        reports.append(json.loads(out))
        return reports[-1]["outcome"] != "nothing"
    wait_for(finished, timeout=60, every=0.5)
    report = reports[-1]
    assert report["outcome"] == "committed" and report["attempts"] == 0
    assert report["receipt"]["replayed"] is True and report["receipt"]["batch_id"] == record["batch_id"]
    assert len(commits(ws)) == 1 and len(ws.requests()) == 1  # committed once, the editor asked once
    assert inbox(ws) == {"mail:1": "processed", "mail:2": "processed"}
    with open_host_db(ws.location) as db:
        assert [d["batch_id"] for d in db.observation_detail("mail:1")["dispositions"]] == [record["batch_id"]]


def test_the_daemon_on_a_store_url_and_a_second_one_beside_it(url, tmp_path):
    ws = Workspace(tmp_path, sources=("alpha", "beta"), script=["track"] * 10,
                   host='review_every = "1d"\nlease = "3s"\nlanguage = "zh"\n', store_url=url)
    ws.feed("alpha", mail(1))
    ws.feed("beta", mail(2))
    first, second = ws.spawn("run"), ws.spawn("run")
    try:
        wait_for(lambda: set(inbox(ws).values()) == {"processed"} and len(inbox(ws)) == 2)

        def both_hosts_seen():
            """doctor names both daemons once the second one's first heartbeat has landed."""
            _, doctor, _ = ws.run("doctor")
            checks = {check["name"]: check for check in doctor["checks"]}
            return checks if checks["daemon"]["detail"] == "running: 2 host(s)" else None
        checks = wait_for(both_hosts_seen, timeout=60, every=0.5)
        running = [check for name, check in checks.items() if name.startswith("host ") and name != "host database"]
        assert len(running) == 2 and all("last heartbeat" in check["detail"] for check in running)
        _, text, _ = ws.run_text("doctor", "--format", "text")  # a person reads the hosts in [host] language
        assert "运行中：2 个主机" in text and text.count("最后一次心跳在") == 2 and "last heartbeat" not in text
    finally:
        for process in (first, second):
            process.send_signal(signal.SIGTERM)
        outputs = [process.communicate(timeout=30) for process in (first, second)]
    for process, (out, err) in zip((first, second), outputs):
        assert process.returncode == 0 and b"Traceback" not in err, err.decode()
        assert json.loads(out)["stopped_by"] == "SIGTERM"
    assert len(commits(ws)) == len({record["batch_id"] for record in commits(ws)})
    code, doctor, _ = ws.run("doctor")
    assert {check["detail"] for check in doctor["checks"] if check["name"] == "daemon"} == {"not running"}


def test_the_pinboard_on_a_store_url(url, tmp_path):
    """The board, an observation's page and a feedback button, all through the database."""
    import httpx

    from fold_host.pinboard.app import create_app
    from fold_host.web.server import Bind, ServerThread

    ws = Workspace(tmp_path, script=["track"], store_url=url)
    ws.feed("mail", mail(1))
    assert ws.tick(NOW)["outcome"] == "committed"
    with ServerThread(create_app(url), Bind("127.0.0.1", 0, None)) as board, \
            httpx.Client(base_url=board.url) as client:
        assert client.get("/").status_code == 200
        page = client.get("/observation/mail:1")
        assert page.status_code == 200 and "mail 1" in page.text
        item = client.get("/item/t-mail-1")
        token = item.text.split('name="csrf" value="', 1)[1].split('"', 1)[0]
        answer = client.post("/item/t-mail-1/feedback", data={"meaning": "ack", "csrf": token})
        assert answer.status_code in (302, 303)
    assert any(o.startswith("feedback:") for o in inbox(ws))
