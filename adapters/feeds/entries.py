"""Feed bytes → entries with a stable identity and a content fingerprint (contract §10).

``parse_feed(body, url, content_type)`` runs feedparser on the bytes (through
a file object: given bytes or a str, feedparser would open a local file or a
URL named by them) and returns a ``ParsedFeed``: the feed's title and TTL,
the entries, and what was wrong with the document (bozo).

Each entry is made by ``parsed.make_entry`` (its key, fingerprint and link;
see ``fold_adapters.feeds.parsed``); its ``at`` is published (else updated)
as an instant in UTC, and a date feedparser cannot read reliably (non-ASCII
date strings are mis-read silently) is left unknown, its raw string kept in
``meta["date"]``. feedparser already sanitizes embedded HTML (scripts,
iframes, ``on*`` attributes); the text is then read as ``parsed.detail_text``
says. A JSON Feed is read by ``fold_adapters.feeds.jsonfeed``.
"""

from __future__ import annotations

import calendar
import io
from datetime import datetime, timezone
from typing import Any

from fold_adapters.feeds.jsonfeed import parse_json_feed
from fold_adapters.feeds.parsed import (TEXT_READ_LIMIT, TITLE_CHARS, Entry, ParsedFeed, detail_text, make_entry,
                                        unique_entries)
from fold_adapters.text.clean import cut_line

__all__ = ["is_json_feed", "parse_feed"]


def parse_feed(body: bytes, *, url: str, content_type: str | None) -> ParsedFeed:
    """RSS, Atom or (by its media type or its opening brace) a JSON Feed."""
    if is_json_feed(body, content_type):
        return parse_json_feed(body, url=url)
    import feedparser

    headers = {"content-location": url, "content-type": content_type or "application/xml"}
    # Relative links inside entry HTML are not resolved: the text never shows link targets, and resolving
    # them costs as much as the rest of the parse. The entry links themselves are still resolved.
    parsed = feedparser.parse(io.BytesIO(body), response_headers=headers, resolve_relative_uris=False)
    feed = parsed.get("feed", {}) or {}
    problem = None
    if parsed.get("bozo"):
        error = parsed.get("bozo_exception")
        problem = cut_line(f"{type(error).__name__}: {error}", 300) if error is not None else "not well-formed"
    entries, duplicates = unique_entries([_entry(raw) for raw in parsed.get("entries", []) or []])
    is_feed = bool(entries) or bool(parsed.get("version")) or bool(feed.get("title"))
    return ParsedFeed(title=cut_line(feed.get("title"), TITLE_CHARS) or None, ttl_seconds=_ttl(feed.get("ttl")),
                      entries=entries, problem=problem, is_feed=is_feed, duplicates=duplicates)


def is_json_feed(body: bytes, content_type: str | None) -> bool:
    """Whether the document is JSON: ``application/feed+json``, ``application/json``, or a body opening with ``{``."""
    kind = (content_type or "").split(";")[0].strip().lower()
    if kind in ("application/feed+json", "application/json") or kind.endswith("+json"):
        return True
    return body[:512].lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"{")


def _ttl(value: Any) -> float | None:
    text = str(value or "").strip()
    return float(text) * 60 if text.isdigit() and int(text) > 0 else None


def _entry(raw: Any) -> Entry:
    meta: dict[str, Any] = {}
    title = detail_text(raw.get("title"), raw.get("title_detail"), meta)
    text = _content_text(raw, meta)
    return make_entry(entry_id=raw.get("id"), title=title, text=text, link=raw.get("link"),
                      at=_instant(raw, meta), author=raw.get("author"), meta=meta)


def _content_text(raw: Any, meta: dict) -> str:
    parts = []
    for content in raw.get("content", []) or []:
        if isinstance(content, dict):
            parts.append(detail_text(content.get("value"), content, meta))
    if not any(parts):
        parts = [detail_text(raw.get("summary"), raw.get("summary_detail"), meta)]
    return "\n\n".join(part for part in parts if part)[:TEXT_READ_LIMIT]


def _instant(raw: Any, meta: dict) -> str | None:
    for name in ("published", "updated"):
        text = raw.get(name)
        if not text:
            continue
        parsed = raw.get(f"{name}_parsed")
        if parsed is None or not str(text).isascii():
            meta["date"] = cut_line(str(text), 100)
            meta["date_unread"] = True
            return None
        try:
            return datetime.fromtimestamp(calendar.timegm(parsed), tz=timezone.utc).isoformat()
        except (OverflowError, ValueError, OSError, TypeError):
            meta["date"] = cut_line(str(text), 100)
            meta["date_unread"] = True
            return None
    return None
