"""``foldctl mcp --http``: the MCP server over Streamable HTTP, with the Pinboard's bind policy.

* **Bind**: a loopback address always may listen; any other address only
  with a token (``[mcp] token_env`` naming an environment variable, or
  ``[mcp] token_file`` naming a file that holds it; at least 16 characters),
  else the command refuses before anything listens (exit 2).
* **Token**: when one is configured, every request carries ``Authorization:
  Bearer <token>`` (compared in constant time) or is answered 401 with
  ``WWW-Authenticate: Bearer`` and a JSON-RPC error whose ``data`` is the
  error document (code ``unauthorized``) — loopback or not.
* **Throttle**: after ``LoginThrottle.LIMIT`` wrong tokens from one address
  within its window, every token try from that address is 429 with
  ``Retry-After`` (the right token too), as on the Pinboard.
* **Host**: on every bind, loopback or not, the ``Host`` and ``Origin``
  headers must name this server (``HostPolicy``: the bound address and port,
  see ``fold_host.web.security``), else 421 / 403 before the token is even
  looked at — a page re-pointing its own name at the bound address (DNS
  rebinding) is never answered. The SDK's own check (which only knows
  ``127.0.0.1``, ``localhost`` and ``::1``) is replaced by this one.
* **Echo**: a JSON-RPC error the SDK answers itself (an unknown method, which
  it quotes whole) has its message and data cut like the tools' errors
  (``EchoCap``, ``fold_host.mcp.server.cap_errors``).

The endpoint is ``/mcp``; a call is answered with a plain JSON response (no
progress or log messages flow during one, so no SSE stream is needed). The
server runs under uvicorn (``serve_socket``,
shared with the Pinboard) until SIGINT / SIGTERM; open client streams get
``GRACE`` seconds to end.
"""

from __future__ import annotations

import hmac
import json
import math
import os

from fold_core.cli.common import explain
from fold_core.errors import UsageError
from fold_host.mcp.server import cap_errors
from fold_host.settings import McpSection
from fold_host.web.security import HostPolicy, LoginThrottle, client_address, is_loopback
from fold_host.web.server import Bind, listen, serve_socket

__all__ = ["ENDPOINT", "BearerGuard", "EchoCap", "HostGuard", "http_app", "read_token", "resolve_bind", "serve"]

ENDPOINT = "/mcp"
INVALID_REQUEST = -32600  # JSON-RPC's code for a request the server will not take
GRACE = 5  # seconds
MIN_TOKEN = 16


def read_token(section: McpSection) -> str | None:
    """The token of ``[mcp]`` (``token_env`` or ``token_file``), None when none is configured."""
    if section.token_env:
        token = (os.environ.get(section.token_env) or "").strip() or None
        where = f"[mcp] token_env names {section.token_env}, which is not set or empty: export it before " \
                "`foldctl mcp --http`"
    elif section.token_file:
        try:
            with open(section.token_file, encoding="utf-8") as handle:
                token = handle.read(4096).strip() or None
        except (OSError, UnicodeDecodeError) as error:
            raise UsageError(f"[mcp] token_file {section.token_file} cannot be read: "
                             f"{getattr(error, 'strerror', None) or error}") from None
        where = f"[mcp] token_file {section.token_file} is empty"
        if token is not None and os.stat(section.token_file).st_mode & 0o077:
            explain(f"foldctl mcp: warning: the token file {section.token_file} can be read by others "
                    f"(chmod 600 {section.token_file})")
    else:
        return None
    if token is None:
        raise UsageError(where)
    if len(token) < MIN_TOKEN or any(ch.isspace() for ch in token):
        raise UsageError(f"the [mcp] token has {len(token)} characters or holds spaces; use at least {MIN_TOKEN}"
                         " characters without spaces (e.g. `python -c 'import secrets;"
                         " print(secrets.token_urlsafe(24))'`)")
    return token


def resolve_bind(host: str, port: int, token: str | None) -> Bind:
    """Where to listen; UsageError for a port out of range or a non-loopback address without a token."""
    if not 0 <= port <= 65535:
        raise UsageError(f"--port must be 0…65535, got {port}")
    if not is_loopback(host) and token is None:
        raise UsageError(f"refusing to listen on {host}: it is not a loopback address and no token is configured."
                         " Set [mcp] token_env = \"NAME\" (or token_file = \"PATH\") in plugins.toml with a long"
                         " random token, or listen on 127.0.0.1")
    return Bind(host, port, token)


async def _refuse(send, status: int, code: str, message: str, headers: tuple = ()) -> None:
    """A JSON-RPC error body (the SDK's client shows its message instead of a bare status)."""
    body = {"jsonrpc": "2.0", "id": None, "error": {"code": INVALID_REQUEST, "message": message, "data": {
        "ok": False, "errors": [{"code": code, "message": message}]}}}
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"cache-control", b"no-store"), *headers]})
    await send({"type": "http.response.body", "body": json.dumps(body).encode("utf-8")})


def _header(scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if key == name:
            return value.decode("latin-1")
    return None


class EchoCap:
    """ASGI middleware: a large JSON-RPC *error* answer has its strings cut (``cap_errors``); others pass as sent.

    Only an answer over ``LARGE`` bytes without a ``"result"`` near its start is read as JSON: a state
    document (large, a result) is never parsed again.
    """

    LARGE = 16 * 1024

    def __init__(self, app) -> None:
        self.app = app

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start: dict | None = None
        chunks: list[bytes] = []

        async def held(message) -> None:
            nonlocal start
            if message["type"] == "http.response.start":
                start = message
                return
            if message["type"] != "http.response.body" or start is None:
                await send(message)
                return
            chunks.append(message.get("body", b""))
            if message.get("more_body", False):
                return
            body = self._capped(b"".join(chunks))
            headers = [(k, v) for k, v in start.get("headers", ()) if k.lower() != b"content-length"]
            await send({**start, "headers": [*headers, (b"content-length", str(len(body)).encode())]})
            await send({"type": "http.response.body", "body": body})

        await self.app(scope, receive, held)

    def _capped(self, body: bytes) -> bytes:
        if len(body) <= self.LARGE or b'"result"' in body[:4096]:
            return body
        try:
            answer = json.loads(body)
        except ValueError:  # an SSE stream or plain text: not a JSON-RPC error
            return body
        if not isinstance(answer, dict) or not isinstance(answer.get("error"), dict):
            return body
        return json.dumps({**answer, "error": cap_errors(answer["error"])}, ensure_ascii=False).encode("utf-8")


class HostGuard:
    """ASGI middleware: a request whose ``Host`` or ``Origin`` is not this server's is refused (421 / 403)."""

    def __init__(self, app, policy: HostPolicy) -> None:
        self.app, self.policy = app, policy

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "http":
            if not self.policy.host_allowed(_header(scope, b"host")):
                await _refuse(send, 421, "invalid_host", "this Fold MCP server answers only requests whose Host "
                              "header names the address and port it listens on")
                return
            if not self.policy.origin_allowed(_header(scope, b"origin")):
                await _refuse(send, 403, "invalid_origin", "this Fold MCP server answers no request from a page "
                              "of another origin")
                return
        await self.app(scope, receive, send)


class BearerGuard:
    """ASGI middleware: with a token, an HTTP request without ``Authorization: Bearer <token>`` is 401.

    Wrong tokens are counted per client address (``LoginThrottle``); a limited address gets 429.
    """

    def __init__(self, app, token: str | None, throttle: LoginThrottle | None = None) -> None:
        self.app, self.token = app, token
        self.throttle = throttle or LoginThrottle()

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "http" and self.token is not None:
            given, address = self._given(scope), client_address(scope)
            wait = self.throttle.wait(address) if given is not None else 0.0
            if wait > 0:
                seconds = max(1, math.ceil(wait))
                await _refuse(send, 429, "too_many_wrong_tokens", f"too many wrong tokens from this address; try "
                              f"again in {seconds} s", ((b"retry-after", str(seconds).encode()),))
                return
            if not self.authorised(scope):
                if given is not None:
                    self.throttle.wrong(address)
                message = ("unauthorized: this Fold MCP server needs `Authorization: Bearer <token>` with the token"
                           " of [mcp] token_env or token_file" if given is None else
                           "unauthorized: the bearer token is not this server's")
                await _refuse(send, 401, "unauthorized", message, ((b"www-authenticate", b'Bearer realm="fold"'),))
                return
        await self.app(scope, receive, send)

    @staticmethod
    def _given(scope) -> str | None:
        text = _header(scope, b"authorization")
        if text is None:
            return None
        return text[7:].strip() if text[:7].lower() == "bearer " else ""

    def authorised(self, scope) -> bool:
        """Whether the request carries the token; asked only when one is configured."""
        given = self._given(scope)
        return given is not None and self.token is not None and hmac.compare_digest(given.encode("utf-8"), self.token.encode("utf-8"))


def http_app(server, bind: Bind, port: int | None = None):
    """The Starlette app of the SDK's Streamable HTTP transport behind the Host and bearer guards.

    ``port``: the port actually bound (``--port 0`` picks one), which the Host header must carry.
    """
    from mcp.server.transport_security import TransportSecuritySettings

    # Our HostGuard covers every bind; the SDK's check would only know 127.0.0.1, localhost and ::1.
    app = server.streamable_http_app(streamable_http_path=ENDPOINT, host=bind.host.strip("[]"), json_response=True,
                                     transport_security=TransportSecuritySettings(
                                         enable_dns_rebinding_protection=False))
    policy = HostPolicy(bind.host, bind.port if port is None else port)
    return HostGuard(BearerGuard(EchoCap(app), bind.token), policy)


def serve(server, bind: Bind, announce) -> tuple[str, str | None]:
    """Listen, call ``announce(url)`` and serve until a signal; ``(url, the signal's name)``."""
    sock = listen(bind)
    url = bind.url(sock.getsockname()[1]).rstrip("/") + ENDPOINT
    app = http_app(server, bind, sock.getsockname()[1])
    stopped_by = serve_socket(app, sock, lambda: announce(url), lifespan="on", graceful=GRACE)
    return url, stopped_by
