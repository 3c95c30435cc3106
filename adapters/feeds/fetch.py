"""One bounded HTTP GET for a feed (contract §10).

``fetch(url, ...)`` is the only place httpx is used by the rss adapter. It
keeps these promises:

* every httpx/OSError failure becomes a ``FetchError(error_class, message)``
  — nothing from httpx escapes;
* timeouts on connect/read/write (``timeout``) and a total ``deadline`` that
  holds however the server trickles, in its headers as in its body
  (``fold_core.bounded_http``): at the deadline the request ends and the
  poll's thread returns;
* redirects followed by hand (at most ``MAX_REDIRECTS``, http/https only) so
  that a **permanent** one (301/308) is reported: ``Fetched.moved_to`` is
  where the leading chain of permanent redirects ends, the URL to poll from
  now on;
* where a chain may lead (``fold_core.netpolicy``): a configured URL on a
  link-local or metadata address is refused (``config``), and so is a
  redirect that moves inward (public → private → loopback) unless ``[host]
  allow_private_redirects`` (``redirect``); ``came_from`` makes the first
  request a hop too (a feed named by a web page). A permanent redirect that
  moved inward is followed (when allowed) but never becomes ``moved_to``;
* credentials in a URL (``user:password@``) never appear in an error message;
* conditional GET (``If-None-Match`` / ``If-Modified-Since``); a 304 has no body;
* the body is streamed and abandoned as soon as it exceeds ``max_bytes``,
  counted after decompression (gzip and deflate are decoded in steps that
  never pass the cap: a gzip bomb costs at most the cap); a declared
  ``Content-Length`` above the cap is refused before reading anything;
* non-2xx answers are returned, not raised: the adapter decides (304, 410,
  429, 503, …).

httpx is imported inside ``fetch``.
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass, field
from datetime import datetime
from email.utils import parsedate_to_datetime
from typing import Any

from fold_core import netpolicy
from fold_core.bounded_http import DEADLINE_EXTENSION, bounded_client, flavour

__all__ = ["FetchError", "Fetched", "fetch", "retry_after_seconds", "max_age_seconds"]

MAX_REDIRECTS = 5
MAX_SERVER_DELAY = 86400.0  # the longest wait a feed's server can ask for (Retry-After, max-age): one day
PERMANENT = {301, 308}
REDIRECTS = {301, 302, 303, 307, 308}


class FetchError(Exception):
    """The feed could not be fetched; ``error_class`` is a ``Health.error_class``."""

    def __init__(self, error_class: str, message: str) -> None:
        super().__init__(message)
        self.error_class = error_class
        self.message = message


@dataclass(frozen=True)
class Fetched:
    status: int
    url: str  # the URL that answered
    headers: dict[str, str] = field(default_factory=dict)  # lower-case names
    body: bytes = b""
    moved_to: str | None = None  # where permanent redirects lead (poll there from now on)


def fetch(url: str, *, etag: str | None = None, last_modified: str | None = None, timeout: float = 30.0,
          deadline: float = 120.0, max_bytes: int = 10 * 1024 * 1024, user_agent: str = "Fold",
          client: Any = None, came_from: str | None = None) -> Fetched:
    """GET ``url`` with the promises of the module docstring; raise ``FetchError`` on failure.

    :param client: a ``fold_core.bounded_http.bounded_client`` to reuse (many feeds in one poll share one:
        a new client loads the CA bundle, ~50 ms); by default a client of its own. The deadline of this
        fetch goes with each request (``DEADLINE_EXTENSION``), so a shared client keeps each feed's own.
    :param came_from: the page whose link ``url`` is (discovery): the first request is then a hop from it.
    """
    try:
        return _fetch(url, etag=etag, last_modified=last_modified, timeout=timeout, deadline=deadline,
                      max_bytes=max_bytes, user_agent=user_agent, client=client, came_from=came_from)
    except FetchError as error:
        raise FetchError(error.error_class, netpolicy.mask_credentials(error.message)) from None


def _fetch(url: str, *, etag: str | None, last_modified: str | None, timeout: float, deadline: float,
           max_bytes: int, user_agent: str, client: Any, came_from: str | None) -> Fetched:
    import httpx

    bound = flavour("httpx")
    too_large: type[Exception] = bound.TooLarge
    late: type[Exception] = bound.DeadlineExceeded

    headers = {"User-Agent": user_agent,
               "Accept": "application/rss+xml, application/atom+xml, application/rdf+xml, "
                         "application/xml;q=0.9, text/xml;q=0.9, */*;q=0.5"}
    if etag:
        headers["If-None-Match"] = etag
    if last_modified:
        headers["If-Modified-Since"] = last_modified
    started = time.monotonic()
    moved_to, permanent_so_far, current = None, True, url
    try:
        session = contextlib.nullcontext(client) if client is not None else \
            bounded_client(seconds=deadline, max_bytes=max_bytes, follow_redirects=False)
        with session as http:
            _check_scheme(current, "config")
            problem = netpolicy.configured_problem(current) if came_from is None else \
                netpolicy.hop_problem(came_from, current)
            if problem is not None:
                raise FetchError("config" if came_from is None else "redirect", problem)
            for _ in range(MAX_REDIRECTS + 1):
                with http.stream("GET", current, headers=headers, timeout=httpx.Timeout(timeout),
                                 follow_redirects=False,
                                 extensions={DEADLINE_EXTENSION: started + deadline}) as response:
                    if response.status_code in REDIRECTS and "location" in response.headers:
                        target = str(response.url.join(response.headers["location"]))
                        _check_scheme(target, "redirect")
                        problem = netpolicy.hop_problem(current, target)
                        if problem is not None:
                            raise FetchError("redirect", f"refused a redirect (HTTP {response.status_code}): "
                                                         f"{problem}")
                        # A move inward (allowed) is followed this time, never stored as the feed's new home.
                        permanent_so_far = permanent_so_far and response.status_code in PERMANENT and \
                            not netpolicy.moves_inward(current, target)
                        if permanent_so_far:
                            moved_to = target
                        current = target
                        continue
                    body = b""
                    if response.status_code == 200:
                        body = _read_capped(response, max_bytes, current)
                    return Fetched(response.status_code, current, {k.lower(): v for k, v in response.headers.items()},
                                   body, moved_to)
            raise FetchError("redirect", f"more than {MAX_REDIRECTS} redirects starting at {url}")
    except FetchError:
        raise
    except too_large as error:
        raise FetchError("too_large", str(error)) from None
    except late:
        raise FetchError("timeout", f"{current} did not send the feed within {deadline:g}s (poll_timeout); "
                                    "abandoned") from None
    except httpx.TimeoutException as error:
        raise FetchError("timeout", f"no answer from {current} within {timeout:g}s ({type(error).__name__})") from None
    except httpx.ConnectError as error:
        raise FetchError("network", f"cannot connect to {current}: {error}") from None
    except httpx.InvalidURL as error:
        raise FetchError("config", f"not a usable URL {current!r}: {error}") from None
    except (httpx.HTTPError, httpx.StreamError) as error:
        raise FetchError("network", f"fetching {current} failed: {type(error).__name__}: {error}") from None
    except (OSError, ValueError, UnicodeError) as error:
        raise FetchError("network", f"fetching {current} failed: {type(error).__name__}: {error}") from None


def _check_scheme(url: str, error_class: str) -> None:
    if not url.lower().startswith(("http://", "https://")):
        raise FetchError(error_class, f"only http and https feeds are fetched, not {url[:200]!r}")


def _read_capped(response: Any, max_bytes: int, url: str) -> bytes:
    """The body (the transport already holds the cap and the deadline; this keeps the promise local too)."""
    body = bytearray()
    for chunk in response.iter_bytes():
        body += chunk
        if len(body) > max_bytes:
            raise FetchError("too_large", f"{url} sent more than the cap of {max_bytes:,} bytes; abandoned")
    return bytes(body)


def retry_after_seconds(value: str | None, now: datetime) -> float | None:
    """``Retry-After`` as seconds from ``now`` (delta-seconds or an HTTP date), at most ``MAX_SERVER_DELAY``.

    None when absent or unreadable. A huge number or a far-future date is
    clamped (the host clamps again to ``[host] max_backoff``): a server cannot
    silence a feed for years, nor overflow a clock.
    """
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return min(float(value), MAX_SERVER_DELAY)
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if when.tzinfo is None:
        return None
    return min(max(0.0, (when - now).total_seconds()), MAX_SERVER_DELAY)


def max_age_seconds(cache_control: str | None) -> float | None:
    """``max-age`` of a ``Cache-Control`` header, at most ``MAX_SERVER_DELAY`` (None with no-store/no-cache)."""
    if not cache_control:
        return None
    directives = [part.strip().lower() for part in cache_control.split(",")]
    if "no-store" in directives or "no-cache" in directives:
        return None
    for directive in directives:
        name, _, value = directive.partition("=")
        if name.strip() == "max-age" and value.strip().strip('"').isdigit():
            seconds = min(float(value.strip().strip('"')), MAX_SERVER_DELAY)
            return seconds if seconds > 0 else None
    return None
