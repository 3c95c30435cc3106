"""One feed's poll: conditional GET, discovery, parse, versions, first run (contract §10).

``FeedPoller(source, settings, prefix=…).poll(state, now=…)`` does what the
rss adapter does for one feed and returns a ``FeedResult``: the new
observations, the feed's next state (its part of the cursor) and its health.
The rss adapter runs one for a single-``url`` instance (``poll_one``) and
many at once for ``feeds`` / ``opml`` (``fold_adapters.feeds.many``).

The state (plain JSON) holds the configured URL, the URL polled (moved by
permanent redirects and by discovery), the validators, the TTL, ``gone``
after a 410, and the bounded map entry-key digest → ``[content digest,
version]``, the most recently seen first. Each entry is observed once per
content version: ``<source>:<prefix><entry key>``, after a change
``…#v<n>`` (``meta.revision = n``).

**Discovery**: when the URL answers a web page instead of a feed, the first
``<link rel="alternate">`` naming a feed (``fold_adapters.feeds.discovery``)
is fetched in the same poll; when it is a feed, its URL is polled from then
on (``discovered_from`` keeps the page) and a note says so. A page that names
no feed is a ``parse`` failure that says the page names none. The link is a
hop from the page (``fold_core.netpolicy``): one that leads inward is refused.

**Credentials** written in the configured URL (``https://user:pw@…``) are
sent to that URL's own origin and nowhere else; the state (host.db) keeps
every URL without them, and every message and note shows ``user:***@``.
"""

from __future__ import annotations

import functools
import hashlib
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from importlib.metadata import version
from typing import Any

from fold_adapters.feeds.discovery import alternate_links, looks_like_html
from fold_adapters.feeds.entries import parse_feed
from fold_adapters.feeds.parsed import Entry, ParsedFeed
from fold_adapters.feeds.fetch import Fetched, FetchError, fetch, max_age_seconds, retry_after_seconds
from fold_adapters.feeds.settings import RssSettings, parse_first_run
from fold_core.netpolicy import mask_credentials, with_credentials_of, without_credentials
from fold_core.observation import Health, Observation, Poll, bound_text

__all__ = ["CURSOR_VERSION", "SEEN_LIMIT", "FeedPoller", "FeedResult", "load_state", "poll_one", "user_agent"]

CURSOR_VERSION = 1
SEEN_LIMIT = 5000  # entry fingerprints kept for a single-feed instance (``seen_limit`` unset)
MAX_INTERVAL = 86400.0  # a source's own minimum interval is honoured up to one day


@functools.lru_cache(maxsize=1)
def user_agent() -> str:
    """``Fold/<version> (feed reader; rss adapter)``: names Fold and its installed version (looked up once)."""
    try:
        number = version("fold-state")
    except Exception:  # not installed as a distribution
        number = "0"
    return f"Fold/{number} (feed reader; rss adapter)"


def load_state(given: Any, configured: str) -> dict:
    """A feed's state as a dict; a new one when absent, unreadable or made for another configured URL.

    Its URLs are kept without credentials (a state written before that keeps what it has seen).
    """
    given = given if isinstance(given, dict) else {}
    seen = {key: value for key, value in (given.get("seen") or {}).items()
            if isinstance(value, list) and len(value) == 2 and isinstance(value[0], str)
            and isinstance(value[1], int)} if isinstance(given.get("seen"), dict) else {}
    bare = without_credentials(configured)
    if given.get("v") == CURSOR_VERSION and given.get("configured") in (bare, configured) \
            and isinstance(given.get("url"), str):
        state = {**given, "configured": bare, "url": without_credentials(given["url"]), "seen": seen}
        if isinstance(state.get("discovered_from"), str):
            state["discovered_from"] = without_credentials(state["discovered_from"])
        return state
    return {"v": CURSOR_VERSION, "configured": bare, "url": bare, "etag": None, "last_modified": None,
            "seen": seen, "first": not seen}


def poll_one(source: str, settings: RssSettings, cursor: Any, now: datetime) -> Poll:
    """One poll of a single-``url`` rss instance: its cursor is the feed's state."""
    url = settings.url
    if url is None:
        raise ValueError("poll_one reads an instance that names one feed by url")
    poller = FeedPoller(source, settings, seen_limit=settings.seen_limit or SEEN_LIMIT, configured=url)
    # A little under poll_timeout, so that the adapter answers before the host gives up on it.
    deadline = settings.poll_timeout.total_seconds() * 0.9
    started = time.monotonic()
    result = poller.poll(load_state(cursor, url), now=now, deadline=deadline - (time.monotonic() - started))
    return Poll(observations=result.observations, cursor=result.state, health=result.health)


@dataclass
class FeedResult:
    observations: list[Observation] = field(default_factory=list)
    state: dict = field(default_factory=dict)
    health: Health = field(default_factory=Health.ok)
    title: str | None = None  # the feed's own title, when it was read


class FeedPoller:
    """Polls one feed for the source ``source`` (see the module docstring)."""

    def __init__(self, source: str, settings: RssSettings, *, prefix: str = "", seen_limit: int, client: Any = None,
                 meta: dict | None = None, fallback_title: str | None = None, configured: str | None = None) -> None:
        self.source, self.settings, self.prefix = source, settings, prefix
        self.configured = configured  # the URL as configured: its credentials go to its origin only
        self.seen_limit, self.client = seen_limit, client
        self.meta, self.fallback_title = dict(meta or {}), fallback_title

    def poll(self, state: dict, *, now: datetime, deadline: float) -> FeedResult:
        """The feed's new observations and state; never raises for a feed failure."""
        if state.get("gone"):
            return _masked(FeedResult(state=state, health=self.gone(state["url"])))
        try:
            return _masked(self._poll(state, now, deadline))
        except Exception as error:  # the boundary: a feed never crashes the source
            return _masked(FeedResult(state=state, health=Health.failed(
                "adapter", f"reading {state['url']} failed: {type(error).__name__}: {error}")))

    def _fetch(self, url: str, state: dict, deadline: float, came_from: str | None = None) -> Fetched:
        return fetch(with_credentials_of(url, self.configured), etag=state.get("etag"),
                     last_modified=state.get("last_modified"),
                     timeout=min(self.settings.timeout.total_seconds(), max(deadline, 1.0)),
                     deadline=max(deadline, 1.0), max_bytes=self.settings.max_bytes, user_agent=user_agent(),
                     client=self.client, came_from=came_from)

    def _poll(self, state: dict, now: datetime, deadline: float) -> FeedResult:
        url = state["url"]
        try:
            fetched = self._fetch(url, state, deadline)
        except FetchError as error:
            return FeedResult(state=state, health=Health.failed(error.error_class, error.message))
        notes = []
        moved_to = without_credentials(fetched.moved_to) if fetched.moved_to else None
        if moved_to and moved_to != url:
            notes.append(f"the feed moved permanently from {url} to {moved_to}; polling the new URL from now on")
            state = {**state, "url": moved_to}
        status, headers = fetched.status, fetched.headers
        if status == 410:
            state = {**state, "gone": True}
            return FeedResult(state=state, health=self.gone(fetched.url, notes))
        if status in (429, 503):
            wait = retry_after_seconds(headers.get("retry-after"), now)
            error_class = "rate_limited" if status == 429 else "unavailable"
            message = f"{fetched.url} answered HTTP {status}" + (f"; asked to retry after {wait:g}s" if wait else "")
            return FeedResult(state=state, health=Health(status="failed", error_class=error_class, message=message,
                                                         retry_after=wait, notes=tuple(notes)))
        min_interval = max_age_seconds(headers.get("cache-control"))
        if status == 304:
            interval = max(filter(None, (min_interval, state.get("ttl"))), default=None)
            return FeedResult(state=state, health=_ok(notes, interval))
        if status in (401, 403):  # the credentials (or their absence) are refused: retrying will not help
            return FeedResult(state=state, health=Health(status="failed", error_class="auth", notes=tuple(notes),
                                                         message=f"{fetched.url} answered HTTP {status}: access refused"))
        if status != 200:
            return FeedResult(state=state, health=Health(status="failed", error_class="http", notes=tuple(notes),
                                                         message=f"{fetched.url} answered HTTP {status}"))
        return self._read(fetched, state, notes, min_interval, now, deadline)

    def _read(self, fetched, state: dict, notes: list[str], min_interval: float | None, now: datetime,
              deadline: float) -> FeedResult:
        parsed = parse_feed(fetched.body, url=fetched.url, content_type=fetched.headers.get("content-type"))
        if not parsed.is_feed:
            found = self._discover(fetched, parsed, state, notes, deadline)
            if isinstance(found, FeedResult):
                return found
            fetched, state, parsed = found
        if parsed.problem:
            notes.append(f"the feed is not well-formed ({parsed.problem}); "
                         f"its {len(parsed.entries)} readable entries were kept")
        if parsed.duplicates:
            notes.append(f"{parsed.duplicates} entries repeated an earlier entry's id and were skipped")
        observations, state = self._entries(parsed, state, notes, now)
        state = {**state, "ttl": parsed.ttl_seconds, "etag": fetched.headers.get("etag"),
                 "last_modified": fetched.headers.get("last-modified")}
        interval = max(filter(None, (min_interval, parsed.ttl_seconds)), default=None)
        return FeedResult(observations=observations, state=state, health=_ok(notes, interval), title=parsed.title)

    def _discover(self, fetched, parsed, state: dict, notes: list[str], deadline: float):
        """A web page instead of a feed: fetch the feed it names; ``(fetched, state, parsed)`` or a failure."""
        content_type = fetched.headers.get("content-type")
        if not looks_like_html(fetched.body, content_type):
            return self._failed_parse(fetched.url, parsed.problem or "no entries, no title", state, notes)
        links = alternate_links(fetched.body, fetched.url)
        if not links:
            return self._failed_parse(fetched.url, "a web page that names no feed in a <link rel=\"alternate\">",
                                      state, notes)
        link = links[0]
        try:
            found = self._fetch(link.url, {}, deadline, came_from=fetched.url)
        except FetchError as error:
            return FeedResult(state=state, health=Health.failed(
                error.error_class, f"{fetched.url} is a web page naming the feed {link.url}, which failed: "
                                   f"{error.message}", notes=tuple(notes)))
        parsed = parse_feed(found.body, url=found.url, content_type=found.headers.get("content-type")) \
            if found.status == 200 else None
        if parsed is None or not parsed.is_feed:
            why = f"HTTP {found.status}" if parsed is None else (parsed.problem or "not a feed either")
            return self._failed_parse(fetched.url, f"a web page naming the feed {link.url}, which answered: {why}",
                                      state, notes)
        target = without_credentials(found.moved_to or found.url)
        notes.append(f"{fetched.url} is a web page; it names the feed {target} (<link rel=\"alternate\" "
                     f"type=\"{link.type}\">), polled from now on")
        return found, {**state, "url": target, "discovered_from": without_credentials(fetched.url)}, parsed

    def _failed_parse(self, url: str, why: str, state: dict, notes: list[str]) -> FeedResult:
        return FeedResult(state=state, health=Health(status="failed", error_class="parse", notes=tuple(notes),
                                                  message=f"{url} did not send a feed ({why})"))

    def _entries(self, parsed, state: dict, notes: list[str], now: datetime) -> tuple[list[Observation], dict]:
        seen = dict(state.get("seen") or {})
        fresh = not seen and state.get("first")
        wanted = _first_run_keys(parsed.entries, self.settings.first_run, notes) if fresh else None
        title = parsed.title or self.fallback_title
        observations, current = [], {}
        for entry in parsed.entries:
            digest_key = hashlib.sha256(entry.key.encode()).hexdigest()[:16]
            known = seen.get(digest_key)
            version = 1 if known is None else (known[1] if known[0] == entry.digest else known[1] + 1)
            current[digest_key] = [entry.digest, version]
            if known is not None and known[0] == entry.digest:
                continue
            if wanted is not None and entry.key not in wanted:
                continue
            observations.append(self._observation(entry, version, title, now))
        limit = max(self.seen_limit, len(current))
        for digest_key, value in seen.items():
            if len(current) >= limit:
                break
            current.setdefault(digest_key, value)
        return observations, {**state, "seen": current, "first": False}

    def _observation(self, entry, version: int, feed_title: str | None, now: datetime) -> Observation:
        meta = {**self.meta, **entry.meta}
        if entry.author:
            meta["author"] = entry.author
        if version > 1:
            meta["revision"] = version
        native = entry.key if version == 1 else f"{entry.key}#v{version}"
        return Observation(id=f"{self.source}:{self.prefix}{native}", source=self.source, channel="rss",
                           sender=feed_title, at=entry.at, observed_at=now.isoformat(), title=entry.title,
                           text=bound_text(entry.text), url=entry.url, thread=entry.url or entry.key[:1024],
                           meta=meta)

    def gone(self, url: str, notes: Sequence[str] = ()) -> Health:
        where = f"source {self.source!r} is disabled" if not self.prefix else "it is no longer polled"
        return Health(status="failed", error_class="gone", disabled=True, notes=tuple(notes),
                      message=f"the feed {url} is gone (HTTP 410): {where}; "
                              f"change its URL in plugins.toml or remove it")


def _masked(result: FeedResult) -> FeedResult:
    """``result`` with every ``user:password@`` of its health shown as ``user:***@`` (it is logged and kept)."""
    health = result.health
    message = mask_credentials(health.message) if health.message else health.message
    notes = tuple(mask_credentials(note) for note in health.notes)
    if message != health.message or notes != health.notes:
        result.health = health.model_copy(update={"message": message, "notes": notes})
    return result


def _ok(notes: list[str], min_interval: float | None) -> Health:
    interval = min(min_interval, MAX_INTERVAL) if min_interval else None
    return Health(status="ok", notes=tuple(notes), min_interval=interval)


def _first_run_keys(entries: list, policy: str, notes: list[str]) -> set[str] | None:
    """Keys of the entries the first poll observes under ``first_run`` (None: all of them)."""
    kind, arg = parse_first_run(policy)
    if kind == "all":
        return None
    if kind == "new":
        chosen = []
    elif kind == "last":
        dated = all(entry.at for entry in entries)
        ordered = sorted(entries, key=lambda e: e.at, reverse=True) if dated else entries
        chosen = ordered[:arg]
    else:
        chosen = [entry for entry in entries if entry.at and datetime.fromisoformat(entry.at) >= arg]
    if len(chosen) < len(entries):
        notes.append(f"first run (first_run = {policy}): {len(chosen)} of {len(entries)} entries in the feed "
                     f"observed; the others are marked as seen")
    return {entry.key for entry in chosen}
