"""The ``rss`` adapter: RSS 0.9x/1.0/2.0, Atom and JSON Feed over HTTP, one feed or many (contract §10, §11.1).

Settings (``[[adapters]] type = "rss"``), exactly one of ``url``, ``feeds``, ``opml``:

``url``         one feed (http or https), or a web page naming its feed
``feeds``       many feeds: URLs, or tables ``{ url = "…", title = "…", folder = "Tech/Python" }``
``opml``        a subscription list (OPML file, read again at each poll, so edits apply)
``first_run``   ``last:20`` (default) | ``all`` | ``new`` | ``since:YYYY-MM-DD`` | ``last:N``, per feed
``timeout``     connect/read timeout of one request (default ``"30s"``); the whole
                poll also stops before ``poll_timeout``
``max_bytes``   response size cap, counted decompressed (default 10 MiB, at most
                64 MiB); a larger feed is abandoned
``seen_limit``  entry fingerprints kept per feed beyond those still in the feed
                (default 5,000 for one feed, 500 per feed for many)
``max_connections``  feeds fetched at once (default 8); ``max_per_host`` at once
                from one host (default 2)

One feed (``url``) is polled as ``fold_adapters.feeds.feed`` describes; its
observation ids are ``<name>:<entry key>`` and its cursor is that feed's
state, as before many feeds existed. Many feeds (``feeds``/``opml``): each
feed has a key (the first 10 hex digits of the SHA-256 of its configured
URL), ids ``<name>:<feed key>:<entry key>``, ``meta.feed`` (its URL) and
``meta.folder`` (its OPML folder); the cursor is ``{"v": 2, "feeds": {key:
state}}`` where each state adds the feed's own schedule and health line:
``failures``, ``next_at`` (backoff, Retry-After, TTL), ``last_ok_at``,
``error``. A failing feed waits out its own backoff; the others go on. The
source's health is ``failed`` only when every feed is failing; otherwise
``ok``, with a ``message`` naming the failing feeds (``foldctl doctor`` shows
it as a warning) and notes prefixed by the feed's URL.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from fold_adapters.feeds.feed import parse_first_run, user_agent
from fold_core.hookspecs import hookimpl
from fold_core.observation import Poll
from fold_core.plugin_api import Adapter
from fold_core.settings import AdapterSettings, ConfigPath, Duration

__all__ = ["FeedItem", "RssAdapter", "RssSettings", "parse_first_run", "user_agent"]

SEEN_LIMIT = 5000
MAX_BYTES_LIMIT = 64 * 1024 * 1024  # no feed is larger; a larger cap would only let a hostile one cost more memory
URL_PATTERN = r"^[hH][tT][tT][pP][sS]?://\S+$"


class FeedItem(BaseModel):
    """One entry of ``feeds``: a URL, or a table with a title and a folder."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    config_label: ClassVar[str] = "feeds (URLs, or tables `{ url, title, folder }`)"

    url: str = Field(pattern=URL_PATTERN, max_length=4096)
    title: str | None = Field(default=None, max_length=200)
    folder: str | None = Field(default=None, max_length=500)

    @model_validator(mode="before")
    @classmethod
    def _from_url(cls, value: Any) -> Any:
        return {"url": value} if isinstance(value, str) else value


class RssSettings(AdapterSettings):
    url: str | None = Field(default=None, pattern=URL_PATTERN, max_length=4096)
    feeds: tuple[FeedItem, ...] | None = Field(default=None, min_length=1, max_length=5000)
    opml: ConfigPath | None = None
    first_run: str = "last:20"
    timeout: Duration = Field(default=timedelta(seconds=30))
    max_bytes: int = Field(default=10 * 1024 * 1024, ge=1024, le=MAX_BYTES_LIMIT)
    seen_limit: int | None = Field(default=None, ge=10, le=100_000)
    max_connections: int = Field(default=8, ge=1, le=64)
    max_per_host: int = Field(default=2, ge=1, le=16)

    @field_validator("first_run")
    @classmethod
    def _first_run(cls, value: str) -> str:
        parse_first_run(value)
        return value.strip()

    @model_validator(mode="after")
    def _one_way_to_name_feeds(self) -> "RssSettings":
        given = [name for name in ("url", "feeds", "opml") if getattr(self, name) is not None]
        if len(given) != 1:
            raise ValueError(f"expected exactly one of url, feeds or opml, found "
                             f"{' and '.join(given) if given else 'none of them'}")
        return self

    @property
    def many(self) -> bool:
        """Whether the instance reads many feeds (``feeds`` or ``opml``), even if only one is listed."""
        return self.url is None


class RssAdapter(Adapter):
    """Entries of one feed or many; see the module docstring."""

    type_name = "rss"
    channel = "rss"
    Settings = RssSettings

    def poll(self, cursor: Any, *, now) -> Poll:
        if not self.settings.many:
            return self._poll_one(cursor, now)
        from fold_adapters.feeds.many import poll_many

        return poll_many(self.name, self.settings, cursor, now)

    def _poll_one(self, cursor: Any, now) -> Poll:
        import time

        from fold_adapters.feeds.feed import FeedPoller, load_state

        url = self.settings.url
        state = load_state(cursor, url)
        poller = FeedPoller(self.name, self.settings, seen_limit=self.settings.seen_limit or SEEN_LIMIT)
        # A little under poll_timeout, so that the adapter answers before the host gives up on it.
        deadline = self.settings.poll_timeout.total_seconds() * 0.9
        started = time.monotonic()
        result = poller.poll(state, now=now, deadline=deadline - (time.monotonic() - started))
        return Poll(observations=result.observations, cursor=result.state, health=result.health)


@hookimpl
def fold_adapter_types() -> list[type[Adapter]]:
    return [RssAdapter]
