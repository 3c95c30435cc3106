"""OAuth2 access tokens for IMAP (``auth = "oauth2"``): a token command, or the refresh-token flow.

``token_source(settings)`` gives the instance's ``TokenSource``:

* ``CommandToken`` — ``oauth2_token_command`` (an argv list, run without a
  shell) prints an access token on its first non-empty line, as the helpers
  mutt, aerc and msmtp users already have do (``oauth2l fetch``,
  ``mutt_oauth2.py``). It is run for every login (such helpers keep their own
  cache) and again after a refused login, in a process group of its own: at
  most ``OUTPUT_LIMIT`` (64 KiB) of its output is read, and on a timeout or
  more output the group is killed, helpers it started too.
* ``RefreshToken`` — the standard refresh flow (RFC 6749 §6): a POST of
  ``grant_type=refresh_token`` to ``oauth2_token_url`` with the client id,
  the client secret when there is one, and ``oauth2_scope`` when given. The
  access token is kept in memory until a minute before ``expires_in`` runs
  out (or until the server refuses it: ``invalidate``). A refresh token the
  server rotates is used from then on; when it came from
  ``oauth2_refresh_token_file`` the new one is written back to that file
  (atomically, mode 0600), so a restart does not fall back to a retired one.

An access token holding a control character (from either source) is
refused before it reaches the server (``checked_token``).

Failures are ``TokenError`` with a ``Health`` error class: ``auth`` (the
server refused: revoked or expired refresh token, a bad client, a command
that failed or printed nothing — each message says what to do),
``network`` / ``timeout`` (could not ask). Secrets never appear in a
message: only the endpoint, the server's own error code and description, the
command's name and exit status.
"""

from __future__ import annotations

import os
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

__all__ = ["CommandToken", "OUTPUT_LIMIT", "RefreshToken", "TokenError", "TokenSource", "checked_token", "read_secret",
           "token_source"]

COMMAND_TIMEOUT = 60.0
OUTPUT_LIMIT = 64 * 1024  # bytes of a token command's output read at most (an access token is a few KiB)
HTTP_TIMEOUT = 30.0
EXPIRY_MARGIN = 60.0  # seconds before expires_in runs out that a cached token is no longer used
DEFAULT_LIFETIME = 3600.0  # when the token endpoint does not say


class TokenError(Exception):
    """No access token could be had; ``error_class`` is a ``Health.error_class``."""

    def __init__(self, error_class: str, message: str) -> None:
        super().__init__(message)
        self.error_class = error_class


def read_secret(env: str | None, file: Path | None, what: str) -> str:
    """A secret from the environment variable ``env`` or the file ``file`` (stripped); ``TokenError`` when absent."""
    if env is not None:
        value = os.environ.get(env)
        if not value:
            raise TokenError("auth", f"the environment variable {env} ({what}) is not set")
        return value.strip()
    if file is not None:
        try:
            value = Path(file).read_text(encoding="utf-8").strip()
        except OSError as error:
            raise TokenError("auth", f"cannot read {what} from {file}: {error.strerror or error}") from None
        if not value:
            raise TokenError("auth", f"{file} ({what}) is empty")
        return value
    raise TokenError("auth", f"no {what} is configured")


class TokenSource:
    """Gives an access token; ``invalidate`` after the IMAP server refused the last one."""

    def token(self) -> str:
        raise NotImplementedError

    def invalidate(self) -> None:
        """Forget the cached token: the next ``token`` asks anew."""


class CommandToken(TokenSource):
    """``oauth2_token_command``: its first non-empty line, read within ``COMMAND_TIMEOUT`` and ``OUTPUT_LIMIT``.

    The command runs in a process group of its own: on a timeout, or when it
    prints more than ``OUTPUT_LIMIT``, the whole group is killed — helpers it
    started too — and nothing more is read, so a broken or hostile command can
    neither grow the daemon nor leave processes behind. Its stderr is not read
    (it may hold secrets; the message says to run it by hand).
    """

    def __init__(self, argv: tuple[str, ...]) -> None:
        self.argv = list(argv)

    def token(self) -> str:
        import subprocess

        name, timeout = os.path.basename(self.argv[0]), COMMAND_TIMEOUT
        try:
            process = subprocess.Popen(self.argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                       stderr=subprocess.DEVNULL, start_new_session=True)
        except OSError as error:
            raise TokenError("auth", f"oauth2_token_command ({name}) cannot be run: "
                                     f"{error.strerror or error}") from None
        try:
            output, problem = _read_bounded(process, timeout)
            if problem is None:
                returncode = process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            problem = "timeout"
        finally:
            if process.poll() is None or problem is not None:
                _kill_group(process)
            process.stdout.close()  # type: ignore[union-attr]
        if problem == "timeout":
            raise TokenError("timeout", f"oauth2_token_command ({name}) did not finish within "
                                        f"{timeout:g}s; it was stopped with the processes it started")
        if problem == "too_long":
            raise TokenError("auth", f"oauth2_token_command ({name}) printed more than {OUTPUT_LIMIT // 1024} KiB; "
                                     "an access token is far shorter: it was stopped and nothing was used")
        if returncode != 0:
            raise TokenError("auth", f"oauth2_token_command ({name}) failed with exit status {returncode}; "
                                     f"run it by hand to see why (its output is not logged: it may hold secrets)")
        # Lines end at "\n" only: a "\r" or U+2028 inside the token is a control character, not a line break.
        lines = [line.strip() for line in output.decode("utf-8", "replace").split("\n") if line.strip()]
        if not lines:
            raise TokenError("auth", f"oauth2_token_command ({name}) printed no access token")
        return checked_token(lines[0], f"oauth2_token_command ({name})")


def checked_token(token: str, origin: str) -> str:
    """``token`` when it is one line of printable characters; ``TokenError`` naming ``origin`` (never the token)."""
    bad = next((char for char in token if ord(char) < 0x20 or 0x7f <= ord(char) < 0xa0 or char in "\u2028\u2029"),
               None)
    if bad is not None:
        raise TokenError("auth", f"{origin} gave an access token holding a control character "
                                 f"(U+{ord(bad):04X}); it was not sent to the server")
    return token


def _read_bounded(process, timeout: float) -> tuple[bytes, str | None]:
    """The command's stdout up to its end: ``(bytes, None)``, or ``(b"", "timeout" | "too_long")``."""
    import selectors

    deadline = time.monotonic() + timeout
    chunks: list[bytes] = []
    size = 0
    with selectors.DefaultSelector() as selector:
        selector.register(process.stdout, selectors.EVENT_READ)
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return b"", "timeout"
            if not selector.select(left):
                continue
            chunk = os.read(process.stdout.fileno(), 65536)
            if not chunk:
                return b"".join(chunks), None
            size += len(chunk)
            if size > OUTPUT_LIMIT:
                return b"", "too_long"
            chunks.append(chunk)


def _kill_group(process) -> None:
    """SIGKILL the command's process group (it leads its own session), then reap the command."""
    import signal

    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        process.wait(timeout=5)
    except Exception:
        pass


class RefreshToken(TokenSource):
    def __init__(self, settings: Any) -> None:
        self.settings = settings
        self._lock = threading.Lock()  # the poll and the IDLE watch share one cache
        self._access: str | None = None
        self._expires_at = 0.0
        self._rotated: str | None = None

    def invalidate(self) -> None:
        with self._lock:
            self._access = None

    def token(self) -> str:
        with self._lock:
            # A cache lifetime, measured on the monotonic clock: never a fact about the world.
            if self._access is not None and time.monotonic() < self._expires_at:
                return self._access
            self._access, lifetime = self._refresh()
            self._expires_at = time.monotonic() + max(lifetime - EXPIRY_MARGIN, 0.0)
            return self._access

    def _refresh(self) -> tuple[str, float]:
        settings = self.settings
        form = {"grant_type": "refresh_token", "client_id": settings.oauth2_client_id,
                "refresh_token": self._rotated or read_secret(settings.oauth2_refresh_token_env,
                                                              settings.oauth2_refresh_token_file, "refresh token")}
        if settings.oauth2_client_secret_env or settings.oauth2_client_secret_file:
            form["client_secret"] = read_secret(settings.oauth2_client_secret_env,
                                                settings.oauth2_client_secret_file, "client secret")
        if settings.oauth2_scope:
            form["scope"] = settings.oauth2_scope
        answer = self._post(form)
        access = answer.get("access_token")
        if not isinstance(access, str) or not access:
            raise TokenError("auth", f"{settings.oauth2_token_url} answered without an access_token")
        checked_token(access, f"the token endpoint {settings.oauth2_token_url}")
        try:
            lifetime = float(answer["expires_in"])
        except (KeyError, TypeError, ValueError):  # absent, null or not a number
            lifetime = DEFAULT_LIFETIME
        lifetime = lifetime if 0 < lifetime < 10 ** 7 else DEFAULT_LIFETIME
        rotated = answer.get("refresh_token")
        if isinstance(rotated, str) and rotated and rotated != form["refresh_token"]:
            self._rotated = rotated
            if settings.oauth2_refresh_token_file is not None:
                _write_secret(Path(settings.oauth2_refresh_token_file), rotated)
        return access, lifetime

    def _post(self, form: dict) -> dict:
        import httpx

        url = self.settings.oauth2_token_url
        try:
            response = httpx.post(url, data=form, timeout=HTTP_TIMEOUT, headers={"Accept": "application/json"})
        except httpx.TimeoutException:
            raise TokenError("timeout", f"the token endpoint {url} did not answer within {HTTP_TIMEOUT:g}s") from None
        except (httpx.HTTPError, OSError, ValueError) as error:
            raise TokenError("network", f"cannot reach the token endpoint {url}: {type(error).__name__}") from None
        try:
            answer = response.json()
        except ValueError:
            answer = None
        if response.status_code == 200 and isinstance(answer, dict):
            return answer
        if response.status_code in (400, 401) and isinstance(answer, dict) and answer.get("error"):
            code = str(answer.get("error"))[:100]
            described = str(answer.get("error_description") or "")[:300]
            hint = ("authorize Fold again and store the new refresh token" if code == "invalid_grant"
                    else "check oauth2_client_id and the client secret")
            raise TokenError("auth", f"the token endpoint {url} refused the refresh ({code}"
                                     f"{': ' + described if described else ''}): {hint}")
        error_class = "network" if response.status_code >= 500 else "auth"
        raise TokenError(error_class, f"the token endpoint {url} answered HTTP {response.status_code}")


def _write_secret(path: Path, value: str) -> None:
    """Replace the file's content with ``value`` in one rename (mode 0600); a failure leaves the old one."""
    try:
        handle = tempfile.NamedTemporaryFile("w", encoding="utf-8", dir=path.resolve().parent,
                                             prefix=".fold-token-", delete=False)
        with handle:
            os.chmod(handle.name, 0o600)
            handle.write(value + "\n")
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(handle.name, path)
    except OSError:
        try:
            os.unlink(handle.name)
        except (OSError, UnboundLocalError):
            pass


def token_source(settings: Any) -> TokenSource:
    """The token source an ``auth = "oauth2"`` instance's settings name."""
    if settings.oauth2_token_command:
        return CommandToken(tuple(settings.oauth2_token_command))
    return RefreshToken(settings)
