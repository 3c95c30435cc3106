"""The Pinboard's guard: who may ask, what a page may load, which forms count.

One ASGI middleware (``Guard``) in front of every route:

* **Headers** on every answer: a strict Content-Security-Policy (``CSP``:
  ``default-src 'self'``, no script at all, no plugin, no framing, forms only
  to this origin; inline ``style`` attributes are blocked too, so geometry
  lives in SVG attributes and colours in the served stylesheet),
  ``nosniff``, ``Referrer-Policy: same-origin`` (a clicked source link never
  learns the Pinboard's address; its own forms keep their ``Origin``),
  ``no-store``.
* **Host**: on a loopback bind only loopback addresses (``127.0.0.1`` and the
  rest of 127/8, ``[::1]``) and ``localhost`` are answered — a page elsewhere
  cannot reach the Pinboard through DNS rebinding.
* **Token** (when ``[pinboard] token_env`` names one; a non-loopback bind
  refuses to start without it, see ``server``): every request but the login
  form and the stylesheet carries ``Authorization: Bearer <token>`` or the
  HttpOnly ``fold_auth`` cookie that the login form sets (an HMAC of the
  token, never the token itself); anything else is 401 with the login form.
* **Size**: a request body over ``MAX_BODY`` bytes is 413, read at most once.

``LoginThrottle`` limits guessing: after ``LIMIT`` wrong tokens from one
address within ``WINDOW`` seconds (the login form or a Bearer header), every
token try from it is 429 with ``Retry-After`` until the oldest wrong one is
that old — the right token too, so a guesser learns nothing while limited.

``Csrf`` is the signed double-submit token of every form: an HttpOnly
``fold_csrf`` cookie holds a random nonce, each form carries
``HMAC(secret, nonce)``; a POST whose field does not match its cookie, or
whose ``Origin`` is another origin, is refused before it does anything.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import math
import secrets
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Awaitable, Callable
from http.cookies import SimpleCookie
from typing import Any

__all__ = ["AUTH_COOKIE", "CSP", "CSRF_COOKIE", "Csrf", "Guard", "HostPolicy", "LoginThrottle", "MAX_BODY",
           "client_address", "is_loopback", "login_value"]

CSP = ("default-src 'self'; script-src 'none'; object-src 'none'; base-uri 'none'; form-action 'self'; "
       "frame-ancestors 'none'")
HEADERS = (
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"same-origin"),
    (b"x-frame-options", b"DENY"),
    (b"cross-origin-opener-policy", b"same-origin"),
    (b"cross-origin-resource-policy", b"same-origin"),
)
MAX_BODY = 32 * 1024  # an annotation is ≤ 2,000 code points: ≤ 24 KiB once percent-encoded
CSRF_COOKIE, AUTH_COOKIE = "fold_csrf", "fold_auth"
LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})
# Reachable without the token: the login form itself and the stylesheet it uses.
OPEN_PATHS = frozenset({"/login", "/static/pinboard.css"})


def is_loopback(host: str) -> bool:
    """Whether a bind address only listens on this machine (a name other than localhost is not)."""
    host = host.strip("[]")
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class HostPolicy:
    """Which ``Host`` / ``Origin`` a server bound to ``bind_host:port`` answers (DNS-rebinding protection).

    A page on ``attacker.example`` whose name is re-pointed at the bound address still sends
    ``Host: attacker.example``: only names the bind itself stands for pass. A specific address allows
    itself (and ``localhost`` / ``127.0.0.1`` / ``[::1]`` when it is one of those); a wildcard bind
    (``0.0.0.0``, ``::``) allows any IP literal (a rebinding page always sends its own *name*),
    ``localhost`` and this machine's host names. The port must be the bound one (absent only for 80).
    An ``Origin``, when sent, must be ``http://`` with an allowed host and port.
    """

    WILDCARDS = frozenset({"0.0.0.0", "::", ""})

    def __init__(self, bind_host: str, port: int, *, machine_names: frozenset[str] | None = None) -> None:
        host = bind_host.strip("[]").lower()
        self.port, self.wildcard = port, host in self.WILDCARDS
        names = {host}
        if host in LOOPBACK_NAMES:
            names |= LOOPBACK_NAMES
        if self.wildcard:
            names |= {"localhost"} | (self._machine_names() if machine_names is None else machine_names)
        self.names = frozenset(names)

    @staticmethod
    def _machine_names() -> frozenset[str]:
        import socket

        return frozenset(name.lower() for name in (socket.gethostname(), socket.getfqdn()) if name)

    def _name_allowed(self, name: str) -> bool:
        if name in self.names:
            return True
        if not self.wildcard:
            return False
        try:
            ipaddress.ip_address(name)
        except ValueError:
            return False
        return True

    def _allowed(self, netloc: str) -> bool:
        from urllib.parse import urlsplit

        try:
            parts = urlsplit("//" + netloc)
            port = parts.port
        except ValueError:
            return False
        name = (parts.hostname or "").lower()
        if parts.username is not None or parts.password is not None or not name:
            return False
        return (port == self.port if port is not None else self.port == 80) and self._name_allowed(name)

    def host_allowed(self, host: str | None) -> bool:
        """Whether a request's ``Host`` header names this server (a request without one is refused)."""
        return host is not None and len(host) <= 300 and self._allowed(host)

    def origin_allowed(self, origin: str | None) -> bool:
        """Whether a request's ``Origin`` (absent: not a cross-site browser request) is this server."""
        if origin is None:
            return True
        return len(origin) <= 300 and origin.lower().startswith("http://") and self._allowed(origin[7:].rstrip("/"))


def login_value(token: str) -> str:
    """What the ``fold_auth`` cookie holds after a login: derived from the token, not the token."""
    return hmac.new(token.encode("utf-8"), b"fold-pinboard-login", hashlib.sha256).hexdigest()


def cookies_of(scope: dict) -> dict[str, str]:
    """The request's cookies (a malformed header yields none rather than an error)."""
    cookie = SimpleCookie()
    for name, value in scope.get("headers", ()):
        if name == b"cookie":
            try:
                cookie.load(value.decode("latin-1"))
            except Exception:  # http.cookies raises CookieError and others for odd input
                return {}
    return {key: morsel.value for key, morsel in cookie.items()}


class LoginThrottle:
    """Wrong tokens per client address in a sliding window (see the module docstring)."""

    LIMIT, WINDOW, ADDRESSES = 5, 60.0, 4096

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._wrong: OrderedDict[str, deque] = OrderedDict()
        self._lock = threading.Lock()

    def wait(self, address: str) -> float:
        """Seconds before ``address`` may try a token again (0: now)."""
        with self._lock:
            tries = self._recent(address)
            return 0.0 if len(tries) < self.LIMIT else max(tries[0] + self.WINDOW - self._clock(), 0.001)

    def wrong(self, address: str) -> None:
        """``address`` gave a wrong token."""
        with self._lock:
            self._recent(address).append(self._clock())
            self._wrong.move_to_end(address)
            while len(self._wrong) > self.ADDRESSES:  # a flood of addresses cannot grow this without bound
                self._wrong.popitem(last=False)

    def _recent(self, address: str) -> deque:
        tries = self._wrong.setdefault(address, deque())
        while tries and tries[0] <= self._clock() - self.WINDOW:
            tries.popleft()
        return tries


def client_address(scope: dict) -> str:
    client = scope.get("client")
    return str(client[0]) if client else "unknown"


async def too_many(send, seconds: float) -> None:
    """The 429 answer of a limited address."""
    wait = max(1, math.ceil(seconds))
    await send({"type": "http.response.start", "status": 429,
                "headers": [(b"content-type", b"text/plain; charset=utf-8"), (b"retry-after", str(wait).encode())]})
    await send({"type": "http.response.body",
                "body": f"Too many wrong tokens from this address; try again in {wait} s.\n".encode()})


class Csrf:
    """Signed double-submit tokens: cookie nonce ↔ form field ``HMAC(secret, nonce)``."""

    def __init__(self, secret: bytes | None = None) -> None:
        self._secret = secret or secrets.token_bytes(32)

    @staticmethod
    def new_nonce() -> str:
        return secrets.token_urlsafe(24)

    def token(self, nonce: str) -> str:
        return hmac.new(self._secret, b"csrf:" + nonce.encode("utf-8"), hashlib.sha256).hexdigest()

    def valid(self, nonce: str | None, field: str | None) -> bool:
        if not nonce or not field or len(field) > 128:
            return False
        return hmac.compare_digest(self.token(nonce), field)


def _header(scope: dict, name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if key == name:
            return value.decode("latin-1")
    return None


class Guard:
    """ASGI middleware: security headers, Host check, token check, body cap (see the module docstring)."""

    def __init__(self, app, *, token: str | None, loopback: bool,
                 denied: Callable[[dict, Any, Any], Awaitable[None]] | None = None,
                 throttle: LoginThrottle | None = None) -> None:
        self.app, self.token, self.loopback = app, token, loopback
        self._login = login_value(token) if token else None
        self._denied = denied  # an ASGI-like callable(scope, receive, send, why) for the 401 page
        self.throttle = throttle or LoginThrottle()

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message) -> None:
            if message["type"] == "http.response.start":
                headers = [(k, v) for k, v in message.get("headers", ()) if k not in dict(HEADERS)]
                headers.extend(HEADERS)
                if not any(k == b"cache-control" for k, _ in headers):
                    headers.append((b"cache-control", b"no-store"))
                message = {**message, "headers": headers}
            await send(message)

        if self.loopback and not self._host_allowed(scope):
            await _plain(send_with_headers, 421,
                         "This Pinboard answers only to loopback addresses (127.0.0.1, localhost, [::1], …).\n")
            return
        if self.token and self._tries_token(scope):
            wait = self.throttle.wait(client_address(scope))
            if wait > 0:
                await too_many(send_with_headers, wait)
                return
        if self.token and scope["path"] not in OPEN_PATHS and not self.authorised(scope):
            if _bearer(scope) is not None:
                self.throttle.wrong(client_address(scope))
            if self._denied is not None:
                await self._denied(scope, receive, send_with_headers)
            else:
                await _plain(send_with_headers, 401, "A token is needed.\n")
            return
        if scope["method"] in ("POST", "PUT", "PATCH", "DELETE"):
            body = await _read_body(receive, MAX_BODY)
            if body is None:
                await _plain(send_with_headers, 413, f"The request is larger than {MAX_BODY} bytes.\n")
                return
            receive = _replay(body, receive)
        await self.app(scope, receive, send_with_headers)

    def _host_allowed(self, scope: dict) -> bool:
        host = _header(scope, b"host")
        if host is None:
            return True  # HTTP/1.0 without Host: it names no other site
        name = host.rsplit(":", 1)[0] if not host.startswith("[") else host[1:].split("]", 1)[0]
        # Any loopback address (a Pinboard bound to 127.0.0.2 is asked as 127.0.0.2); a name other than
        # localhost is not one, whatever it resolves to (DNS rebinding).
        return is_loopback(name.lower())

    @staticmethod
    def _tries_token(scope: dict) -> bool:
        return _bearer(scope) is not None or (scope["path"] == "/login" and scope["method"] == "POST")

    def authorised(self, scope: dict) -> bool:
        """Whether the request carries the token (a Bearer header or the login cookie); asked only with one."""
        if self.token is None or self._login is None:
            return False
        given = _bearer(scope)
        if given is not None and hmac.compare_digest(given.encode("utf-8"), self.token.encode("utf-8")):
            return True
        cookie = cookies_of(scope).get(AUTH_COOKIE)
        return cookie is not None and hmac.compare_digest(cookie.encode("utf-8"), self._login.encode("utf-8"))


def _bearer(scope: dict) -> str | None:
    given = _header(scope, b"authorization")
    return given[7:].strip() if given is not None and given[:7].lower() == "bearer " else None


async def _plain(send, status: int, text: str) -> None:
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"text/plain; charset=utf-8")]})
    await send({"type": "http.response.body", "body": text.encode("utf-8")})


async def _read_body(receive, limit: int) -> bytes | None:
    """The whole body, or None as soon as it is over ``limit`` bytes."""
    chunks, size = [], 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            break
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
        if not message.get("more_body", False):
            break
    return b"".join(chunks)


def _replay(body: bytes, original):
    """A ``receive`` that hands the app the body read already, then waits as the original would."""
    sent = False

    async def receive():
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await original()

    return receive
