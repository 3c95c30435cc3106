"""IMAP IDLE against a real Dovecot: the adapter's watch, and ``foldctl run`` delivering mail within idle_delay.

The daemon test runs ``foldctl run`` as a real process with ``every = "1h"``:
a mail can only reach the inbox before the hour through IDLE. The ceilings
below (60 s) are there so that a broken watch fails instead of hanging; the
latency figure (median of 10 deliveries with the default ``idle_delay``) is
measured by ``bench/bench_idle.py``, not asserted here.
"""

from __future__ import annotations

import itertools
import queue
import signal
import threading
import time

import pytest

from fold_adapters.mail import idle
from fold_adapters.mail.imap import EmailAdapter, EmailSettings
from fold_core.plugin_api import WatchUnsupported
from tests.support.host_workspace import Workspace

PASSWORD_ENV = "FOLD_TEST_IMAP_PASSWORD"
CEILING = 60.0
_n = itertools.count(1)


@pytest.fixture(autouse=True)
def password(monkeypatch):
    from tests.support.dovecot import PASSWORD

    monkeypatch.setenv(PASSWORD_ENV, PASSWORD)


def message(subject: str) -> bytes:
    return (f"From: Li Na <li.na@example.org>\r\nTo: test@example.com\r\nSubject: {subject}\r\n"
            f"Message-ID: <{subject.replace(' ', '-')}@example.org>\r\nDate: Mon, 12 Oct 2026 10:00:00 +0800\r\n"
            f"\r\nbody of {subject}\r\n").encode()


class Watching:
    """``adapter.watch`` on a thread; ``events`` gets each notify reason, or ("raised", exception)."""

    def __init__(self, adapter: EmailAdapter) -> None:
        self.events: queue.Queue = queue.Queue()
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._run, args=(adapter,), daemon=True)
        self.thread.start()

    def _run(self, adapter) -> None:
        try:
            adapter.watch(self.events.put, self.stopping)
            self.events.put(("returned", None))
        except BaseException as error:
            self.events.put(("raised", error))

    def next(self, seconds: float = CEILING):
        return self.events.get(timeout=seconds)

    def stop(self) -> None:
        self.stopping.set()
        self.thread.join(10)


def adapter(server, port=None, **settings) -> EmailAdapter:
    return EmailAdapter("mail", EmailSettings(host="127.0.0.1", port=port or server.plain_port, security="none",
                                              username="test", password_env=PASSWORD_ENV, **settings))


def test_the_watch_says_connected_then_new_mail_across_renewals(dovecot, monkeypatch):
    monkeypatch.setattr(idle, "RENEW_SECONDS", 0.3)  # re-IDLE several times before the mail comes
    watching = Watching(adapter(dovecot))
    try:
        assert watching.next() == "connected"
        time.sleep(1.5)
        dovecot.append(message(f"idle {next(_n)}"))
        assert watching.next() == "new mail in INBOX"
    finally:
        watching.stop()
    assert watching.next(5) == ("returned", None)  # a stop ends the watch cleanly (DONE, LOGOUT)


def test_every_folder_is_watched_and_one_dropping_ends_them_all(dovecot):
    dovecot.create_folder("Lists")
    watching = Watching(adapter(dovecot, folders=["INBOX", "Lists"]))
    try:
        assert watching.next() == "connected"  # once: both folders are in IDLE
        dovecot.append(message(f"list {next(_n)}"), folder="Lists")
        assert watching.next() == "new mail in Lists"
        dovecot.append(message(f"inbox {next(_n)}"))
        assert watching.next() == "new mail in INBOX"
        dovecot.doveadm("kick", "test")  # the server ends both connections
        kind, error = watching.next()
        assert kind == "raised" and not isinstance(error, WatchUnsupported)
    finally:
        watching.stop()
    with pytest.raises(queue.Empty):
        watching.next(0.5)  # nothing after the error: the other folder's watch ended with it


def test_a_folder_the_server_lacks_leaves_the_others_watched(dovecot):
    dovecot.create_folder("Digests")
    watching = Watching(adapter(dovecot, folders=["Nowhere", "Digests"]))
    try:
        assert watching.next() == "connected"
        dovecot.append(message(f"list {next(_n)}"), folder="Digests")
        assert watching.next() == "new mail in Digests"
    finally:
        watching.stop()
    assert watching.next(5) == ("returned", None)  # a stop ends every folder's watch cleanly
    alone = Watching(adapter(dovecot, folders=["Nowhere", "Gone"]))
    kind, error = alone.next()
    assert kind == "raised" and isinstance(error, idle.FolderAbsent)  # nothing to watch: the daemon tries later


def test_idle_off_or_missing_means_polling_only(dovecot):
    assert adapter(dovecot, idle=False).watch_delay() is None
    assert adapter(dovecot).watch_delay().total_seconds() == 10  # idle_delay's default
    from tests.support.dovecot import Dovecot

    plain = Dovecot(capability="IMAP4rev1 LITERAL+ SASL-IR ID ENABLE").start()
    try:
        watching = Watching(adapter(plain, port=plain.plain_port))
        kind, error = watching.next()
        assert kind == "raised" and isinstance(error, WatchUnsupported) and "IDLE" in str(error)
    finally:
        plain.stop()


def test_a_server_restart_ends_the_watch_with_an_error(dovecot):
    watching = Watching(adapter(dovecot))
    try:
        assert watching.next() == "connected"
        dovecot.restart()
        kind, error = watching.next()
        assert kind == "raised" and not isinstance(error, WatchUnsupported)
    finally:
        watching.stop()


# -- foldctl run ---------------------------------------------------------------------------------


class Daemon:
    """``foldctl run`` as a process; its stderr lines collected as they come."""

    def __init__(self, ws: Workspace) -> None:
        from tests.support.dovecot import PASSWORD

        self.ws = ws
        self.process = ws.spawn("run", env={PASSWORD_ENV: PASSWORD})
        self.lines: list[str] = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        for raw in self.process.stderr:
            self.lines.append(raw.decode(errors="replace"))

    def wait_for(self, text: str, count: int = 1) -> None:
        deadline = time.monotonic() + CEILING
        while sum(text in line for line in self.lines) < count:
            assert time.monotonic() < deadline, f"no {text!r} ({count}) in:\n" + "".join(self.lines)
            assert self.process.poll() is None, "foldctl run exited:\n" + "".join(self.lines)
            time.sleep(0.1)

    def stop(self) -> int:
        self.process.send_signal(signal.SIGTERM)
        code = self.process.wait(30)
        self.reader.join(5)
        return code


def inbox_titles(ws: Workspace) -> list[str]:
    code, document, _ = ws.run("inbox", "--source", "mail", "--limit", "500")
    return [o["title"] for o in document["observations"]] if code == 0 else []


def wait_in_inbox(ws: Workspace, title: str) -> float:
    started = time.monotonic()
    while title not in inbox_titles(ws):
        assert time.monotonic() - started < CEILING, f"{title!r} not in the inbox after {CEILING:g}s"
        time.sleep(0.2)
    return time.monotonic() - started


def test_foldctl_run_delivers_by_idle_and_catches_up_after_a_restart(dovecot, tmp_path):
    ws = Workspace(tmp_path, sources=(), extra=f'''
        [[adapters]]
        name = "mail"
        type = "email"
        every = "1h"
        idle_delay = "1s"
        host = "127.0.0.1"
        port = {dovecot.plain_port}
        security = "none"
        username = "test"
        password_env = "{PASSWORD_ENV}"
    ''')
    daemon = Daemon(ws)
    try:
        daemon.wait_for("status=connected")
        for n in range(3):
            dovecot.append(message(f"pushed {n}"))
            wait_in_inbox(ws, f"pushed {n}")
        dovecot.restart(during=lambda: dovecot.drop_into_maildir(message("while down")))
        daemon.wait_for("status=connected", count=2)  # reconnected (after backoff)
        wait_in_inbox(ws, "while down")
        dovecot.append(message("after the restart"))
        wait_in_inbox(ws, "after the restart")
        time.sleep(2)  # let any second poll happen: it must not observe anything twice
        titles = inbox_titles(ws)
        assert sorted(titles) == sorted(["pushed 0", "pushed 1", "pushed 2", "while down", "after the restart"])
        assert any("status=dropped" in line for line in daemon.lines)
    finally:
        code = daemon.stop()
    assert code == 0, "".join(daemon.lines)
