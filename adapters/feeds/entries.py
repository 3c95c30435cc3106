"""Feed bytes → entries with a stable identity and a content fingerprint (contract §10).

``parse_feed(body, url, content_type)`` runs feedparser on the bytes (through
a file object: given bytes or a str, feedparser would open a local file or a
URL named by them) and returns a ``ParsedFeed``: the feed's title and TTL,
the entries, and what was wrong with the document (bozo).

An ``Entry`` keeps the source's words, cleaned and bounded:

* ``key`` — the entry's identity: its ``id``/``guid``, else its link, else
  ``sha256:`` of title and content. Keys longer than ``KEY_LIMIT`` are
  replaced by ``sha256:`` of themselves so ids stay within §10's limits.
* ``digest`` — a fingerprint of the title and text as read: a change in what
  a person reads makes a new version; markup churn does not.
* ``at`` — published (else updated) as an instant in UTC; a date feedparser
  cannot read reliably (non-ASCII date strings are mis-read silently) is
  left unknown, its raw string kept in ``meta["date"]``.
* ``url`` — the link, only when it is http(s) (a ``javascript:`` or
  ``data:`` link is dropped and the fact noted in ``meta``).

feedparser already sanitizes embedded HTML (scripts, iframes, ``on*``
attributes); the text is then read with ``htmltext.html_to_text`` (the mail
adapters' converter: one HTML-to-text path).
"""

from __future__ import annotations

import calendar
import hashlib
import io
import re
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from fold_adapters.text.html import html_to_text
from fold_adapters.text.clean import clean_text
from fold_adapters.text.clean import cut_line

__all__ = ["Entry", "ParsedFeed", "is_json_feed", "make_entry", "markup_text", "parse_feed", "unique_entries"]

KEY_LIMIT = 400
TITLE_CHARS = 500
URL_LIMIT = 4096
TEXT_READ_LIMIT = 200_000  # characters of one entry's text kept before bounding for the observation
_HTML_HINT = re.compile(r"<\s*/?\s*[a-zA-Z][^>]*>|&(#\d+|#x[0-9a-fA-F]+|[a-zA-Z]+);")
_ACTIVE_MARKUP = re.compile(r"<\s*(script|style|iframe|object|embed|svg)\b", re.IGNORECASE)


@dataclass
class Entry:
    key: str
    title: str | None
    text: str
    digest: str
    url: str | None
    at: str | None
    author: str | None
    meta: dict[str, Any] = field(default_factory=dict)


@dataclass
class ParsedFeed:
    title: str | None
    ttl_seconds: float | None
    entries: list[Entry]
    problem: str | None  # what was wrong with the document (bozo), None when well-formed
    is_feed: bool  # False: nothing in the document looked like a feed
    duplicates: int = 0  # entries dropped because an earlier entry had the same key


def parse_feed(body: bytes, *, url: str, content_type: str | None) -> ParsedFeed:
    """RSS, Atom or (by its media type or its opening brace) a JSON Feed."""
    if is_json_feed(body, content_type):
        from fold_adapters.feeds.jsonfeed import parse_json_feed

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


def unique_entries(entries: list[Entry]) -> tuple[list[Entry], int]:
    """The entries with the first of each key kept, and how many repeats were dropped."""
    kept, keys = [], set()
    for entry in entries:
        if entry.key not in keys:
            keys.add(entry.key)
            kept.append(entry)
    return kept, len(entries) - len(kept)


def make_entry(*, entry_id: Any, title: str, text: str, link: Any, at: str | None, author: Any,
               meta: dict) -> Entry:
    """An ``Entry`` from already read parts (bounded, the link checked, the key and digest made)."""
    title = cut_line(title, TITLE_CHARS) or None
    digest = hashlib.sha256(f"{title or ''}\x1f{text}".encode()).hexdigest()[:16]
    safe_link = _safe_url(link, meta)
    key = _key(entry_id, safe_link or link, digest)
    return Entry(key=key, title=title, text=text, digest=digest, url=safe_link, at=at,
                 author=cut_line(author, 200) or None, meta=meta)


def _ttl(value: Any) -> float | None:
    text = str(value or "").strip()
    return float(text) * 60 if text.isdigit() and int(text) > 0 else None


def _entry(raw: Any) -> Entry:
    meta: dict[str, Any] = {}
    title = _detail_text(raw.get("title"), raw.get("title_detail"), meta)
    text = _content_text(raw, meta)
    return make_entry(entry_id=raw.get("id"), title=title, text=text, link=raw.get("link"),
                      at=_instant(raw, meta), author=raw.get("author"), meta=meta)


def markup_text(value: Any, *, html: bool, meta: dict) -> str:
    """Plain text of ``value``: read as HTML when ``html`` (or when it holds active markup), else cleaned."""
    return _detail_text(value, {"type": "text/html" if html else "text/plain"}, meta)


def _detail_text(value: Any, detail: Any, meta: dict) -> str:
    if not isinstance(value, str) or not value:
        return ""
    kind = (detail or {}).get("type", "") if isinstance(detail, dict) else ""
    # feedparser calls text with a script/style element "plain" (its sanitizer only knows safe tags):
    # such text is markup all the same, and its script is not words to keep.
    if ("html" in kind and _HTML_HINT.search(value)) or _ACTIVE_MARKUP.search(value):
        text, note = html_to_text(clean_text(value))  # lxml refuses NUL and other control characters
        text = clean_text(text)
        if note:
            meta["html"] = note
        return text
    return clean_text(value[:TEXT_READ_LIMIT])


def _content_text(raw: Any, meta: dict) -> str:
    parts = []
    for content in raw.get("content", []) or []:
        if isinstance(content, dict):
            parts.append(_detail_text(content.get("value"), content, meta))
    if not any(parts):
        parts = [_detail_text(raw.get("summary"), raw.get("summary_detail"), meta)]
    return "\n\n".join(part for part in parts if part)[:TEXT_READ_LIMIT]


def _safe_url(value: Any, meta: dict) -> str | None:
    if not isinstance(value, str) or not value.strip():
        return None
    link = value.strip()
    if not link.lower().startswith(("http://", "https://")) or len(link) > URL_LIMIT or any(
            ch in link for ch in "\r\n\x00 "):
        meta["link_dropped"] = cut_line(link, 80)
        return None
    return link


def _key(entry_id: Any, link: Any, digest: str) -> str:
    for candidate in (entry_id, link):
        if isinstance(candidate, str):
            cleaned = "".join(candidate.split())
            cleaned = clean_text(cleaned)
            if cleaned:
                if len(cleaned) > KEY_LIMIT:
                    return "sha256:" + hashlib.sha256(cleaned.encode()).hexdigest()
                return cleaned
    return "sha256:" + digest


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
