"""``foldctl mcp --http``: the MCP server over Streamable HTTP, with the Pinboard's bind policy.

* **Bind**: a loopback address always may listen; any other address only
  with a token (``[mcp] token_env`` naming an environment variable, or
  ``[mcp] token_file`` naming a file that holds it; at least 16 characters),
  else the command refuses before anything listens (exit 2).
* **Token**: when one is configured, every request carries ``Authorization:
  Bearer <token>`` (compared in constant time) or is answered 401 with
  ``WWW-Authenticate: Bearer`` and a JSON-RPC error whose ``data`` is the
  error document (code ``unauthorized``) — loopback or not.
* **Host**: on a loopback bind the SDK's DNS-rebinding protection answers only
  ``127.0.0.1``, ``localhost`` and ``[::1]`` (Host and Origin headers).

The endpoint is ``/mcp``; a call is answered with a plain JSON response (no
progress or log messages flow during one, so no SSE stream is needed). The
server runs under uvicorn (``serve_socket``,
shared with the Pinboard) until SIGINT / SIGTERM; open client streams get
``GRACE`` seconds to end.
"""

from __future__ import annotations

import hmac
import json
import os

from fold_core.cli.common import explain
from fold_core.errors import UsageError
from fold_host.settings import McpSection
from fold_host.web.security import is_loopback
from fold_host.web.server import Bind, listen, serve_socket

__all__ = ["ENDPOINT", "BearerGuard", "http_app", "read_token", "resolve_bind", "serve"]

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


class BearerGuard:
    """ASGI middleware: with a token, an HTTP request without ``Authorization: Bearer <token>`` is 401."""

    def __init__(self, app, token: str | None) -> None:
        self.app, self.token = app, token

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "http" and self.token is not None and not self.authorised(scope):
            message = ("unauthorized: this Fold MCP server needs `Authorization: Bearer <token>` with the token of "
                       "[mcp] token_env or token_file" if self._given(scope) is None else
                       "unauthorized: the bearer token is not this server's")
            # A JSON-RPC error body: the SDK's client shows its message instead of a bare status.
            body = {"jsonrpc": "2.0", "id": None, "error": {"code": INVALID_REQUEST, "message": message, "data": {
                "ok": False, "errors": [{"code": "unauthorized", "message": message}]}}}
            await send({"type": "http.response.start", "status": 401,
                        "headers": [(b"content-type", b"application/json"),
                                    (b"www-authenticate", b'Bearer realm="fold"'),
                                    (b"cache-control", b"no-store")]})
            await send({"type": "http.response.body", "body": json.dumps(body).encode("utf-8")})
            return
        await self.app(scope, receive, send)

    @staticmethod
    def _given(scope) -> str | None:
        for key, value in scope.get("headers", ()):
            if key == b"authorization":
                text = value.decode("latin-1")
                return text[7:].strip() if text[:7].lower() == "bearer " else ""
        return None

    def authorised(self, scope) -> bool:
        """Whether the request carries the token; asked only when one is configured."""
        given = self._given(scope)
        return given is not None and self.token is not None and hmac.compare_digest(given.encode("utf-8"), self.token.encode("utf-8"))


def http_app(server, bind: Bind):
    """The Starlette app of the SDK's Streamable HTTP transport behind the bearer guard."""
    app = server.streamable_http_app(streamable_http_path=ENDPOINT, host=bind.host.strip("[]"), json_response=True)
    return BearerGuard(app, bind.token)


def serve(server, bind: Bind, announce) -> tuple[str, str | None]:
    """Listen, call ``announce(url)`` and serve until a signal; ``(url, the signal's name)``."""
    sock = listen(bind)
    url = bind.url(sock.getsockname()[1]).rstrip("/") + ENDPOINT
    stopped_by = serve_socket(http_app(server, bind), sock, lambda: announce(url), lifespan="on", graceful=GRACE)
    return url, stopped_by
