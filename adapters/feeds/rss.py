"""The ``rss`` adapter: RSS 0.9x/1.0/2.0 and Atom feeds over HTTP (contract §10, §11.1).

Settings (``[[adapters]] type = "rss"``):

``url``         the feed (http or https)
``first_run``   ``all`` (default: every entry in the feed) | ``new`` | ``since:YYYY-MM-DD`` | ``last:N``
``timeout``     connect/read timeout of one request (default ``"30s"``); the whole
                fetch also stops at ``poll_timeout``
``max_bytes``   response size cap, counted decompressed (default 10 MiB, at most
                64 MiB); a larger feed is abandoned
``seen_limit``  how many entry fingerprints the cursor keeps (default 5,000; never
                fewer than the feed's own entries)

What one poll does: a conditional GET (ETag / Last-Modified) with a
``User-Agent`` naming Fold and its version, then feedparser on the bytes.
Each entry is observed once per content version: the first time as
``<name>:<entry key>``, after a change of its title or text as
``<name>:<entry key>#v<n>`` (``meta.revision = n``); an unchanged entry is
never observed again. The cursor (plain JSON) holds the URL polled (moved by
permanent redirects), the validators, and a bounded map entry-key digest →
``[content digest, version]``, the most recently seen first.

Health: 304 → ok, nothing new; 429/503 → failed with ``retry_after``;
``Cache-Control: max-age`` / RSS ``<ttl>`` → ``min_interval``; 410 → failed,
``disabled`` and a message saying the source stops (and every later poll says
so again without fetching, until ``url`` is changed); a permanent redirect →
a note, and the new URL is kept; a malformed (bozo) feed keeps its readable
entries and says what was wrong in a note. No httpx, feedparser or OS
exception escapes ``poll``.
"""

from __future__ import annotations

import hashlib
from datetime import date, datetime, time, timedelta, timezone
from typing import Any

from pydantic import Field, field_validator

from fold_core import hookimpl
from fold_core.observation import Health, Observation, Poll, bound_text
from fold_core.plugin_api import Adapter
from fold_core.settings import AdapterSettings, Duration

__all__ = ["RssAdapter", "RssSettings", "user_agent"]

SEEN_LIMIT = 5000
CURSOR_VERSION = 1
MAX_INTERVAL = 86400.0  # a source's own minimum interval is honoured up to one day
MAX_BYTES_LIMIT = 64 * 1024 * 1024  # no feed is larger; a larger cap would only let a hostile one cost more memory


def user_agent() -> str:
    """``Fold/<version> (feed reader; rss adapter)``: names Fold and its installed version."""
    try:
        from importlib.metadata import version

        number = version("fold-state")
    except Exception:  # not installed as a distribution
        number = "0"
    return f"Fold/{number} (feed reader; rss adapter)"


class RssSettings(AdapterSettings):
    url: str = Field(pattern=r"^[hH][tT][tT][pP][sS]?://\S+$", max_length=4096)
    first_run: str = "all"
    timeout: Duration = Field(default=timedelta(seconds=30))
    max_bytes: int = Field(default=10 * 1024 * 1024, ge=1024, le=MAX_BYTES_LIMIT)
    seen_limit: int = Field(default=SEEN_LIMIT, ge=10, le=100_000)

    @field_validator("first_run")
    @classmethod
    def _first_run(cls, value: str) -> str:
        parse_first_run(value)
        return value.strip()


def parse_first_run(value: str) -> tuple[str, Any]:
    """``("all"|"new", None)``, ``("since", datetime)`` or ``("last", N)``; ValueError otherwise."""
    text = value.strip() if isinstance(value, str) else ""
    kind, _, arg = text.partition(":")
    try:
        if kind in ("all", "new") and not arg:
            return kind, None
        if kind == "since":
            return kind, datetime.combine(date.fromisoformat(arg), time(0), tzinfo=timezone.utc)
        if kind == "last" and arg.isdigit() and int(arg) > 0:
            return kind, int(arg)
    except ValueError:
        pass
    raise ValueError(f'expected "all", "new", "since:YYYY-MM-DD" or "last:N", found {value!r}')


class RssAdapter(Adapter):
    """Entries of one feed; see the module docstring."""

    type_name = "rss"
    channel = "rss"
    Settings = RssSettings

    def poll(self, cursor: Any, *, now: datetime) -> Poll:
        state = _load_cursor(cursor, self.settings.url)
        if state.get("gone"):
            return Poll(cursor=state, health=self._gone(state["url"]))
        try:
            return self._poll(state, now)
        except Exception as error:  # the boundary: a source never crashes the host
            return Poll(cursor=_load_cursor(cursor, self.settings.url),
                        health=Health.failed("adapter", f"reading {state['url']} failed: "
                                                        f"{type(error).__name__}: {error}"))

    def _poll(self, state: dict, now: datetime) -> Poll:
        from fold_adapters.feeds.fetch import FetchError, fetch, max_age_seconds, retry_after_seconds

        url = state["url"]
        try:
            fetched = fetch(url, etag=state.get("etag"), last_modified=state.get("last_modified"),
                            timeout=self.settings.timeout.total_seconds(),
                            deadline=self.settings.poll_timeout.total_seconds(),
                            max_bytes=self.settings.max_bytes, user_agent=user_agent())
        except FetchError as error:
            return Poll(cursor=state, health=Health.failed(error.error_class, error.message))
        notes = []
        if fetched.moved_to and fetched.moved_to != url:
            notes.append(f"the feed moved permanently from {url} to {fetched.moved_to}; polling the new URL from now on")
            state = {**state, "url": fetched.moved_to}
        status, headers = fetched.status, fetched.headers
        if status == 410:
            state = {**state, "gone": True}
            return Poll(cursor=state, health=self._gone(fetched.url, notes))
        if status in (429, 503):
            wait = retry_after_seconds(headers.get("retry-after"), now)
            error_class = "rate_limited" if status == 429 else "unavailable"
            message = f"{fetched.url} answered HTTP {status}" + (f"; asked to retry after {wait:g}s" if wait else "")
            return Poll(cursor=state, health=Health(status="failed", error_class=error_class, message=message,
                                                    retry_after=wait, notes=tuple(notes)))
        min_interval = max_age_seconds(headers.get("cache-control"))
        if status == 304:
            return Poll(cursor=state, health=_ok(notes, max(filter(None, (min_interval, state.get("ttl"))), default=None)))
        if status != 200:
            return Poll(cursor=state, health=Health(status="failed", error_class="http", notes=tuple(notes),
                                                    message=f"{fetched.url} answered HTTP {status}"))
        return self._read(fetched, state, notes, min_interval, now)

    def _read(self, fetched, state: dict, notes: list[str], min_interval: float | None, now: datetime) -> Poll:
        from fold_adapters.feeds.entries import parse_feed

        parsed = parse_feed(fetched.body, url=fetched.url, content_type=fetched.headers.get("content-type"))
        if not parsed.is_feed:
            return Poll(cursor=state, health=Health(
                status="failed", error_class="parse", notes=tuple(notes),
                message=f"{fetched.url} did not send a feed ({parsed.problem or 'no entries, no title'})"))
        if parsed.problem:
            notes.append(f"the feed is not well-formed ({parsed.problem}); "
                         f"its {len(parsed.entries)} readable entries were kept")
        if parsed.duplicates:
            notes.append(f"{parsed.duplicates} entries repeated an earlier entry's id and were skipped")
        seen = dict(state.get("seen") or {})
        fresh = not seen and state.get("first")
        wanted = _first_run_keys(parsed.entries, self.settings.first_run, notes) if fresh else None
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
            observations.append(self._observation(entry, version, parsed.title, now))
        limit = max(self.settings.seen_limit, len(current))
        for digest_key, value in seen.items():
            if len(current) >= limit:
                break
            current.setdefault(digest_key, value)
        state = {**state, "seen": current, "first": False, "ttl": parsed.ttl_seconds,
                 "etag": fetched.headers.get("etag"), "last_modified": fetched.headers.get("last-modified")}
        interval = max(filter(None, (min_interval, parsed.ttl_seconds)), default=None)
        return Poll(observations=observations, cursor=state, health=_ok(notes, interval))

    def _observation(self, entry, version: int, feed_title: str | None, now: datetime) -> Observation:
        meta = dict(entry.meta)
        if entry.author:
            meta["author"] = entry.author
        if version > 1:
            meta["revision"] = version
        native = entry.key if version == 1 else f"{entry.key}#v{version}"
        return Observation(id=f"{self.name}:{native}", source=self.name, channel=self.channel,
                           sender=feed_title, at=entry.at, observed_at=now.isoformat(), title=entry.title,
                           text=bound_text(entry.text), url=entry.url, thread=entry.url or entry.key[:1024],
                           meta=meta)

    def _gone(self, url: str, notes: list[str] = ()) -> Health:
        return Health(status="failed", error_class="gone", disabled=True, notes=tuple(notes),
                      message=f"the feed {url} is gone (HTTP 410): source {self.name!r} is disabled; "
                              f"change its url in plugins.toml or remove it")


def _ok(notes: list[str], min_interval: float | None) -> Health:
    interval = min(min_interval, MAX_INTERVAL) if min_interval else None
    return Health(status="ok", notes=tuple(notes), min_interval=interval)


def _load_cursor(cursor: Any, configured: str) -> dict:
    """The cursor as a dict; a new one when absent, unreadable or made for another configured URL."""
    given = cursor if isinstance(cursor, dict) else {}
    seen = {key: value for key, value in (given.get("seen") or {}).items()
            if isinstance(value, list) and len(value) == 2 and isinstance(value[0], str)
            and isinstance(value[1], int)} if isinstance(given.get("seen"), dict) else {}
    if given.get("v") == CURSOR_VERSION and given.get("configured") == configured and isinstance(given.get("url"), str):
        return {**given, "seen": seen}
    return {"v": CURSOR_VERSION, "configured": configured, "url": configured, "etag": None, "last_modified": None,
            "seen": seen, "first": not seen}


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
    notes.append(f"first run (first_run = {policy}): {len(chosen)} of {len(entries)} entries in the feed observed; "
                 f"the others are marked as seen")
    return {entry.key for entry in chosen}


@hookimpl
def fold_adapter_types() -> list[type[Adapter]]:
    return [RssAdapter]
