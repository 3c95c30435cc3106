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

from datetime import datetime
from typing import Any, ClassVar

from fold_adapters.feeds.settings import FeedItem, RssSettings
from fold_core.hookspecs import hookimpl
from fold_core.observation import Poll
from fold_core.plugin_api import Adapter

__all__ = ["FeedItem", "RssAdapter", "RssSettings"]


class RssAdapter(Adapter):
    """Entries of one feed or many; see the module docstring."""

    type_name = "rss"
    channel = "rss"
    Settings: ClassVar[type[RssSettings]] = RssSettings
    settings: RssSettings

    def poll(self, cursor: Any, *, now: datetime) -> Poll:
        # lazy: polling loads the bounded HTTP client (urllib, ssl, httpx), the parsers and lxml; the host
        # loads this module to register the type, on every command
        from fold_adapters.feeds import feed, many

        if not self.settings.many:
            return feed.poll_one(self.name, self.settings, cursor, now)
        return many.poll_many(self.name, self.settings, cursor, now)


@hookimpl
def fold_adapter_types() -> list[type[Adapter]]:
    return [RssAdapter]
