"""The ``email`` adapter against a real Dovecot on 127.0.0.1 (plain, STARTTLS and TLS).

One server for the module; each test works in folders of its own.
"""

from __future__ import annotations

import itertools
import json
import socket
import threading
from datetime import datetime, timezone
from pathlib import Path

import pytest

from conformance.adapter_suite import AdapterConformance
from fold_adapters.mail.imap import EmailAdapter, EmailSettings

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "mail"
NOW = datetime(2026, 10, 20, 8, 0, tzinfo=timezone.utc)
PASSWORD_ENV = "FOLD_TEST_IMAP_PASSWORD"
FOLDERS = itertools.count(1)


@pytest.fixture(autouse=True)
def password(monkeypatch):
    from tests.support.dovecot import PASSWORD

    monkeypatch.setenv(PASSWORD_ENV, PASSWORD)


def adapter(server, folders=("INBOX",), security="none", **settings) -> EmailAdapter:
    port = server.tls_port if security == "ssl" else server.plain_port
    if security != "none":
        settings.setdefault("ca_file", str(server.cert))
    return EmailAdapter("mail", EmailSettings(host="127.0.0.1", port=port, security=security, username="test",
                                              password_env=PASSWORD_ENV, folders=tuple(folders), **settings))


def fixture(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()


def message(n: int, subject: str | None = None) -> bytes:
    return (f"From: Sender {n} <s{n}@example.org>\r\nTo: zhang.wei@example.com\r\n"
            f"Subject: {subject or f'message {n}'}\r\nMessage-ID: <m{n}@example.org>\r\n"
            f"Date: Mon, 12 Oct 2026 10:{n % 60:02d}:00 +0800\r\n\r\nbody {n}\r\n").encode()


def roundtrip(cursor):
    return json.loads(json.dumps(cursor))


def test_all_fixtures_over_plain_imap_without_setting_seen(dovecot):
    names = sorted(p.name for p in FIXTURES.glob("*.eml"))
    for name in names:
        dovecot.append(fixture(name), folder="Fixtures")
    mail = adapter(dovecot, folders=["Fixtures"], first_run="last:100")
    poll = mail.poll(None, now=NOW)
    assert poll.health.status == "ok", poll.health
    titles = [o.title for o in poll.observations]
    assert "您的10月信用卡电子账单已出，还款日10月26日" in titles
    assert "會議紀錄：第四季預算審查" in titles and "打ち合わせの件" in titles
    assert titles.count("Reading list for next week") == 1  # the duplicate Message-ID copy is not observed twice
    assert any("already observed" in note for note in poll.health.notes)
    assert any("first_run = last:100" in note for note in poll.health.notes)
    assert len(poll.observations) == len(names) - 1 + 1  # one duplicate skipped, one forwarded message added
    missing_date = next(o for o in poll.observations if o.title == "ALERT disk /var 91% on db-2")
    assert missing_date.meta["date_source"] == "internaldate" and missing_date.at is not None
    first = poll.observations[0]
    assert first.id.startswith("mail:Fixtures/") and first.url.startswith("imap://test@127.0.0.1:")
    assert first.meta["folder"] == "Fixtures" and "\\Seen" not in first.meta["flags"]
    again = mail.poll(roundtrip(poll.cursor), now=NOW)
    assert again.health.status == "ok" and again.observations == []
    client = dovecot.client()
    try:
        client.select_folder("Fixtures", readonly=True)
        flags = client.get_flags(client.search(["ALL"]))
        assert flags and all(b"\\Seen" not in f for f in flags.values())
        assert client.search(["UNSEEN"]) == sorted(flags)
    finally:
        client.logout()


@pytest.mark.parametrize("security", ["ssl", "starttls"])
def test_tls_and_starttls(dovecot, security):
    dovecot.append(fixture("13-big5.eml"), folder=f"Tls-{security}")
    poll = adapter(dovecot, folders=[f"Tls-{security}"], security=security, first_run="last:5").poll(None, now=NOW)
    assert poll.health.status == "ok", poll.health
    assert [o.title for o in poll.observations] == ["會議紀錄：第四季預算審查"]


def test_untrusted_certificate_is_a_clear_network_failure(dovecot):
    mail = EmailAdapter("mail", EmailSettings(host="127.0.0.1", port=dovecot.tls_port, security="ssl",
                                              username="test", password_env=PASSWORD_ENV))
    poll = mail.poll({"keep": 1}, now=NOW)
    assert poll.health.status == "failed" and poll.health.error_class == "network"
    assert "TLS" in poll.health.message and "CERTIFICATE_VERIFY_FAILED" in poll.health.message
    assert poll.cursor == {"keep": 1} and poll.observations == []


def test_first_run_new_takes_only_mail_arriving_later(dovecot):
    dovecot.append(message(1), folder="New")
    dovecot.append(message(2), folder="New")
    mail = adapter(dovecot, folders=["New"])  # default first_run = new
    first = mail.poll(None, now=NOW)
    assert first.observations == []
    assert any("first_run = new" in note and "2 existing messages" in note for note in first.health.notes)
    dovecot.append(message(3), folder="New")
    second = mail.poll(roundtrip(first.cursor), now=NOW)
    assert [o.title for o in second.observations] == ["message 3"]


def test_first_run_since_a_date(dovecot):
    old = datetime(2026, 9, 1, 12, 0, tzinfo=timezone.utc)
    dovecot.append(message(4), folder="Since", msg_time=old)
    dovecot.append(message(5), folder="Since", msg_time=datetime(2026, 10, 5, 12, 0, tzinfo=timezone.utc))
    poll = adapter(dovecot, folders=["Since"], first_run="since:2026-10-01").poll(None, now=NOW)
    assert [o.title for o in poll.observations] == ["message 5"]
    assert any("since:2026-10-01" in note for note in poll.health.notes)


def test_backlog_arrives_over_several_polls_exactly_once(dovecot):
    for n in range(10, 17):
        dovecot.append(message(n), folder="Backlog")
    mail = adapter(dovecot, folders=["Backlog"], first_run="last:100", max_per_poll=3)
    cursor, titles = None, []
    for _ in range(4):
        poll = mail.poll(cursor, now=NOW)
        cursor = roundtrip(poll.cursor)
        titles += [o.title for o in poll.observations]
    assert titles == [f"message {n}" for n in range(10, 17)]
    assert any("wait for the next poll" in note for note in mail.poll(None, now=NOW).health.notes)


def test_uidvalidity_change_rebaselines_without_duplicates(dovecot):
    for n in range(20, 23):
        dovecot.append(message(n), folder="Renumbered")
    mail = adapter(dovecot, folders=["Renumbered"], first_run="last:10")
    first = mail.poll(None, now=NOW)
    assert len(first.observations) == 3
    old_validity = first.cursor["folders"]["Renumbered"]["uidvalidity"]
    dovecot.doveadm("mailbox", "update", "-u", "test", "--uid-validity", str(old_validity + 1000), "Renumbered")
    dovecot.append(message(23), folder="Renumbered")
    second = mail.poll(roundtrip(first.cursor), now=NOW)
    assert second.health.status == "ok"
    assert [o.title for o in second.observations] == ["message 23"]
    assert any("UIDVALIDITY changed" in note and "3 message(s) handled before skipped" in note
               for note in second.health.notes)
    assert second.observations[0].id.startswith(f"mail:Renumbered/{old_validity + 1000}/")
    third = mail.poll(roundtrip(second.cursor), now=NOW)
    assert third.observations == []


def test_mail_appended_while_polling_is_picked_up_exactly_once(dovecot):
    mail = adapter(dovecot, folders=["Busy"], first_run="last:1000")
    dovecot.append(message(100), folder="Busy")
    stop = threading.Event()
    appended: list[int] = []

    def deliver():
        n = 101
        while not stop.is_set() and n < 160:
            dovecot.append(message(n), folder="Busy")
            appended.append(n)
            n += 1

    writer = threading.Thread(target=deliver)
    writer.start()
    cursor, titles = None, []
    try:
        for _ in range(6):
            poll = mail.poll(cursor, now=NOW)
            assert poll.health.status == "ok", poll.health
            cursor = roundtrip(poll.cursor)
            titles += [o.title for o in poll.observations]
    finally:
        stop.set()
        writer.join()
    final = mail.poll(cursor, now=NOW)
    titles += [o.title for o in final.observations]
    expected = [f"message {n}" for n in [100] + appended]
    assert sorted(titles) == sorted(expected) and len(titles) == len(set(titles))


def test_large_message_is_read_in_part_and_says_so(dovecot):
    dovecot.append(fixture("07-large-body.eml"), folder="Large")
    poll = adapter(dovecot, folders=["Large"], first_run="last:1", max_message_bytes=65536).poll(None, now=NOW)
    [obs] = poll.observations
    assert obs.title == "[CI] nightly build #4411 failed"
    assert obs.meta["size"] == len(fixture("07-large-body.eml"))
    assert any("only the first 65536" in note for note in obs.meta["notes"])
    assert any("read only in part" in note for note in poll.health.notes)


def test_wrong_password_is_an_auth_failure(dovecot, monkeypatch):
    monkeypatch.setenv(PASSWORD_ENV, "not-the-password")
    poll = adapter(dovecot).poll({"keep": 1}, now=NOW)
    assert poll.health.status == "failed" and poll.health.error_class == "auth"
    assert "refused the login" in poll.health.message and "not-the-password" not in poll.health.message
    assert poll.cursor == {"keep": 1}


def test_missing_password_variable_is_an_auth_failure(dovecot, monkeypatch):
    monkeypatch.delenv(PASSWORD_ENV)
    poll = adapter(dovecot).poll(None, now=NOW)
    assert poll.health.error_class == "auth" and PASSWORD_ENV in poll.health.message


def test_missing_folder_is_a_protocol_failure_and_nothing_is_consumed(dovecot):
    dovecot.append(message(40), folder="Present")
    poll = adapter(dovecot, folders=["Present", "No-Such-Folder"], first_run="last:5").poll(None, now=NOW)
    assert poll.health.status == "failed" and poll.health.error_class == "protocol"
    assert "No-Such-Folder" in poll.health.message or "exist" in poll.health.message
    assert poll.observations == [] and poll.cursor is None


def test_server_down_is_a_network_failure():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # bound, not listening: connections are refused
        mail = EmailAdapter("mail", EmailSettings(host="127.0.0.1", port=port, security="none", username="test",
                                                  password_env=PASSWORD_ENV))
        poll = mail.poll(None, now=NOW)
    assert poll.health.status == "failed" and poll.health.error_class == "network"
    assert f"127.0.0.1:{port}" in poll.health.message


def test_silent_server_is_a_timeout():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(1)  # accepts, never greets
        port = sock.getsockname()[1]
        mail = EmailAdapter("mail", EmailSettings(host="127.0.0.1", port=port, security="none", username="test",
                                                  password_env=PASSWORD_ENV, poll_timeout="1s"))
        poll = mail.poll(None, now=NOW)
    assert poll.health.status == "failed" and poll.health.error_class == "timeout"


def test_plaintext_only_for_loopback_hosts():
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match="loopback"):
        EmailSettings(host="imap.example.com", security="none", username="u", password_env="X")
    for host in ("127.0.0.1", "localhost", "::1", "127.0.0.2"):
        EmailSettings(host=host, security="none", username="u", password_env="X")
    assert EmailSettings(host="imap.example.com", username="u", password_env="X").first_run == "new"
    with pytest.raises(ValidationError, match="last:N"):
        EmailSettings(host="h", username="u", password_env="X", first_run="yesterday")




def test_hostile_messages_over_imap_never_crash_the_adapter(dovecot):
    from tests.support.hostile_mail import hostile_messages

    refused = []
    for name, raw in hostile_messages("http://127.0.0.1:9").items():
        try:
            dovecot.append(raw, folder="Hostile")
        except Exception:  # the server may refuse some (NUL bytes, empty): the rest is what matters
            refused.append(name)
    assert "one-megabyte-subject" not in refused and "scripts-and-remote-references" not in refused
    poll = adapter(dovecot, folders=["Hostile"], first_run="last:100").poll(None, now=NOW)
    assert poll.health.status == "ok", poll.health
    assert len(poll.observations) >= 10


class TestEmailConformance(AdapterConformance):
    """The shared adapter conformance suite, against Dovecot (a folder of its own per test)."""

    @pytest.fixture
    def folder(self, dovecot):
        return f"Conformance-{next(FOLDERS)}"

    @pytest.fixture
    def make_adapter(self, dovecot, folder):
        return lambda: adapter(dovecot, folders=[folder], first_run="last:1000")

    @pytest.fixture
    def add_new_data(self, dovecot, folder):
        numbers = itertools.count(1000 + 100 * int(folder.rsplit("-", 1)[1]))

        def add():
            dovecot.append(message(next(numbers)), folder=folder)
            return 1

        dovecot.create_folder(folder)  # empty, before the first poll
        return add

    @pytest.fixture
    def make_failing_adapter(self):
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        return lambda: EmailAdapter("mail", EmailSettings(host="127.0.0.1", port=port, security="none",
                                                          username="test", password_env=PASSWORD_ENV))
