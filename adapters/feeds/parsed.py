"""What a feed document reads as, whatever its format: ``ParsedFeed`` and its ``Entry`` values (contract §10).

The readers (``entries.parse_feed`` for RSS and Atom, ``jsonfeed`` for JSON
Feed) make every entry with ``make_entry``, which keeps the source's words,
cleaned and bounded:

* ``key`` — the entry's identity: its ``id``/``guid``, else its link, else
  ``sha256:`` of title and content. Keys longer than ``KEY_LIMIT`` are
  replaced by ``sha256:`` of themselves so ids stay within §10's limits.
* ``digest`` — a fingerprint of the title and text as read: a change in what
  a person reads makes a new version; markup churn does not.
* ``url`` — the link, only when it is http(s) (a ``javascript:`` or
  ``data:`` link is dropped and the fact noted in ``meta``).

Text that holds markup is read with ``fold_adapters.text.html.html_to_text``
(the mail adapters' converter: one HTML-to-text path).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from typing import Any

from fold_adapters.text.clean import clean_text, cut_line
from fold_adapters.text.html import html_to_text

__all__ = ["Entry", "ParsedFeed", "TEXT_READ_LIMIT", "TITLE_CHARS", "detail_text", "make_entry", "markup_text",
           "unique_entries"]

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
    shown = cut_line(title, TITLE_CHARS) or None
    digest = hashlib.sha256(f"{shown or ''}\x1f{text}".encode()).hexdigest()[:16]
    safe_link = _safe_url(link, meta)
    key = _key(entry_id, safe_link or link, digest)
    return Entry(key=key, title=shown, text=text, digest=digest, url=safe_link, at=at,
                 author=cut_line(author, 200) or None, meta=meta)


def markup_text(value: Any, *, html: bool, meta: dict) -> str:
    """Plain text of ``value``: read as HTML when ``html`` (or when it holds active markup), else cleaned."""
    return detail_text(value, {"type": "text/html" if html else "text/plain"}, meta)


def detail_text(value: Any, detail: Any, meta: dict) -> str:
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
