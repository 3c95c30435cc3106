"""The ``maildir`` and ``mbox`` adapters on real files written with the standard library's ``mailbox``."""

from __future__ import annotations

import itertools
import json
import mailbox
import os
import shutil
from datetime import datetime, timezone
from pathlib import Path

import pytest

from conformance.adapter_suite import AdapterConformance
from fold_adapters.mail.mailbox import MaildirAdapter, MaildirSettings, MboxAdapter, MboxSettings

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "mail"
NOW = datetime(2026, 10, 20, 8, 0, tzinfo=timezone.utc)


def message(n: int) -> bytes:
    return (f"From: Sender {n} <s{n}@example.org>\nTo: zhang.wei@example.com\nSubject: message {n}\n"
            f"Message-ID: <m{n}@example.org>\nDate: Mon, 12 Oct 2026 10:{n % 60:02d}:00 +0800\n\n"
            f"body {n}\nFrom the start of a line\n").encode()


def roundtrip(cursor):
    return json.loads(json.dumps(cursor))


def poll_all(adapter, cursor=None, times=1):
    titles = []
    for _ in range(times):
        poll = adapter.poll(cursor, now=NOW)
        assert poll.health.status == "ok", poll.health
        cursor = roundtrip(poll.cursor)
        titles += [o.title for o in poll.observations]
    return titles, cursor, poll


# -- maildir -------------------------------------------------------------------------------------------------


def maildir(tmp_path, **settings) -> tuple[mailbox.Maildir, MaildirAdapter]:
    box = mailbox.Maildir(tmp_path / "Maildir", create=True)
    return box, MaildirAdapter("archive", MaildirSettings(path=tmp_path / "Maildir", **settings))


def test_maildir_fixtures_then_only_new_mail(tmp_path):
    box, adapter = maildir(tmp_path)
    for path in sorted(FIXTURES.glob("*.eml")):
        box.add(path.read_bytes())
    titles, cursor, poll = poll_all(adapter)
    assert "您的10月信用卡电子账单已出，还款日10月26日" in titles and titles.count("Reading list for next week") == 1
    assert any("first_run = last:50" in note for note in poll.health.notes)
    assert all(o.id.startswith("archive:") and o.channel == "email" for o in poll.observations)
    undated = next(o for o in poll.observations if o.title == "ALERT disk /var 91% on db-2")
    assert undated.meta["date_source"] == "mtime" and undated.at is not None
    assert poll_all(adapter, cursor)[0] == []
    box.add(message(1))
    assert poll_all(adapter, cursor)[0] == ["message 1"]


def test_maildir_read_and_flagged_mail_is_not_observed_again_but_moved_in_mail_is(tmp_path):
    box, adapter = maildir(tmp_path, first_run="last:10")
    keys = [box.add(message(n)) for n in range(3)]
    for n, key in enumerate(keys):  # one second apart: files written within one clock tick share an mtime
        os.utime(tmp_path / "Maildir" / "new" / key, (1_700_000_000 + n, 1_700_000_000 + n))
    titles, cursor, _ = poll_all(adapter)
    assert titles == ["message 0", "message 1", "message 2"]
    for key in keys:  # a mail client reads and flags them: new/ → cur/ with ":2,FS"
        msg = box[key]
        msg.set_subdir("cur")
        msg.add_flag("SF")
        box[key] = msg
    assert poll_all(adapter, cursor)[0] == []
    moved = tmp_path / "moved"
    moved.write_bytes(message(7))
    os.utime(moved, (1_500_000_000, 1_500_000_000))  # an old message moved in from another folder
    key = box.add(mailbox.MaildirMessage(moved.read_bytes()))
    os.utime(tmp_path / "Maildir" / "new" / key, (1_500_000_000, 1_500_000_000))
    titles, cursor, _ = poll_all(adapter, cursor)
    assert titles == ["message 7"]


def test_maildir_first_run_policies(tmp_path):
    box, _ = maildir(tmp_path)
    for n in range(5):
        box.add(message(n))
    new = MaildirAdapter("a", MaildirSettings(path=tmp_path / "Maildir", first_run="new"))
    titles, cursor, poll = poll_all(new)
    assert titles == [] and any("5 existing messages" in note for note in poll.health.notes)
    last = MaildirAdapter("a", MaildirSettings(path=tmp_path / "Maildir", first_run="last:2"))
    assert len(poll_all(last)[0]) == 2
    since = MaildirAdapter("a", MaildirSettings(path=tmp_path / "Maildir", first_run="since:2100-01-01"))
    assert poll_all(since)[0] == []
    box.add(message(9))
    assert poll_all(new, cursor)[0] == ["message 9"]


def test_maildir_backlog_over_several_polls(tmp_path):
    box, adapter = maildir(tmp_path, max_per_poll=4)
    for n in range(10):
        box.add(message(n))
    titles, _, _ = poll_all(adapter, times=4)
    assert sorted(titles) == sorted(f"message {n}" for n in range(10)) and len(titles) == 10


def test_maildir_missing_is_an_io_failure(tmp_path):
    adapter = MaildirAdapter("a", MaildirSettings(path=tmp_path / "nowhere"))
    poll = adapter.poll({"mark": 1.0}, now=NOW)
    assert poll.health.status == "failed" and poll.health.error_class == "io"
    assert "nowhere" in poll.health.message and poll.cursor == {"mark": 1.0}


def test_maildir_ids_are_stable_across_restarts(tmp_path):
    box, _ = maildir(tmp_path)
    box.add(message(1))
    ids = [[o.id for o in MaildirAdapter("a", MaildirSettings(path=tmp_path / "Maildir")).poll(None, now=NOW)
            .observations] for _ in range(2)]
    assert ids[0] == ids[1] and len(ids[0]) == 1


# -- mbox ----------------------------------------------------------------------------------------------------


def mbox_file(tmp_path, messages) -> Path:
    path = tmp_path / "archive.mbox"
    box = mailbox.mbox(path)
    for raw in messages:
        box.add(raw)
    box.flush()
    box.close()
    return path


def test_mbox_fixtures_and_appends(tmp_path):
    path = mbox_file(tmp_path, [p.read_bytes() for p in sorted(FIXTURES.glob("*.eml"))])
    adapter = MboxAdapter("box", MboxSettings(path=path))
    titles, cursor, poll = poll_all(adapter)
    assert "會議紀錄：第四季預算審查" in titles and titles.count("Reading list for next week") == 1
    assert not any("read only in part" in note for note in poll.health.notes)
    big = next(o for o in poll.observations if o.title == "[CI] nightly build #4411 failed")
    assert big.meta["size"] == len((FIXTURES / "07-large-body.eml").read_bytes().replace(b"\r\n", b"\n")) or \
        big.meta["size"] > 1_000_000
    assert poll_all(adapter, cursor)[0] == []
    box = mailbox.mbox(path)
    box.add(message(1))
    box.flush()
    box.close()
    titles, cursor, poll = poll_all(adapter, cursor)
    assert titles == ["message 1"]
    assert "From the start of a line" in poll.observations[0].text  # ">From " unescaped


WRITER = """
import fcntl, sys
with open(sys.argv[1], "ab") as file:
    fcntl.lockf(file, fcntl.LOCK_EX)
    file.write(sys.stdin.buffer.read(int(sys.argv[2])))
    file.flush()
    print("locked", flush=True)
    sys.stdin.readline()
"""


def test_mbox_partial_last_message_waits(tmp_path):
    import subprocess
    import sys

    path = mbox_file(tmp_path, [message(1)])
    adapter = MboxAdapter("box", MboxSettings(path=path, first_run="new"))
    _, cursor, _ = poll_all(adapter)
    second = b"From MAILER-DAEMON Mon Oct 12 10:00:00 2026\n" + message(2).replace(b"\nFrom ", b"\n>From ") + b"\n"
    with open(path, "ab") as file:
        file.write(second[:100])  # half written, no lock
    titles, cursor, poll = poll_all(adapter, cursor)
    assert titles == [] and any("still being written" in note for note in poll.health.notes)
    rest = second[100:]
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(path), str(len(rest))], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE)
    try:
        writer.stdin.write(rest)
        writer.stdin.flush()
        assert writer.stdout.readline() == b"locked\n"  # complete on disk, but the writer holds its lock
        titles, cursor, _ = poll_all(adapter, cursor)
        assert titles == []
    finally:
        writer.stdin.write(b"\n")
        writer.stdin.close()
        writer.wait(timeout=10)
    titles, cursor, _ = poll_all(adapter, cursor)
    assert titles == ["message 2"]
    assert poll_all(adapter, cursor)[0] == []


def test_mbox_rewritten_by_a_mail_client_rebaselines_without_duplicates(tmp_path):
    path = mbox_file(tmp_path, [message(n) for n in range(5)])
    adapter = MboxAdapter("box", MboxSettings(path=path))
    titles, cursor, _ = poll_all(adapter)
    assert len(titles) == 5
    box = mailbox.mbox(path)
    box.lock()
    box.remove(next(iter(box.keys())))  # compaction: the file is rewritten, offsets move
    box.add(message(5))
    box.flush()
    box.unlock()
    box.close()
    titles, cursor, poll = poll_all(adapter, cursor)
    assert titles == ["message 5"]
    assert any("rewritten" in note for note in poll.health.notes)
    assert poll_all(adapter, cursor)[0] == []


def test_mbox_ids_survive_a_rewrite(tmp_path):
    path = mbox_file(tmp_path, [message(1), message(2)])
    before = {o.title: o.id for o in MboxAdapter("b", MboxSettings(path=path)).poll(None, now=NOW).observations}
    shutil.copy(path, tmp_path / "copy")
    path.write_bytes(b"From x Mon Oct 12 10:00:00 2026\n" + message(0) + b"\n" + (tmp_path / "copy").read_bytes())
    after = {o.title: o.id for o in MboxAdapter("b", MboxSettings(path=path)).poll(None, now=NOW).observations}
    assert after["message 1"] == before["message 1"] and after["message 2"] == before["message 2"]


def test_mbox_missing_is_an_io_failure(tmp_path):
    poll = MboxAdapter("b", MboxSettings(path=tmp_path / "none.mbox")).poll(None, now=NOW)
    assert poll.health.error_class == "io" and "none.mbox" in poll.health.message


@pytest.mark.parametrize("policy,expected", [("new", 0), ("last:2", 2), ("since:2000-01-01", 4)])
def test_mbox_first_run_policies(tmp_path, policy, expected):
    path = mbox_file(tmp_path, [message(n) for n in range(4)])
    titles, _, poll = poll_all(MboxAdapter("b", MboxSettings(path=path, first_run=policy)))
    assert len(titles) == expected and any(policy in note for note in poll.health.notes)


class TestMaildirConformance(AdapterConformance):
    @pytest.fixture
    def make_adapter(self, tmp_path):
        mailbox.Maildir(tmp_path / "Maildir", create=True)
        return lambda: MaildirAdapter("archive", MaildirSettings(path=tmp_path / "Maildir"))

    @pytest.fixture
    def add_new_data(self, tmp_path):
        numbers = itertools.count(1)
        return lambda: (mailbox.Maildir(tmp_path / "Maildir").add(message(next(numbers))), 1)[1]

    @pytest.fixture
    def make_failing_adapter(self, tmp_path):
        return lambda: MaildirAdapter("archive", MaildirSettings(path=tmp_path / "missing"))


class TestMboxConformance(AdapterConformance):
    @pytest.fixture
    def make_adapter(self, tmp_path):
        mbox_file(tmp_path, [])
        return lambda: MboxAdapter("box", MboxSettings(path=tmp_path / "archive.mbox"))

    @pytest.fixture
    def add_new_data(self, tmp_path):
        numbers = itertools.count(1)

        def add():
            box = mailbox.mbox(tmp_path / "archive.mbox")
            box.add(message(next(numbers)))
            box.flush()
            box.close()
            return 1

        return add

    @pytest.fixture
    def make_failing_adapter(self, tmp_path):
        return lambda: MboxAdapter("box", MboxSettings(path=tmp_path / "missing.mbox"))


def test_demo_maildir_and_its_later_mail(tmp_path):
    demo = Path(__file__).resolve().parents[2] / "examples" / "demo"
    shutil.copytree(demo / "maildir", tmp_path / "maildir")
    adapter = MaildirAdapter("mail", MaildirSettings(path=tmp_path / "maildir"))
    titles, cursor, poll = poll_all(adapter)
    assert len(titles) == 13 and "签证材料补交通知：请于10月12日前提交近六个月银行流水" in titles
    assert all(not o.meta.get("unreadable") and not o.meta.get("notes") for o in poll.observations)
    bill = next(o for o in poll.observations if o.title == "您的2026年9月电费账单")
    assert "合计" in bill.text and "117.94 元" in bill.text and "open.gif" not in bill.text
    for path in sorted((demo / "maildir-later" / "new").iterdir()):
        shutil.copy(path, tmp_path / "maildir" / "new" / path.name)
        later, cursor, _ = poll_all(adapter, cursor)
        assert len(later) == 1
    assert poll_all(adapter, cursor)[0] == []
