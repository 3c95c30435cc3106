"""Bad lines, bad mails and bad configuration values fail alone, with a message (never "internal error").

* one deeply nested JSON line in a work log is a note; the lines after it are read;
* a mail whose MIME parts nest a thousand deep keeps its subject and sender;
* durations that overflow (``1e308``, ``inf``, ``"99999999999d"``), a TOML
  file nested 5,000 deep and a ``[store] path`` that cannot hold a store
  (a regular file, ``/dev/null``, ``/proc/self``) are exit 2 naming the
  file and the field;
* ``feedback`` and ``reminder`` are the host's own sources: an adapter cannot
  take those names;
* ``serve --host [::1]`` prints a usable URL.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from datetime import datetime, timezone

import pytest

from fold_adapters.mail.mime import mail_observations, read_mail
from fold_adapters.worklog.adapter import WorklogAdapter, WorklogSettings
from tests.support.host_workspace import Workspace

NOW = datetime(2026, 10, 9, 8, 0, tzinfo=timezone.utc)


def foldctl(*args: str, cwd, timeout: float = 60) -> subprocess.CompletedProcess:
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("FOLD_", "XDG_"))}
    return subprocess.run([sys.executable, "-m", "fold_host", *args], cwd=cwd, env=environment,
                          capture_output=True, text=True, timeout=timeout)


def test_a_deeply_nested_json_line_is_one_bad_line_of_a_work_log(tmp_path):
    line = {"at": "2026-10-09T08:00:00+08:00", "agent": "coder", "text": "after the bad line"}
    (tmp_path / "agent.jsonl").write_text("[" * 1000 + "\n" + "{" * 100_000 + "\n" + json.dumps(line) + "\n")
    adapter = WorklogAdapter("log", WorklogSettings(path=tmp_path))
    result = adapter.poll(None, now=NOW)
    assert result.health.status == "ok", result.health.message
    assert [o.text for o in result.observations] == ["after the bad line"]
    notes = " | ".join(result.health.notes)
    assert "agent.jsonl line 1: not JSON (nested too deeply" in notes and "line 2: not JSON" in notes
    again = adapter.poll(json.loads(json.dumps(result.cursor)), now=NOW)
    assert again.health.status == "ok" and again.observations == []  # the cursor moved past both


def deep_multipart(depth: int) -> bytes:
    head = (b"From: =?utf-8?B?5byg5Lyf?= <zhang.wei@example.com>\r\nSubject: =?utf-8?B?562+6K+B5p2Q5paZ?=\r\n"
            b"Message-ID: <deep@example.com>\r\nDate: Mon, 12 Oct 2026 10:00:00 +0800\r\nMIME-Version: 1.0\r\n")
    opening = b"".join(b'Content-Type: multipart/mixed; boundary="b%d"\r\n\r\n--b%d\r\n' % (i, i)
                       for i in range(depth))
    closing = b"".join(b"\r\n--b%d--\r\n" % i for i in reversed(range(depth)))
    return head + opening + b"Content-Type: text/plain\r\n\r\nthe innermost text\r\n" + closing


def test_a_thousand_deep_multipart_mail_keeps_its_subject_and_sender():
    mail = read_mail(deep_multipart(1000))
    assert mail.subject == "签证材料" and mail.sender == "张伟 <zhang.wei@example.com>"
    assert mail.message_id == "deep@example.com" and mail.date is not None
    assert any("nested" in note for note in mail.unreadable), mail.unreadable
    [observation] = mail_observations(mail, source="inbox", native_id="1", observed_at=NOW)
    assert observation.title == "签证材料" and observation.meta["unreadable"]


BAD_DURATIONS = {"1e308": "1e308", "inf": "inf", "-inf": "-inf", "nan": "nan", '"99999999999d"': '"99999999999d"',
                 "1e400 seconds as text": '"1e400s"'}


@pytest.mark.parametrize("value", list(BAD_DURATIONS.values()), ids=list(BAD_DURATIONS))
def test_an_overflowing_duration_is_a_config_error(tmp_path, value):
    (tmp_path / "plugins.toml").write_text(f'[store]\npath = "store"\n[host]\nreview_every = {value}\n')
    done = foldctl("--config", "plugins.toml", "doctor", cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert "internal error" not in done.stderr and "Traceback" not in done.stderr
    assert "plugins.toml: [host], field 'review_every': expected a duration" in done.stderr, done.stderr


def test_a_toml_file_nested_5000_deep_is_a_config_error(tmp_path):
    (tmp_path / "plugins.toml").write_text('[store]\npath = "store"\n[user]\nbackground = ' + "[" * 5000 +
                                           "]" * 5000 + "\n")
    for command in ("doctor", "tick", "state"):
        done = foldctl("--config", "plugins.toml", command, cwd=tmp_path)
        assert done.returncode == 2, (command, done.stderr)
        assert "internal error" not in done.stderr and "nested too deeply" in done.stderr, done.stderr


@pytest.mark.parametrize("path", ["a-regular-file", "/dev/null", "/proc/self"])
def test_a_store_path_that_cannot_hold_a_store_is_a_config_error(tmp_path, path):
    (tmp_path / "a-regular-file").write_text("not a directory\n")
    (tmp_path / "plugins.toml").write_text(f'[store]\npath = "{path}"\n')
    for command in ("tick", "state", "doctor", "inbox"):
        done = foldctl("--config", "plugins.toml", command, cwd=tmp_path)
        assert done.returncode == 2, (command, done.stderr)
        assert "internal error" not in done.stderr and "[store], field 'path'" in done.stderr, done.stderr
    assert (tmp_path / "a-regular-file").read_text() == "not a directory\n"
    done = foldctl("--store", path, "state", cwd=tmp_path)  # the flag is checked the same way
    assert done.returncode == 2 and "--store" in done.stderr and "internal error" not in done.stderr, done.stderr


@pytest.mark.parametrize("name", ["feedback", "reminder"])
def test_the_host_sources_names_are_reserved(tmp_path, name):
    ws = Workspace(tmp_path, sources=(name, "mail"))
    code, _, err = ws.call("doctor")
    assert code == 2, err
    assert f"[[adapters]] {name!r}, field 'name': {name!r} is the name of the host's own {name} source" in err, err


def test_serve_on_a_bracketed_ipv6_loopback_prints_a_usable_url(tmp_path):
    assert foldctl("--store", "store", "init", cwd=tmp_path).returncode == 0
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("FOLD_", "XDG_"))}
    process = subprocess.Popen([sys.executable, "-m", "fold_host", "--store", "store", "serve", "--host", "[::1]",
                                "--port", "0"], cwd=tmp_path, env=environment, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    try:
        line = process.stderr.readline()
        assert "http://[::1]:" in line and "[[" not in line, line
        import httpx

        url = line.split(" at ", 1)[1].split(";", 1)[0].split(" ", 1)[0]
        assert httpx.get(url, timeout=10).status_code == 200
    finally:
        process.send_signal(signal.SIGTERM)
        out, _ = process.communicate(timeout=30)
    assert json.loads(out)["url"].startswith("http://[::1]:") and "[[" not in out

