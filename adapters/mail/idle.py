"""IMAP IDLE (RFC 2177) for the ``email`` adapter: tell the daemon when new mail arrives.

``watch_folder(connect, folder, notify, stopping)`` runs one connection's
life: log in, select the folder read-only, enter IDLE, ``notify("connected")``
(the daemon then polls once, catching up by UID with whatever arrived while
nobody watched), and then ``notify`` on every ``EXISTS`` or ``RECENT`` the
server sends. The poll — with its UID cursor in the host database — does
the reading, so a message is never lost or observed twice whatever happens
to this connection.

``watch_folders`` watches several folders, one connection each (IDLE
watches the selected folder only): it says ``connected`` once every folder
is in IDLE, so the catch-up poll that follows misses nothing, and when one
connection fails it stops the others and raises that failure, so the daemon
reconnects them all together. A folder the server does not have is left out
(``FolderAbsent``; the poll's health names it) unless none is left.

* IDLE is re-issued every ``RENEW_SECONDS`` (24 minutes), before the
  29 minutes after which RFC 2177 lets a server drop an idle client.
* The socket is looked at every ``CHECK_SECONDS`` so a stop is quick.
* A ``BYE``, or a wake-up with nothing to read (the peer closed the
  connection), ends IDLE with ``DONE``; a dead connection then raises, and the
  daemon reconnects with backoff.
* What one look reads is bounded: at most ``MAX_LINES`` untagged lines and
  ``MAX_BYTES`` bytes (imapclient's own ``idle_check`` keeps reading while
  data comes, so a server sending without end grew the daemon without end).
  A server that sends more is not an IMAP server behaving: ``IdleFlood`` —
  the connection is shut without reading further (no ``DONE``, no
  ``LOGOUT``, which would read it all) and the daemon reconnects with
  backoff (``fold_host.daemon.watch``: a connection that drops soon after
  connecting does not reset the backoff). A server without the IDLE capability
  raises ``WatchUnsupported``: the source is polled only.
"""

from __future__ import annotations

import re
import select
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from fold_core.plugin_api import WatchUnsupported

__all__ = ["CHECK_SECONDS", "ConnectionDropped", "FolderAbsent", "IdleFlood", "MAX_BYTES", "MAX_LINES", "RENEW_SECONDS",
           "watch_folder", "watch_folders"]

RENEW_SECONDS = 24 * 60.0
CHECK_SECONDS = 1.0
MAX_LINES = 1000  # untagged lines one look may read (a mailbox changing a lot sends a few dozen)
MAX_BYTES = 1 << 20  # and bytes (imaplib refuses a single line over 1 MB by itself)
NEWS = (b"EXISTS", b"RECENT")
_UNTAGGED = re.compile(rb"^\*\s+(?:(\d+)\s+(EXISTS|RECENT)|(BYE))\b", re.IGNORECASE)


class ConnectionDropped(ConnectionError):
    """The server ended the IDLE connection (BYE, or the socket closed)."""


class IdleFlood(ConnectionDropped):
    """The server sent more during IDLE than one look reads (``MAX_LINES``, ``MAX_BYTES``): dropped."""


class FolderAbsent(LookupError):
    """The folder to watch does not exist on the server (the poll's health says so too)."""


def watch_folder(connect: Callable[[], Any], folder: str, notify: Callable[[str], None], stopping: Any) -> None:
    """Watch ``folder`` over one connection until ``stopping`` is set; raise when it drops (module docstring)."""
    client = connect()
    flooded = False
    try:
        if not client.has_capability("IDLE"):
            raise WatchUnsupported("the server does not offer IDLE; new mail waits for the next poll")
        if not client.folder_exists(folder):
            raise FolderAbsent(f"there is no folder {folder!r} to watch")
        client.select_folder(folder, readonly=True)
        client.idle()
        notify("connected")
        renew_at = time.monotonic() + RENEW_SECONDS
        while not stopping.is_set():
            started = time.monotonic()
            try:
                responses = bounded_check(client, CHECK_SECONDS)
            except IdleFlood:
                flooded = True
                raise
            if any(_is_bye(response) for response in responses):
                raise ConnectionDropped(f"the server ended the connection: {_said(responses)}")
            if any(_is_news(response) for response in responses):
                notify(f"new mail in {folder}")
            woken_for_nothing = not responses and time.monotonic() - started < CHECK_SECONDS / 2
            if woken_for_nothing or time.monotonic() >= renew_at:
                # DONE then IDLE again: on a closed connection this raises, which is how a drop shows.
                _done(client, notify, folder)
                client.idle()
                renew_at = time.monotonic() + RENEW_SECONDS
        _done(client, notify, folder)
    finally:
        try:
            if flooded:  # reading the rest (DONE's answer, LOGOUT's) is what must not happen
                raise IdleFlood("flooded")
            client.logout()
        except Exception:
            try:
                client.shutdown()
            except Exception:
                pass


def watch_folders(connect: Callable[[], Any], folders: Sequence[str], notify: Callable[[str], None],
                  stopping: Any) -> None:
    """Watch every folder of ``folders`` over a connection each until ``stopping`` is set (module docstring)."""
    if len(folders) == 1:
        watch_folder(connect, folders[0], notify, stopping)
        return
    ended, lock = threading.Event(), threading.Lock()
    settled: set[str] = set()
    absent: list[FolderAbsent] = []
    failures: list[BaseException] = []

    def tell(folder: str, why: str) -> None:
        if why != "connected":
            notify(why)
            return
        with lock:
            settled.add(folder)
            everyone = len(settled) == len(folders) and len(absent) < len(folders)
        if everyone:
            notify("connected")

    def run(folder: str) -> None:
        try:
            watch_folder(connect, folder, lambda why: tell(folder, why), ended)
        except FolderAbsent as missing:  # the other folders are still watched
            with lock:
                absent.append(missing)
                none_left = len(absent) == len(folders)
            if none_left:
                failures.append(missing)
                ended.set()
            else:
                tell(folder, "connected")
            return
        except BaseException as failure:  # handed to the caller below
            failures.append(failure)
        ended.set()  # one connection ending ends them all: they reconnect together

    threads = [threading.Thread(target=run, args=(folder,), name=f"idle-{folder}", daemon=True)
               for folder in folders]
    for thread in threads:
        thread.start()
    while not ended.is_set() and not stopping.is_set():
        ended.wait(CHECK_SECONDS)
    ended.set()
    for thread in threads:
        thread.join()
    if failures and not stopping.is_set():
        raise failures[0]


def bounded_check(client: Any, timeout: float) -> list:
    """What the server sent during IDLE within ``timeout``: ``(n, b"EXISTS")``, ``(n, b"RECENT")``,
    ``(b"BYE",)`` or ``(b"*",)`` per untagged line; ``IdleFlood`` beyond ``MAX_LINES`` or ``MAX_BYTES``.

    imapclient's ``idle_check``, bounded: the socket is made non-blocking and
    lines are read while the server has some ready, at most so many."""
    import socket

    from imapclient.exceptions import IMAPClientAbortError

    sock = client.socket()
    sock.settimeout(None)
    sock.setblocking(False)
    try:
        poller = select.poll()  # not select.select: a daemon may hold more than 1024 descriptors
        poller.register(sock.fileno(), select.POLLIN)
        if not poller.poll(timeout * 1000):
            return []
        responses: list = []
        size = 0
        while True:
            try:
                line = client._imap._get_line()
            except (socket.timeout, OSError):  # nothing more ready now (BlockingIOError is an OSError)
                break
            except IMAPClientAbortError as error:
                if "EOF" in str(error.args[0] if error.args else ""):
                    break
                raise
            size += len(line) + 2
            if len(responses) >= MAX_LINES or size > MAX_BYTES:
                raise IdleFlood(f"the server sent more than {MAX_LINES} lines or {MAX_BYTES // 1024} KiB during "
                                "one look at IDLE; the connection was dropped")
            found = _UNTAGGED.match(line)
            if found is None:
                responses.append((b"*",))
            elif found.group(3):
                responses.append((b"BYE", line[:200]))
            else:
                responses.append((int(found.group(1)), found.group(2).upper()))
        return responses
    finally:
        try:
            sock.setblocking(True)
        except OSError:
            pass


def _done(client, notify: Callable[[str], None], folder: str) -> None:
    _text, responses = client.idle_done()
    if any(_is_news(response) for response in responses):
        notify(f"new mail in {folder}")


def _is_news(response: Any) -> bool:
    return isinstance(response, tuple) and len(response) >= 2 and response[1] in NEWS


def _is_bye(response: Any) -> bool:
    return isinstance(response, tuple) and len(response) >= 1 and response[0] == b"BYE"


def _said(responses: list) -> str:
    for response in responses:
        if _is_bye(response):
            return " ".join(part.decode("ascii", "replace") if isinstance(part, bytes) else str(part)
                            for part in response)[:200]
    return "BYE"
