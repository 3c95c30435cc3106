"""Hostile mail never crashes a mail adapter, and nothing in it is executed or fetched."""

from __future__ import annotations

import json
import mailbox
import threading
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from fold_adapters.mail.mailbox import MaildirAdapter, MaildirSettings, MboxAdapter, MboxSettings
from fold_adapters.mail.mime import mail_observations, read_mail
from fold_core.observation import TITLE_LIMIT
from tests.support.hostile_mail import hostile_messages

NOW = datetime(2026, 10, 20, 8, 0, tzinfo=timezone.utc)


@pytest.fixture(scope="module")
def recorder():
    """A local HTTP server that records every request made to it."""
    requests: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802
            requests.append(self.path)
            self.send_response(200)
            self.end_headers()

        do_POST = do_GET

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", requests
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="module")
def messages(recorder):
    return hostile_messages(recorder[0])


def observations(raw: bytes, name: str):
    return mail_observations(read_mail(raw), source="mail", native_id=name, observed_at=NOW)


def test_every_hostile_message_gives_valid_observations(messages):
    for name, raw in messages.items():
        found = observations(raw, name)
        assert found, name
        for obs in found:
            text = obs.to_json()
            assert type(obs).from_json(text) == obs, name
            assert "\x00" not in text.replace("\\u0000", "\x00") or "\\u0000" not in text, name
            assert len(json.dumps(obs.meta, ensure_ascii=False)) <= 16_000, name


def test_nothing_is_fetched_or_run(messages, recorder):
    url, requests = recorder
    [obs] = observations(messages["scripts-and-remote-references"], "html")
    assert "Hello" in obs.text and "click me" in obs.text and "this" in obs.text
    for marker in ("SCRIPT-RAN", "fetch(", "javascript:", url, "@import", "alert(1)</script>"):
        assert marker not in obs.text, marker
    assert obs.title == "<script>alert(1)</script> invoice"  # kept as words; escaping is the renderer's job
    assert requests == []


def test_one_megabyte_subject_is_bounded(messages):
    [obs] = observations(messages["one-megabyte-subject"], "long")
    assert len(obs.title) <= TITLE_LIMIT and obs.title.startswith("AAAA") and "truncated" in obs.title
    assert obs.text == "body"
    assert any("over-long header lines cut" in note for note in obs.meta["notes"])
    [words] = observations(messages["one-megabyte-encoded-words"], "words")
    assert words.title.startswith("你好你好") and len(words.title) <= TITLE_LIMIT


def test_nul_bytes_and_invalid_utf8_are_replaced_not_fatal(messages):
    [nul] = observations(messages["nul-bytes"], "nul")
    assert nul.title == "zero byte" and "\x00" not in nul.text and "NUL" in nul.text
    [bad] = observations(messages["invalid-utf8"], "bad")
    assert "\ufffd" in bad.title or "bad" in bad.title
    bad.to_json().encode("utf-8")  # no lone surrogates survive


def test_declared_sizes_are_never_believed(messages):
    [obs] = observations(messages["absurd-declared-sizes"], "sizes")
    bomb = next(a for a in obs.meta["attachments"] if a["name"] == "bomb.zip")
    assert bomb["size"] == len(b"PK\x03\x04\x14\x00\x00\x00\x08\x00")


def test_structural_bombs_are_bounded(messages):
    [deep] = observations(messages["deep-nesting"], "deep")
    assert "unreadable" in deep.meta or "innermost" in deep.text
    [many] = observations(messages["many-parts"], "many")
    assert len(many.meta["attachments"]) <= 21
    [param] = observations(messages["huge-parameter"], "param")
    assert "inner text" in param.text
    [crowd] = observations(messages["thousands-of-recipients"], "crowd")
    assert len(crowd.meta["to"]) <= 21 and crowd.meta["to"][-1].startswith("… and ")
    [weird] = observations(messages["weird-charsets"], "weird")
    assert weird.text == "aGVsbG8="  # a bytes-to-bytes "charset" is not a text charset: read as it stands


def test_hostile_messages_through_maildir_and_mbox(tmp_path, messages, recorder):
    box = mailbox.Maildir(tmp_path / "Maildir", create=True)
    for raw in messages.values():
        box.add(raw)
    poll = MaildirAdapter("hostile", MaildirSettings(path=tmp_path / "Maildir", first_run="last:100")).poll(
        None, now=NOW)
    assert poll.health.status == "ok" and len(poll.observations) >= len(messages) - 2  # identical empties collapse
    mbox = mailbox.mbox(tmp_path / "hostile.mbox")
    for raw in messages.values():
        mbox.add(raw)
    mbox.flush()
    mbox.close()
    poll = MboxAdapter("hostile", MboxSettings(path=tmp_path / "hostile.mbox", first_run="last:100")).poll(
        None, now=NOW)
    assert poll.health.status == "ok" and poll.observations
    assert recorder[1] == []


def test_what_the_parser_remembers_across_messages_stays_small():
    """Parameters of Content-Type texts are kept between messages (``mailpolicy``); hostile ones are not."""
    from fold_adapters.mail import policy as mailpolicy

    huge = "text/plain; charset=utf-8; x=" + "a" * 100_000
    for n in range(600):
        raw = (f"From: a@example.org\nSubject: {n}\nMIME-Version: 1.0\n"
               f"Content-Type: multipart/mixed; boundary=\"b{n}\"\n\n--b{n}\nContent-Type: {huge}{n}\n\n"
               f"body {n}\n--b{n}--\n").encode()
        [obs] = mail_observations(read_mail(raw), source="mail", native_id=str(n), observed_at=NOW)
        assert obs.text == f"body {n}"
    assert len(mailpolicy._PARAMS) <= mailpolicy._PARAMS_LIMIT
    assert max(map(len, mailpolicy._PARAMS), default=0) <= mailpolicy._PARAMS_TEXT
