"""Feed discovery: the feeds a web page names in ``<link rel="alternate" type="…">`` (contract §10).

``alternate_links(body, page_url)`` reads an HTML page with lxml (nothing is
fetched, no entity or DTD is loaded) and returns, in document order, every
``<link>`` whose ``rel`` holds the token ``alternate`` and whose ``type`` is
a feed type (``application/rss+xml``, ``application/atom+xml``,
``application/feed+json``; plain ``application/json`` only after those, as
the JSON Feed specification asks). Relative ``href`` values are resolved
against the page's ``<base href>`` when it has one, else the page's URL;
only http(s) results are kept. ``looks_like_html`` tells a page from a feed
that failed to parse.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import urljoin

__all__ = ["FEED_TYPES", "FeedLink", "alternate_links", "looks_like_html"]

FEED_TYPES = ("application/rss+xml", "application/atom+xml", "application/feed+json")
FALLBACK_TYPES = ("application/json",)
MAX_LINKS = 50
_HTML_START = re.compile(rb"^\s*(<!--.*?-->\s*)*(<!doctype\s+html|<html|<head|<meta|<title|<link|<body)",
                         re.IGNORECASE | re.DOTALL)


@dataclass(frozen=True)
class FeedLink:
    url: str
    type: str
    title: str | None

    def to_json(self) -> dict:
        return {"url": self.url, "type": self.type, "title": self.title}


def looks_like_html(body: bytes, content_type: str | None) -> bool:
    """Whether a response is a web page (by its media type, else by how it starts)."""
    kind = (content_type or "").split(";")[0].strip().lower()
    if kind in ("text/html", "application/xhtml+xml"):
        return True
    return bool(_HTML_START.match(body[:4096].lstrip(b"\xef\xbb\xbf")))


def alternate_links(body: bytes, page_url: str) -> list[FeedLink]:
    """The feeds the page names, feed types first, in document order (see the module docstring)."""
    from lxml import etree, html

    if not body.strip():
        return []
    parser = html.HTMLParser(no_network=True, remove_comments=True, remove_pis=True, recover=True,
                             huge_tree=False)
    try:
        root = html.document_fromstring(body, parser=parser)
    except (etree.ParserError, ValueError):
        return []
    base = page_url
    for element in root.iter("base"):
        href = (element.get("href") or "").strip()
        if href:
            base = urljoin(page_url, href)
            break
    preferred: list[FeedLink] = []
    fallback: list[FeedLink] = []
    for element in root.iter("link"):
        rel = (element.get("rel") or "").lower().split()
        kind = (element.get("type") or "").split(";")[0].strip().lower()
        href = (element.get("href") or "").strip()
        if "alternate" not in rel or not href or kind not in FEED_TYPES + FALLBACK_TYPES:
            continue
        try:
            target = urljoin(base, href)
        except ValueError:
            continue
        if not target.lower().startswith(("http://", "https://")) or any(ch in target for ch in "\r\n\x00 "):
            continue
        title = " ".join((element.get("title") or "").split())[:200] or None
        (preferred if kind in FEED_TYPES else fallback).append(FeedLink(target, kind, title))
    seen, links = set(), []
    for link in preferred + fallback:
        if link.url not in seen:
            seen.add(link.url)
            links.append(link)
    return links[:MAX_LINKS]
