"""``foldctl doctor`` tells the truth: real sources that never worked, a refused login, a daemon that does not poll.

Each case is what a self-hoster meets in the first week: a maildir that is not
there, an IMAP server that refuses connections, a feed whose host does not
resolve, a wrong IMAP password (against a real Dovecot), sources whose next
poll is long past, and ``--probe`` logging in and asking a real (scripted)
OpenAI-compatible endpoint for its models.
"""

from __future__ import annotations

import json
import os
import time

from fold_host.hostdb import open_host_db
from fold_host.daemon.hostlock import HostLock
from tests.support.dovecot import PASSWORD
from tests.support.ports import free_port
from tests.support.host_workspace import Workspace
from tests.support.llm_servers import LLMServer

NOW = "2026-10-09T08:00:00+08:00"


def checks(document: dict) -> dict:
    return {check["name"]: check for check in document["checks"]}


def workspace(tmp_path, body: str) -> Workspace:
    ws = Workspace(tmp_path, sources=())
    ws.config.write_text(ws.config.read_text() + body, encoding="utf-8")
    return ws


def test_sources_that_never_succeeded_fail_at_once(tmp_path):
    closed = free_port()
    ws = workspace(tmp_path, f'''
[[adapters]]
name = "archive"
type = "maildir"
path = "no-such-maildir"

[[adapters]]
name = "work-mail"
type = "email"
host = "127.0.0.1"
port = {closed}
security = "none"
username = "me"
password_env = "FOLD_TEST_DOCTOR_PASSWORD"
poll_timeout = "5s"

[[adapters]]
name = "blog"
type = "rss"
url = "http://feed.fold-test.invalid/rss.xml"
poll_timeout = "10s"
''')
    os.environ["FOLD_TEST_DOCTOR_PASSWORD"] = "x"
    try:
        ws.tick(NOW)
        code, document, _ = ws.run("doctor", "--now", NOW)
    finally:
        del os.environ["FOLD_TEST_DOCTOR_PASSWORD"]
    found = checks(document)
    assert code == 1 and document["ok"] is False
    for name, words in (("archive", "cannot be read"), ("work-mail", "network"), ("blog", "network")):
        check = found[f"source {name}"]
        assert check["status"] == "fail", check
        assert "has never succeeded" in check["detail"] and words in check["detail"], check


def test_a_refused_imap_login_fails_at_once_although_the_source_worked_before(tmp_path, dovecot, monkeypatch):
    ws = workspace(tmp_path, f'''
[[adapters]]
name = "work-mail"
type = "email"
host = "127.0.0.1"
port = {dovecot.plain_port}
security = "none"
username = "test"
password_env = "FOLD_TEST_IMAP_PASSWORD"
''')
    monkeypatch.setenv("FOLD_TEST_IMAP_PASSWORD", PASSWORD)
    ws.tick(NOW)
    assert checks(ws.run("doctor", "--now", NOW)[1])["source work-mail"]["status"] == "ok"
    monkeypatch.setenv("FOLD_TEST_IMAP_PASSWORD", "not-the-password")
    ws.tick("2026-10-09T08:10:00+08:00")
    code, document, _ = ws.run("doctor", "--now", "2026-10-09T08:10:00+08:00")
    check = checks(document)["source work-mail"]
    assert code == 1 and check["status"] == "fail"  # one failure, yet a fail: retrying cannot fix a password
    assert "refused the credentials" in check["detail"] and "(auth)" in check["detail"]
    # --probe logs in now: the wrong password fails, the right one passes.
    code, document, _ = ws.run("doctor", "--now", "2026-10-09T08:10:00+08:00", "--probe")
    probe = checks(document)["probe source work-mail"]
    assert probe["status"] == "fail" and probe["detail"].startswith("auth:")
    monkeypatch.setenv("FOLD_TEST_IMAP_PASSWORD", PASSWORD)
    probe = checks(ws.run("doctor", "--probe")[1])["probe source work-mail"]
    assert probe == {"name": "probe source work-mail", "status": "ok",
                     "detail": f"127.0.0.1:{dovecot.plain_port}: logged in as test"}


def test_sources_whose_next_poll_is_two_intervals_past_are_not_polling(tmp_path):
    ws = Workspace(tmp_path, sources=("alpha", "beta"))
    ws.tick(NOW)  # every = 1m: the next poll is at 08:01
    soon = checks(ws.run("doctor", "--now", "2026-10-09T08:02:30+08:00")[1])
    assert soon["source alpha"]["status"] == "ok"  # 1.5 intervals late: a slow tick, not a stop
    late = "2026-10-09T08:05:00+08:00"
    code, document, _ = ws.run("doctor", "--now", late)
    alpha = checks(document)["source alpha"]
    assert code == 0 and alpha["status"] == "warn"
    assert alpha["detail"].startswith("not polling: the next poll was due at 2026-10-09T08:01:00+08:00")
    assert "no daemon runs" in alpha["detail"]
    # A daemon that holds the store and beats, but does not poll: say so.
    with HostLock(str(ws.store), "run"):
        with open_host_db(ws.store) as db:
            db.daemon_started(pid=os.getpid(), now=late)
        document = ws.run("doctor", "--now", late)[1]
    found = checks(document)
    assert found["daemon"]["status"] == "ok" and found["daemon"]["detail"].startswith("running")
    assert "the daemon runs but does not poll it" in found["source beta"]["detail"]


def test_with_the_daemon_stopped_doctor_says_so_and_claims_no_next_poll(tmp_path):
    ws = Workspace(tmp_path, sources=("good", "bad"))
    (tmp_path / "bad.jsonl.fail").write_text("connection refused")
    ws.tick(NOW)
    with open_host_db(ws.store) as db:  # a daemon ran and stopped cleanly
        db.daemon_started(pid=os.getpid(), now=NOW)
        db.daemon_stopped(pid=os.getpid(), now=NOW)
    found = checks(ws.run("doctor", "--now", NOW)[1])
    assert found["daemon"]["status"] == "ok" and found["daemon"]["detail"].startswith("not running: ")
    assert "stopped cleanly" in found["daemon"]["detail"]
    assert found["source good"]["detail"] == "last ok at 2026-10-09T08:00:00+08:00"
    assert found["source bad"]["detail"].startswith("has never succeeded: 1 failed poll(s) in a row; last error at")
    code, out, _ = ws.call("doctor", "--now", NOW, "--format", "text")
    assert "not running" in out and "next poll" not in out and "next try" not in out


def test_a_daemon_that_died_fails_the_daemon_check(tmp_path):
    ws = Workspace(tmp_path)
    ws.tick(NOW)
    with open_host_db(ws.store) as db:
        db.daemon_started(pid=999_999, now=NOW)  # nobody holds the host lock: it died
    code, document, _ = ws.run("doctor", "--now", NOW)
    daemon = checks(document)["daemon"]
    assert code == 1 and daemon["status"] == "fail" and "died without a clean stop" in daemon["detail"]


def test_the_text_view_shows_every_check_failing_ones_first(tmp_path):
    ws = Workspace(tmp_path, sources=("good", "bad"))
    (tmp_path / "bad.jsonl.fail").write_text("connection refused")
    ws.tick(NOW)
    code, out, err = ws.call("doctor", "--now", NOW, "--format", "text")
    lines = out.splitlines()
    assert code == 1 and "rejected" not in out and "error:" not in out
    document = ws.run("doctor", "--now", NOW)[1]
    assert len(lines) == len(document["checks"]) + 1  # every check, then the verdict
    assert lines[0].startswith("fail  source bad: has never succeeded")
    statuses = [line.split()[0] for line in lines[:-1]]
    assert statuses == sorted(statuses, key=["fail", "warn", "ok"].index)
    assert lines[-1].startswith("1 check(s) failed")


def test_probe_asks_the_editor_endpoint_for_its_models_in_bounded_time(tmp_path):
    with LLMServer(model="qwen2.5:14b") as server:
        url = server.openai_url
        ws = Workspace(tmp_path, agent=f'type = "openai"\nbase_url = "{server.openai_url}"\nmodel = "qwen2.5:14b"\n')
        probe = checks(ws.run("doctor", "--probe")[1])["probe editor"]
        assert probe["status"] == "ok" and "offers qwen2.5:14b (1 model(s))" in probe["detail"]
        ws.config.write_text(ws.config.read_text().replace('model = "qwen2.5:14b"', 'model = "qwen-typo"'))
        code, document, _ = ws.run("doctor", "--probe")
        probe = checks(document)["probe editor"]
        assert code == 1 and probe["status"] == "fail" and "does not offer the model 'qwen-typo'" in probe["detail"]
    refused = free_port()
    ws.config.write_text(ws.config.read_text().replace(url, f"http://127.0.0.1:{refused}/v1"))
    started = time.monotonic()
    code, document, _ = ws.run("doctor", "--probe")
    assert time.monotonic() - started < 20
    probe = checks(document)["probe editor"]
    assert code == 1 and probe["status"] == "fail" and probe["detail"].startswith("connection:")
    assert json.dumps(document).count("probe source") == 0  # fixture feeds have nothing to try


def test_a_feed_that_answers_401_or_403_fails_at_once(tmp_path):
    from tests.support.feed_server import FeedServer, rss2

    with FeedServer() as server:
        route = server.route("/feed.xml", rss2([{"guid": "1", "title": "first", "link": "https://example.org/1"}]))
        ws = workspace(tmp_path, f'[[adapters]]\nname = "blog"\ntype = "rss"\nurl = "{server.url("/feed.xml")}"\n')
        ws.tick(NOW)
        assert checks(ws.run("doctor", "--now", NOW)[1])["source blog"]["status"] == "ok"
        for number, status in enumerate((401, 403), start=1):
            route.status = status
            later = f"2026-10-09T{8 + number:02d}:00:00+08:00"
            ws.tick(later)
            code, document, _ = ws.run("doctor", "--now", later)
            check = checks(document)["source blog"]
            assert code == 1 and check["status"] == "fail", check
            assert f"HTTP {status}: access refused" in check["detail"] and "(auth)" in check["detail"]


def test_the_text_view_speaks_the_configured_language_and_zone_throughout(tmp_path):
    ws = Workspace(tmp_path, sources=("good", "bad"), host='language = "zh"\ntimezone = "Asia/Shanghai"\n')
    (tmp_path / "bad.jsonl.fail").write_text("connection refused")
    ws.tick("2026-10-09T00:00:00Z")
    code, out, err = ws.call("doctor", "--now", "2026-10-09T00:00:00Z", "--format", "text")
    lines = out.splitlines()
    assert code == 1 and "rejected" not in err
    assert lines[0] == ("失败  信息源 bad：从未成功过：连续 1 次拉取失败；"  # no daemon: no next try claimed
                        "上次出错于 2026-10-09 08:00（network）：connection refused")  # the server's words as given
    assert "正常  守护进程：未运行：这个存储上从未运行过守护进程（由手动或 cron 执行 tick）" in lines
    assert "正常  信息源 good：上次成功于 2026-10-09 08:00" in lines
    assert any(line.startswith("正常  主机数据库：结构版本 ") and line.endswith("0 条已推迟") for line in lines)
    assert lines[-1] == "1 项检查失败"
    for english in ("never succeeded", "next try", "last error", "source(s)", "pending", "revision", "daemon"):
        assert english not in out, english
    document = ws.run("doctor", "--now", "2026-10-09T00:00:00Z")[1]  # JSON: the English, instants as stored
    bad = checks(document)["source bad"]["detail"]
    assert bad.startswith("has never succeeded: 1 failed poll(s) in a row; last error at 2026-10-09T00:00:00")
