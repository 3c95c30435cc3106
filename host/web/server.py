"""The web server the Pinboard and MCP's HTTP transport run on: the bind policy and uvicorn (contract §11.2).

``resolve_bind`` is the Pinboard's bind policy: a loopback address always
may; any other address (``0.0.0.0``, a LAN address, a host name) only with a
token, read from the environment variable that ``[pinboard] token_env``
names — otherwise it refuses with a ``UsageError`` (exit 2) before anything
listens. A configured token is checked on every request, loopback or not.

``serve_socket`` runs uvicorn in the foreground until
SIGINT / SIGTERM. ``ServerThread`` runs the same server in a thread of this
process (port 0 picks a free port) — for tests, benchmarks, and ``foldctl run
--serve`` (the daemon and the Pinboard in one process); ``stop()`` ends it and
joins the thread.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from fold_core.errors import UsageError
from fold_core.settings import FILE_SECRET_PREFIX, env_value
from fold_host.web.security import is_loopback

__all__ = ["Bind", "ServerThread", "listen", "resolve_bind", "serve_socket"]


@dataclass(frozen=True)
class Bind:
    host: str
    port: int
    token: str | None

    @property
    def loopback(self) -> bool:
        return is_loopback(self.host)

    def url(self, port: int | None = None) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host  # the host is kept without brackets
        return f"http://{host}:{self.port if port is None else port}/"


def resolve_bind(host: str, port: int, token_env: str | None) -> Bind:
    """The address to listen on and the token to check; UsageError when it must not start."""
    if not 0 <= port <= 65535:
        raise UsageError(f"--port must be 0…65535, got {port}")
    if host.startswith("[") and host.endswith("]"):  # "[::1]" as written in a URL: the address is inside
        host = host[1:-1]
    token = None
    if token_env:
        token = env_value(token_env)
        if token is None and token_env.startswith(FILE_SECRET_PREFIX):
            raise UsageError(f"[pinboard] token_file names {token_env[len(FILE_SECRET_PREFIX):]}, which is empty "
                             "or cannot be read")
        if token is None:
            raise UsageError(f"[pinboard] token_env names {token_env}, which is not set or empty:"
                             f" export {token_env} before `foldctl serve`")
        if len(token) < 16:
            where = token_env.removeprefix(FILE_SECRET_PREFIX)
            raise UsageError(f"the token in {where} has {len(token)} characters; use at least 16"
                             " (e.g. `python -c 'import secrets; print(secrets.token_urlsafe(24))'`)")
    if not is_loopback(host) and token is None:
        raise UsageError(
            f"refusing to listen on {host}: it is not a loopback address and no token is configured."
            " Set [pinboard] token_env = \"NAME\" in plugins.toml and export NAME=<a long random token>,"
            " or serve on 127.0.0.1")
    return Bind(host, port, token)


def listen(bind: Bind) -> socket.socket:
    """The listening socket, bound before uvicorn starts: a busy port is a clear error, not a log line."""
    family = socket.AF_INET6 if ":" in bind.host else socket.AF_INET
    try:
        return socket.create_server((bind.host, bind.port), family=family, backlog=128)
    except OSError as error:
        raise UsageError(f"cannot listen on {bind.host}:{bind.port}: {error.strerror or error}") from None


Lifespan = Literal["auto", "on", "off"]


def _server(app, lifespan: Lifespan = "off", graceful: int | None = None):
    import uvicorn

    # log_config=None: uvicorn's warnings go through the root logger (the daemon's one log format)
    config = uvicorn.Config(app, log_level="warning", access_log=False, server_header=False, proxy_headers=False,
                            lifespan=lifespan, timeout_graceful_shutdown=graceful, log_config=None)
    return uvicorn.Server(config)


def serve_socket(app, sock: socket.socket, ready: Callable[[], None] = lambda: None, *,
                 lifespan: Lifespan = "off", graceful: int | None = None) -> str | None:
    """Serve on a listening socket until SIGINT / SIGTERM; the name of the signal that stopped it.

    The handlers are in place before ``ready()`` announces the server, so a
    signal that comes at once still stops it. uvicorn shuts down gracefully on
    either signal and then raises it again for the handler that was there
    before: these handlers take it, so that a stop by signal is a normal end
    (exit 0, like ``foldctl run``). ``lifespan="on"`` runs the app's
    startup and shutdown, ``graceful`` bounds the wait for open connections
    (``foldctl mcp --http``: its session manager, its clients' open streams).
    """
    import signal

    server = _server(app, lifespan, graceful)
    received: list[str] = []

    def stopped(number, _frame) -> None:
        received.append(signal.Signals(number).name)
        server.should_exit = True

    previous = {number: signal.signal(number, stopped) for number in (signal.SIGTERM, signal.SIGINT)}
    try:
        ready()
        server.run(sockets=[sock])
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
    return received[0] if received else None


class ServerThread:
    """uvicorn in a background thread of this process; ``url`` once started, ``stop()`` to end it."""

    def __init__(self, app, bind: Bind) -> None:
        self.bind = bind
        self.server = _server(app)
        self._socket: socket.socket | None = None
        self._port: int | None = None
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int | None:
        return self._port

    @property
    def url(self) -> str:
        return self.bind.url(self.port)

    def start(self, timeout: float = 30.0) -> "ServerThread":
        self._socket = sock = listen(self.bind)
        self._port = sock.getsockname()[1]
        self._thread = threading.Thread(target=self.server.run, kwargs={"sockets": [sock]},
                                        name="pinboard", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self.server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError("the Pinboard server did not start")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        self.server.should_exit = True
        if self._thread is not None:
            self._thread.join(10)
        if self._socket is not None:
            self._socket.close()

    def __enter__(self) -> "ServerThread":
        return self.start()

    def __exit__(self, *exc_info) -> None:
        self.stop()
