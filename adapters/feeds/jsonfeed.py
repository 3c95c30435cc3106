"""JSON Feed 1.0 and 1.1 (``application/feed+json``) → the same ``ParsedFeed`` as RSS and Atom (contract §10).

Read as the specification (jsonfeed.org, versions 1 and 1.1) asks of a
reader:

* a document that is not valid JSON, or not an object with an ``items``
  array, is not a feed — no partial data is used;
* an item without an ``id``, or with a blank one, is discarded (counted in
  ``problem``); a numeric ``id`` is read as its string;
* ``authors`` (1.1) is preferred over ``author`` (1.0); an item without
  authors takes the feed's;
* the text is ``content_html`` read as HTML (the same converter as RSS
  entries), else ``content_text``, else ``summary``; the title is plain text;
* ``date_published``, else ``date_modified``, as RFC 3339; a date that does
  not read is kept in ``meta.date`` (``meta.date_unread``), as for RSS;
* ``external_url``, ``tags`` and attachments (URL, type, size) go to ``meta``;
  extension objects (keys starting with ``_``) are ignored.

Parsing uses ``json.loads`` with a bound on nesting enforced by Python's own
recursion limit (a ``RecursionError`` is a parse problem, not a crash).
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Any

from fold_core.timefmt import parse_instant
from fold_adapters.feeds.parsed import Entry, ParsedFeed, make_entry, markup_text, unique_entries
from fold_adapters.text.clean import cut_line

__all__ = ["VERSIONS", "parse_json_feed"]

VERSIONS = ("https://jsonfeed.org/version/1", "https://jsonfeed.org/version/1.1")
MAX_ITEMS = 5000  # items read from one document; a larger one is read in part and says so
_NOT_A_FEED = "not a JSON Feed"


def parse_json_feed(body: bytes, *, url: str) -> ParsedFeed:
    """The feed's title and entries; ``is_feed`` False with ``problem`` for a document that is not one."""
    try:
        document = json.loads(body.decode("utf-8-sig") if isinstance(body, bytes) else body)
    except (ValueError, UnicodeDecodeError, RecursionError) as error:
        return _not_feed(f"{_NOT_A_FEED}: invalid JSON ({type(error).__name__}: {str(error)[:200]})")
    if not isinstance(document, dict) or not isinstance(document.get("items"), list):
        return _not_feed(f"{_NOT_A_FEED}: expected an object with an \"items\" array")
    problems = []
    version = document.get("version")
    if version not in VERSIONS:
        problems.append(f"unknown JSON Feed version {cut_line(str(version), 80)!r}; read as 1.1")
    feed_authors = _authors(document)
    raw_items = document["items"]
    if len(raw_items) > MAX_ITEMS:
        problems.append(f"{len(raw_items)} items; the first {MAX_ITEMS} were read")
    entries, missing = [], 0
    for raw in raw_items[:MAX_ITEMS]:
        entry = _item(raw, feed_authors, url) if isinstance(raw, dict) else None
        if entry is None:
            missing += 1
            continue
        entries.append(entry)
    if missing:
        problems.append(f"{missing} item(s) without an id were discarded (the specification requires one)")
    entries, duplicates = unique_entries(entries)
    title = document.get("title")
    return ParsedFeed(title=cut_line(title, 500) or None if isinstance(title, str) else None, ttl_seconds=None,
                      entries=entries, problem="; ".join(problems) or None, is_feed=True, duplicates=duplicates)


def _not_feed(problem: str) -> ParsedFeed:
    return ParsedFeed(title=None, ttl_seconds=None, entries=[], problem=problem, is_feed=False)


def _item(raw: dict, feed_authors: list[str], base: str) -> Entry | None:
    item_id = raw.get("id")
    if isinstance(item_id, bool) or not isinstance(item_id, (str, int, float)):
        return None
    item_id = str(item_id).strip()
    if not item_id:
        return None
    meta: dict[str, Any] = {}
    title = markup_text(raw.get("title"), html=False, meta=meta)
    text = ""
    for field, html in (("content_html", True), ("content_text", False), ("summary", False)):
        if isinstance(raw.get(field), str) and raw[field].strip():
            text = markup_text(raw[field], html=html, meta=meta)
            break
    link = _absolute(raw.get("url"), base)
    external = _absolute(raw.get("external_url"), base)
    if external:
        meta["external_url"] = cut_line(external, 2000)
    tags = [cut_line(tag, 100) for tag in raw.get("tags") or [] if isinstance(tag, str)][:20] \
        if isinstance(raw.get("tags"), list) else []
    if tags:
        meta["tags"] = tags
    attachments = _attachments(raw.get("attachments"), base)
    if attachments:
        meta["attachments"] = attachments
    authors = _authors(raw) or feed_authors
    return make_entry(entry_id=item_id, title=title, text=text, link=link, at=_date(raw, meta),
                      author=", ".join(authors) or None, meta=meta)


def _authors(holder: dict) -> list[str]:
    found = holder.get("authors")
    if not isinstance(found, list) or not found:
        single = holder.get("author")
        found = [single] if isinstance(single, dict) else []
    names = [cut_line(author.get("name"), 100) for author in found if isinstance(author, dict)]
    return [name for name in names if name][:5]


def _attachments(found: Any, base: str) -> list[dict]:
    listed = []
    for attachment in found if isinstance(found, list) else []:
        if not isinstance(attachment, dict):
            continue
        link = _absolute(attachment.get("url"), base)
        if not link:
            continue
        entry: dict[str, str | int] = {"url": cut_line(link, 2000)}
        if isinstance(attachment.get("mime_type"), str):
            entry["type"] = cut_line(attachment["mime_type"], 100)
        if isinstance(attachment.get("title"), str):
            entry["title"] = cut_line(attachment["title"], 200)
        size = attachment.get("size_in_bytes")
        if isinstance(size, (int, float)) and not isinstance(size, bool) and size >= 0:
            entry["size"] = int(size)
        listed.append(entry)
    return listed[:10]


def _absolute(value: Any, base: str) -> str | None:
    """``value`` resolved against the feed's URL (the specification's URLs may be relative)."""
    if not isinstance(value, str) or not value.strip():
        return None
    from urllib.parse import urljoin

    try:
        return urljoin(base, value.strip())
    except ValueError:
        return value.strip()


def _date(raw: dict, meta: dict) -> str | None:
    for field in ("date_published", "date_modified"):
        text = raw.get(field)
        if not isinstance(text, str) or not text.strip():
            continue
        moment = _rfc3339(text.strip())
        if moment is None:
            meta["date"] = cut_line(text, 100)
            meta["date_unread"] = True
            return None
        return moment.astimezone(timezone.utc).isoformat()
    return None


def _rfc3339(text: str) -> datetime | None:
    candidate = text.upper()  # RFC 3339 allows "t" and "z"
    candidate = candidate[:-1] + "+00:00" if candidate.endswith("Z") else candidate
    try:
        moment = datetime.fromisoformat(candidate)
    except ValueError:
        return None
    # parse_instant also refuses an instant whose UTC time Python cannot hold
    return moment if moment.tzinfo is not None and parse_instant(candidate) is not None else None
