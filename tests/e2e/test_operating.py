"""Running Fold for months, with real processes: /healthz, /metrics, systemd's notify socket, SIGHUP.

``foldctl run`` and ``foldctl serve`` are started as real processes on a
store in a temporary directory (free ports, logs in files); the tests look
from outside, as Uptime Kuma, Prometheus and systemd would.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

from prometheus_client.parser import text_string_to_metric_families

from fold_core.timefmt import parse_instant
from fold_host.hostdb import open_host_db
from fold_host.daemon.hostlock import HostLock
from tests.e2e.test_host_process import mail, wait_for
from tests.support.ports import free_port
from tests.support.host_workspace import Workspace


class Process:
    """``python -m fold_host --config … ARGS`` with its output in a file (a long run never fills a pipe)."""

    def __init__(self, ws: Workspace, *args: str, env: dict | None = None) -> None:
        self.log = ws.root / f"{args[0]}-{time.monotonic_ns()}.log"
        self._file = open(self.log, "wb")
        self.process = subprocess.Popen([sys.executable, "-m", "fold_host", *ws.args(*args)], cwd=ws.root,
                                        env=ws.env(**(env or {})), stdout=self._file, stderr=subprocess.STDOUT)
        self.pid = self.process.pid

    def text(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")

    def stop(self, number: int = signal.SIGTERM) -> int:
        if self.process.poll() is None:
            self.process.send_signal(number)
        try:
            code = self.process.wait(timeout=30)
        finally:
            self._file.close()
        assert "Traceback" not in self.text(), self.text()
        return code


def get(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=10) as answer:
            return answer.status, answer.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def serve(ws: Workspace) -> tuple[Process, str]:
    port = free_port()
    server = Process(ws, "serve", "--port", str(port))
    url = f"http://127.0.0.1:{port}"
    wait_for(lambda: _answers(url), timeout=60)
    return server, url


def _answers(url: str) -> bool:
    try:
        get(url + "/healthz")
        return True
    except OSError:
        return False


def health(url: str) -> tuple[int, dict]:
    code, body = get(url + "/healthz")
    return code, json.loads(body)


def test_healthz_follows_the_daemon_dead_or_alive(tmp_path):
    ws = Workspace(tmp_path, script=["track"])
    ws.config.write_text(ws.config.read_text().replace('every = "1m"', 'every = "1s"'))
    ws.feed("mail", mail(1))
    ws.tick("2026-10-09T08:00:00+08:00")
    server, url = serve(ws)
    try:
        code, document = health(url)  # only ever ticked: no daemon needed
        assert code == 200 and document["ok"] is True and set(document["checks"]) == {"store", "host_db", "daemon"}
        assert "no daemon has run" in document["checks"]["daemon"]["detail"]
        daemon = Process(ws, "run")
        wait_for(lambda: "running" in health(url)[1]["checks"]["daemon"]["detail"])
        assert health(url)[0] == 200
        assert daemon.stop(signal.SIGKILL) == -signal.SIGKILL
        code, document = health(url)
        assert code == 503 and document["ok"] is False and document["checks"]["daemon"]["ok"] is False
        assert "died without a clean stop" in document["checks"]["daemon"]["detail"]
        assert document["checks"]["store"]["ok"] is True
        daemon = Process(ws, "run")
        wait_for(lambda: health(url)[0] == 200)
        assert daemon.stop() == 0
        code, document = health(url)  # a clean stop is not a failure
        assert code == 200 and "stopped cleanly" in document["checks"]["daemon"]["detail"]
        # A daemon that holds the store but whose heartbeat is older than 60 s is stuck.
        with HostLock(str(ws.store), "run"):
            with open_host_db(ws.store) as db:
                db.daemon_started(pid=os.getpid(), now="2026-10-09T08:00:00+08:00")
            code, document = health(url)
        assert code == 503 and "is stuck" in document["checks"]["daemon"]["detail"]
    finally:
        server.stop()


def metrics(url: str) -> dict:
    code, body = get(url + "/metrics")
    assert code == 200
    found = {}
    for family in text_string_to_metric_families(body.decode()):
        for sample in family.samples:
            found[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return found


def test_metrics_count_a_scripted_day_and_survive_restarts(tmp_path):
    ws = Workspace(tmp_path, sources=("mail", "bad"),
                   script=["track", {"raw": "no JSON here"}, "track", {"unavailable": "timeout"}, "noise"],
                   extra='[[consumers]]\nname = "changes"\ntype = "log"\npath = "changes.md"\n')
    (tmp_path / "bad.jsonl.fail").write_text("connection refused")
    ws.feed("mail", mail(1), mail(2))
    ws.tick("2026-10-09T08:00:00+08:00")  # committed
    ws.feed("mail", mail(3))
    ws.tick("2026-10-09T09:00:00+08:00")  # rejected (no JSON), then committed
    ws.feed("mail", mail(4))
    ws.tick("2026-10-09T10:00:00+08:00")  # the editor is unavailable: failed
    (tmp_path / "bad.jsonl.fail").unlink()
    ws.feed("bad", mail(5))
    ws.tick("2026-10-09T11:00:00+08:00")  # noise: checked
    expected = {
        ("fold_polls_total", (("source", "mail"), ("status", "ok"))): 4,
        ("fold_polls_total", (("source", "bad"), ("status", "failed"))): 3,
        ("fold_polls_total", (("source", "bad"), ("status", "ok"))): 1,
        ("fold_windows_total", (("outcome", "committed"),)): 2,
        ("fold_windows_total", (("outcome", "checked"),)): 1,
        ("fold_windows_total", (("outcome", "acknowledged"),)): 0,
        ("fold_windows_total", (("outcome", "failed"),)): 1,
        ("fold_agent_calls_total", (("backend", "scripted"), ("outcome", "committed"))): 2,
        ("fold_agent_calls_total", (("backend", "scripted"), ("outcome", "checked"))): 1,
        ("fold_agent_calls_total", (("backend", "scripted"), ("outcome", "invalid"))): 1,
        ("fold_agent_calls_total", (("backend", "scripted"), ("outcome", "unavailable"))): 1,
        ("fold_agent_tokens_total", (("direction", "input"),)): 310,
        ("fold_agent_tokens_total", (("direction", "output"),)): 65,
        ("fold_rejections_total", ()): 1,
        ("fold_commits_total", ()): 2,
        ("fold_deliveries_total", (("consumer", "changes"), ("outcome", "ok"))): 3,
        ("fold_store_event_seq", ()): 3,
        ("fold_observations", (("status", "processed"),)): 5,
        ("fold_observations", (("status", "pending"),)): 0,
        ("fold_consumer_lag_events", (("consumer", "changes"),)): 0,
        ("fold_source_failures", (("source", "bad"),)): 0,
        ("fold_source_last_success_timestamp_seconds", (("source", "bad"),)):
            parse_instant("2026-10-09T11:00:00+08:00").timestamp(),
    }
    for _ in range(2):  # the numbers live in host.db and the store: a restarted server says the same
        server, url = serve(ws)
        try:
            found = metrics(url)
        finally:
            server.stop()
        assert {key: found.get(key) for key in expected} == expected


def test_the_daemon_tells_systemd_ready_watchdog_reloading_and_stopping(tmp_path):
    ws = Workspace(tmp_path, script=["track"])
    path = str(tmp_path / "notify.sock")
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        sock.bind(path)
        sock.settimeout(30)
        daemon = Process(ws, "run", env={"NOTIFY_SOCKET": path, "WATCHDOG_USEC": "1000000"})
        try:
            received = []

            def until(state: str) -> list[str]:
                while not any(line == state for message in received for line in message.splitlines()):
                    received.append(sock.recv(4096).decode())
                return received

            until("READY=1")
            assert any(line.startswith("STATUS=polling 1 source") for m in received for line in m.splitlines())
            until("WATCHDOG=1")  # WatchdogSec=1s: a ping at least every half second
            started = time.monotonic()
            received.clear()
            until("WATCHDOG=1")
            assert time.monotonic() - started < 1.0
            received.clear()
            daemon.process.send_signal(signal.SIGHUP)
            until("RELOADING=1")
            until("READY=1")
            assert any(line.startswith("MONOTONIC_USEC=") for m in received for line in m.splitlines())
        finally:
            code = daemon.stop()
        until("STOPPING=1")
        assert code == 0


def test_sighup_adds_and_removes_sources_and_keeps_a_bad_file_out(tmp_path):
    ws = Workspace(tmp_path, sources=("alpha",), script=["track"])
    ws.config.write_text(ws.config.read_text().replace('every = "1m"', 'every = "1s"'))
    first = ws.config.read_text()
    ws.feed("alpha", mail(1))
    ws.feed("beta", mail(2))
    daemon = Process(ws, "run")
    try:
        wait_for(lambda: statuses(ws).get("alpha:1") == "processed")
        with_beta = first.replace('name = "alpha"', 'name = "beta"').replace('path = "alpha.jsonl"',
                                                                           'path = "beta.jsonl"')
        ws.config.write_text(with_beta)
        daemon.process.send_signal(signal.SIGHUP)
        wait_for(lambda: statuses(ws).get("beta:2") == "processed")
        assert "sources_added=[\"beta\"]" in daemon.text() and "sources_removed=[\"alpha\"]" in daemon.text()
        polls = alpha_polls(ws)
        ws.feed("alpha", mail(3))
        time.sleep(3)  # three intervals: a removed source is never polled again
        assert alpha_polls(ws) == polls and "alpha:3" not in statuses(ws)
        # A file that does not load changes nothing; every error is logged.
        ws.config.write_text(with_beta.replace('every = "1s"', 'every = "soon"') + '\n[host]\nmax_events = 0\n')
        daemon.process.send_signal(signal.SIGHUP)
        wait_for(lambda: "outcome=kept" in daemon.text())
        log = daemon.text()
        assert "every" in log and "max_events" in log and log.count("reload outcome=refused") == 2
        ws.feed("beta", mail(4))
        wait_for(lambda: statuses(ws).get("beta:4") == "processed")
    finally:
        assert daemon.stop() == 0


def statuses(ws: Workspace) -> dict:
    with open_host_db(ws.store) as db:
        return {o["id"]: o["status"] for o in db.observations(limit=1000)}


def alpha_polls(ws: Workspace) -> int:
    with open_host_db(ws.store) as db:
        return sum(value for labels, value in db.counters().get("polls", ()) if labels[0] == "alpha")


def test_retention_drops_old_text_and_keeps_what_matters(tmp_path):
    ws = Workspace(tmp_path, script=["noise", "track"], host='keep_observations = "30d"\n')
    ws.feed("mail", {"native": "1", "title": "old secret", "text": "old body"})  # noise: no item cites it
    ws.tick("2026-08-01T08:00:00+08:00")
    ws.feed("mail", {"native": "2", "title": "new", "text": "new body"})
    ws.tick("2026-10-09T08:00:00+08:00")
    with open_host_db(ws.store) as db:
        listed = {o["id"]: o for o in db.observations(limit=10)}
        kept = db.observations_by_id(["mail:1"])[0]
    assert listed["mail:1"]["title"] is None and kept.text == "" and kept.meta["text_dropped_at"]
    assert listed["mail:1"]["status"] == "processed" and listed["mail:1"]["disposition"] == "noise"
    assert listed["mail:1"]["why"] == "scripted: noise"
    assert listed["mail:2"]["title"] == "new"
    with open_host_db(ws.store) as db:  # the search index forgot it too
        assert [hit["id"] for hit in db.search_observations("old secret", 10)] == []
        assert [hit["id"] for hit in db.search_observations("new body", 10)] == ["mail:2"]
    ws.feed("mail", {"native": "1", "title": "old secret", "text": "old body"})  # seen again: not observed twice
    report = ws.tick("2026-10-09T09:00:00+08:00")
    assert report["polled"][0]["observations"] == 0
