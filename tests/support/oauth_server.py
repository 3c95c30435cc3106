"""A local OAuth2 authorization server for the IMAP OAuth2 tests: a token endpoint and token introspection.

``OAuthServer()`` runs a ``ThreadingHTTPServer`` on 127.0.0.1 with:

* ``POST /token`` — the refresh flow (RFC 6749 §6): ``grant_type=refresh_token``
  with a refresh token it knows (``add_refresh``) and the right client gives
  ``{"access_token", "token_type": "Bearer", "expires_in"}`` (``lifetime``,
  changeable); a revoked or unknown refresh token is ``400 invalid_grant``,
  a wrong client secret ``401 invalid_client``; ``rotate = True`` hands a new
  refresh token each time and retires the old one;
* ``POST /introspect`` — RFC 7662, what Dovecot's ``oauth2`` passdb asks:
  ``{"active": true, "username": …}`` for an access token it issued (or was
  given with ``issue``) that is neither expired nor revoked, else
  ``{"active": false}``.

Every request to ``/token`` is recorded (``token_requests``, the form
fields), so a test can count refreshes.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs

__all__ = ["OAuthServer"]


class _Handler(BaseHTTPRequestHandler):
    def log_message(self, *args) -> None:
        pass

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        form = {k: v[0] for k, v in parse_qs(self.rfile.read(length).decode()).items()}
        server: OAuthServer = self.server.owner
        if self.path == "/token":
            status, answer = server.token(form)
        elif self.path == "/introspect":
            status, answer = 200, server.introspect(form.get("token", ""))
        else:
            status, answer = 404, {"error": "not_found"}
        body = json.dumps(answer).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class OAuthServer:
    def __init__(self, *, username: str = "test", client_id: str = "fold-test", client_secret: str | None = None):
        self.username, self.client_id, self.client_secret = username, client_id, client_secret
        self.lifetime = 3600
        self.rotate = False
        self.token_requests: list[dict] = []
        self._refresh: set[str] = set()
        self._access: dict[str, float] = {}  # token -> expiry (monotonic)
        self._counter = itertools.count(1)
        self._lock = threading.Lock()
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self.httpd.daemon_threads = True
        self.httpd.owner = self
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}{path}"

    # -- what a test changes ------------------------------------------------------------

    def add_refresh(self, token: str) -> None:
        with self._lock:
            self._refresh.add(token)

    def revoke_refresh(self, token: str) -> None:
        with self._lock:
            self._refresh.discard(token)

    def issue(self, token: str, lifetime: float = 3600) -> None:
        """Make ``token`` a valid access token (as a token command's provider would)."""
        with self._lock:
            self._access[token] = time.monotonic() + lifetime

    def revoke_access(self, token: str | None = None) -> None:
        """Revoke one access token, or every one issued so far."""
        with self._lock:
            for known in [token] if token else list(self._access):
                self._access.pop(known, None)

    def refreshes(self) -> int:
        return len(self.token_requests)

    # -- the endpoints --------------------------------------------------------------------

    def token(self, form: dict) -> tuple[int, dict]:
        with self._lock:
            self.token_requests.append(form)
            if form.get("client_id") != self.client_id or (
                    self.client_secret is not None and form.get("client_secret") != self.client_secret):
                return 401, {"error": "invalid_client", "error_description": "Unknown client or wrong secret."}
            if form.get("grant_type") != "refresh_token" or form.get("refresh_token") not in self._refresh:
                return 400, {"error": "invalid_grant", "error_description": "Token has been expired or revoked."}
            access = f"access-{next(self._counter)}"
            self._access[access] = time.monotonic() + self.lifetime
            answer = {"access_token": access, "token_type": "Bearer", "expires_in": self.lifetime}
            if self.rotate:
                self._refresh.discard(form["refresh_token"])
                answer["refresh_token"] = f"refresh-{next(self._counter)}"
                self._refresh.add(answer["refresh_token"])
            return 200, answer

    def introspect(self, token: str) -> dict:
        with self._lock:
            expiry = self._access.get(token)
        if expiry is None or expiry < time.monotonic():
            return {"active": False}
        return {"active": True, "username": self.username}

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=5)
