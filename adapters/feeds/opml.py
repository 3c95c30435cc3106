"""OPML subscription lists: read safely, write as OPML 2.0.

``read_opml(data)`` returns the feeds (``FeedRef``: URL, title, folder) and
what was skipped. Every ``<outline>`` with an ``xmlUrl`` is a feed; an
outline without one that holds others is a folder, and nested folders become
a path (``"Tech/Python"``) that the rss adapter puts in ``meta.folder``.

A subscription list is input from elsewhere, so it is read as hostile:
lxml with ``resolve_entities=False``, ``load_dtd=False``, ``no_network=True``
and ``huge_tree=False``, and a document that declares or uses entities or
names an external DTD is refused (``OpmlError``) — an XML bomb is never
expanded, an external entity never read, a file or URL it names never
opened. The file is at most ``MAX_BYTES``; at most ``MAX_FEEDS`` feeds and
``MAX_DEPTH`` folder levels are read.

``write_opml(groups)`` gives OPML 2.0 bytes: one folder outline per group
(a source), the feeds' own folders nested inside it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from fold_core.netpolicy import literal_problem, mask_credentials

__all__ = ["FeedRef", "MAX_BYTES", "OpmlError", "read_opml", "read_opml_file", "valid_feed_url", "write_opml"]

MAX_BYTES = 5 * 1024 * 1024
MAX_FEEDS = 5000
MAX_DEPTH = 16
URL_LIMIT = 4096


class OpmlError(ValueError):
    """The document is not an OPML list this reader accepts (malformed, hostile, too large)."""


@dataclass(frozen=True)
class FeedRef:
    url: str
    title: str | None = None
    folder: str | None = None

    def to_json(self) -> dict:
        return {"url": self.url, "title": self.title, "folder": self.folder}


def valid_feed_url(url: object) -> bool:
    return (isinstance(url, str) and url.lower().startswith(("http://", "https://")) and len(url) <= URL_LIMIT
            and not any(ch.isspace() or ch == "\x00" for ch in url))


def read_opml_file(path: Path) -> tuple[list[FeedRef], list[str]]:
    """``read_opml`` of a file (``OpmlError`` when it cannot be read or is too large)."""
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_BYTES + 1)
    except OSError as error:
        raise OpmlError(f"cannot read the OPML file {path}: {error.strerror or error}") from None
    if len(data) > MAX_BYTES:
        raise OpmlError(f"the OPML file {path} is larger than {MAX_BYTES:,} bytes")
    return read_opml(data, where=str(path))


def read_opml(data: bytes, *, where: str = "the OPML document") -> tuple[list[FeedRef], list[str]]:
    """The feeds of an OPML document and notes on what was skipped; ``OpmlError`` when refused."""
    from lxml import etree

    if len(data) > MAX_BYTES:
        raise OpmlError(f"{where} is larger than {MAX_BYTES:,} bytes")
    if b"<!ENTITY" in data:  # said before parsing; the checks after parsing catch other encodings
        raise OpmlError(f"{where} declares entities; refused (entity expansion and external entities are a "
                        f"known attack on XML readers)")
    parser = etree.XMLParser(resolve_entities=False, load_dtd=False, no_network=True, huge_tree=False,
                             dtd_validation=False, remove_comments=True, remove_pis=True)
    try:
        root = etree.fromstring(data, parser=parser)
    except etree.XMLSyntaxError as error:
        refused = "; refused" if "entity" in str(error).lower() else ""
        raise OpmlError(f"{where} is not well-formed XML ({str(error)[:200]}){refused}") from None
    _refuse_entities(root, where)
    if not isinstance(root.tag, str) or etree.QName(root).localname != "opml":
        raise OpmlError(f"{where} is not OPML: its root element is <{_name(root)}>, expected <opml>")
    body = next((child for child in root if isinstance(child.tag, str)
                 and etree.QName(child).localname == "body"), None)
    if body is None:
        raise OpmlError(f"{where} has no <body>")
    feeds: list[FeedRef] = []
    notes: list[str] = []
    _walk(body, (), feeds, notes, set())
    return feeds, notes


def _refuse_entities(root, where: str) -> None:
    from lxml import etree

    info = root.getroottree().docinfo
    dtd = info.internalDTD
    if info.system_url or info.public_id:
        raise OpmlError(f"{where} names an external DTD ({info.system_url or info.public_id}); refused: "
                        f"an OPML list needs none")
    if dtd is not None and (list(dtd.iterentities()) or list(dtd.elements())):
        raise OpmlError(f"{where} declares entities or a DTD; refused (entity expansion and external "
                        f"entities are a known attack on XML readers)")
    for node in root.iter():
        if isinstance(node, etree._Entity):
            raise OpmlError(f"{where} uses an entity (&{node.name};) that is not XML's own; refused")


def _name(element) -> str:
    tag = element.tag
    return tag.rsplit("}", 1)[-1] if isinstance(tag, str) else "?"


def _walk(parent, folders: tuple[str, ...], feeds: list[FeedRef], notes: list[str], seen: set[str]) -> None:
    if len(folders) > MAX_DEPTH:
        notes.append(f"folders nested deeper than {MAX_DEPTH} levels were not read")
        return
    for outline in parent:
        if not isinstance(outline.tag, str) or _name(outline) != "outline":
            continue
        label = " ".join((outline.get("title") or outline.get("text") or "").split())[:200] or None
        url = (outline.get("xmlUrl") or outline.get("xmlurl") or "").strip()
        if url:
            if len(feeds) >= MAX_FEEDS:
                notes.append(f"more than {MAX_FEEDS} feeds: the rest were not read")
                return
            if not valid_feed_url(url):
                notes.append(f"skipped {url[:100]!r}: only http(s) feed URLs are read")
            elif literal_problem(url) is not None:
                notes.append(f"skipped {mask_credentials(url)[:200]}: a link-local address, never fetched")
            elif url in seen:
                notes.append(f"skipped a second outline for {url[:200]}")
            else:
                seen.add(url)
                feeds.append(FeedRef(url, label, "/".join(folders) or None))
        if len(outline):
            _walk(outline, folders if url else folders + ((label or "untitled").replace("/", "∕"),), feeds,
                  notes, seen)


# What XML 1.0 cannot hold (lxml refuses it with a ValueError): controls other than tab/newline/return,
# surrogates and the two non-characters U+FFFE/U+FFFF.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def _xml(text: str) -> str:
    """``text`` with what XML cannot hold replaced by U+FFFD (a configured title may hold a control)."""
    return _NOT_XML.sub("\ufffd", text)


def write_opml(groups: list[tuple[str, list[FeedRef]]], *, title: str = "Fold feeds") -> bytes:
    """OPML 2.0: one folder outline per named group, each feed's folder path nested inside it."""
    from lxml import etree

    root = etree.Element("opml", version="2.0")
    head = etree.SubElement(root, "head")
    etree.SubElement(head, "title").text = title
    body = etree.SubElement(root, "body")
    for name, feeds in groups:
        group = etree.SubElement(body, "outline", text=_xml(name), title=_xml(name))
        folders: dict[str, etree._Element] = {}
        for feed in feeds:
            parent = group
            path = ""
            for part in (feed.folder or "").split("/") if feed.folder else []:
                path = f"{path}/{part}"
                if path not in folders:
                    folders[path] = etree.SubElement(parent, "outline", text=_xml(part), title=_xml(part))
                parent = folders[path]
            label = _xml(feed.title or feed.url)
            etree.SubElement(parent, "outline", type="rss", text=label, title=label, xmlUrl=_xml(feed.url))
    return etree.tostring(root, xml_declaration=True, encoding="UTF-8", pretty_print=True)
