"""HTML mail → readable plain text, with lxml (libxml2's HTML parser) — nothing fetched, nothing run.

Mail HTML is mostly layout: newsletters nest tables five deep to place a
column. A converter that lays tables out as grids (inscriptis) pads every
cell to its column's widest line, which turns a newsletter into screens of
spaces, and spends 10–40 ms on one; this one keeps what a reader of the
rendered mail sees, in reading order, in about a tenth of the time:

* ``script``, ``style``, ``head``, ``template``, comments and processing
  instructions are removed with their content; so is anything hidden inline
  (``display:none``, ``mso-hide:all``: preview texts and tracking blocks);
* white space inside text collapses as a browser collapses it (``pre`` kept);
* block elements (p, div, h1–h6, li, tr, blockquote, …) and ``br`` end lines;
  list items start with ``* `` (``1.``, ``2.`` … in ``ol``); table cells of one
  row are joined with `` | ``, one row per line — data tables stay readable,
  layout tables fall apart into their paragraphs;
* link targets, image sources and form actions are never shown or followed:
  only text reaches the observation. The parser never loads a DTD or any
  network resource (``no_network``), and nothing is evaluated.
"""

from __future__ import annotations

import re

__all__ = ["html_to_text"]

HTML_LIMIT = 1024 * 1024  # characters converted; the observation keeps 4,000 anyway
BLOCKS = frozenset(("address", "article", "aside", "blockquote", "center", "dd", "details", "div", "dl", "dt",
          "fieldset", "figcaption", "figure", "footer", "form", "h1", "h2", "h3", "h4", "h5", "h6", "header",
          "hr", "li", "main", "nav", "ol", "p", "pre", "section", "summary", "table", "tr", "ul", "caption"))
DROPPED = ("script", "style", "head", "template", "title", "object", "embed", "iframe", "svg", "math")
_HIDDEN_STYLES = ("display:none", "mso-hide:all")
_PRE_SPACE = "\ue000"  # a space inside <pre>, kept through the collapsing and trimming
_BREAK = "\ue001"  # a line break the structure asks for (source line breaks are only white space)
_SPACED = frozenset(("p", "h1", "h2", "h3", "h4", "h5", "h6", "table", "blockquote", "ul", "ol"))
_MARKED = ("tr", "ol", "ul", "br", *sorted(BLOCKS))  # the tags the conversion pass changes
_EMPTY_ROW = re.compile(r"(?m)^\|$")
_PARSER = None


def html_to_text(html: str) -> tuple[str, str | None]:
    """``(text, note)``; the note says when the HTML had to be cut or could not be parsed."""
    note = None
    if len(html) > HTML_LIMIT:
        html, note = html[:HTML_LIMIT], f"HTML cut to its first {HTML_LIMIT} characters before conversion"
    if html.lstrip()[:5].lower() == "<?xml":  # lxml refuses a str that declares an encoding
        html = html.lstrip().split(">", 1)[-1]
    if _PRE_SPACE in html or _BREAK in html:
        html = html.replace(_PRE_SPACE, "\ufffd").replace(_BREAK, "\ufffd")
    if not html.strip():
        return "", note
    try:
        text = _convert(html)
    except Exception as error:  # libxml2 gave up (or a bug): strip the tags, say so
        text = _strip_tags(html)
        note = (note + "; " if note else "") + f"HTML read by tag stripping ({type(error).__name__})"
    return text, note


def _convert(html: str) -> str:
    lowered = html.lower()
    might_hide = "none" in lowered or "hidden" in lowered or "mso-hide" in lowered
    from lxml import etree

    global _PARSER
    if _PARSER is None:  # plain etree elements: lxml.html's Python class lookup per element costs more
        _PARSER = etree.HTMLParser(remove_comments=True, remove_pis=True, no_network=True, recover=True,
                                   collect_ids=False)
    root = etree.fromstring(html, parser=_PARSER)
    if root is None:
        return ""
    etree.strip_elements(root, *DROPPED, with_tail=False)
    if might_hide:  # a walk over the elements costs half an XPath query (lxml sets one up per call)
        hidden = []
        for element in root.iter(etree.Element):
            style = element.get("style")
            if style and _hidden_style(style) or element.get("hidden") is not None:
                hidden.append(element)
        for element in hidden:
            _drop(element)
    for pre in root.iter("pre"):  # its white space is kept: hidden from the collapsing below
        for element in pre.iter():
            if element.text:
                element.text = element.text.replace(" ", _PRE_SPACE).replace("\n", _BREAK)
            if element.tail and element is not pre:
                element.tail = element.tail.replace(" ", _PRE_SPACE).replace("\n", _BREAK)
    for element in root.iter(*_MARKED):  # one pass: cells, list items, line breaks and blocks (others untouched)
        tag = element.tag
        if tag == "tr":
            cells = [c for c in element if c.tag in ("td", "th")]
            for cell in cells[:-1]:
                cell.tail = " | " + (cell.tail or "")
        elif tag == "ol" or tag == "ul":
            for number, item in enumerate((i for i in element if i.tag == "li"), start=1):
                item.text = (f"{number}. " if tag == "ol" else "* ") + (item.text or "").lstrip()
        elif tag == "br":
            element.tail = _BREAK + (element.tail or "")
            continue
        if tag in BLOCKS:
            element.tail = _BREAK + (element.tail or "")
            if tag in _SPACED:
                element.text = _BREAK + (element.text or "")
    text = etree.tostring(root, method="text", encoding="unicode", with_tail=False)
    # White space collapses as a browser does; the spaces around a break go (" ".join leaves at most one
    # on each side). str methods, not regexes: on a newsletter's text each regex pass cost 10-35 µs.
    text = " ".join(text.split()).replace(" " + _BREAK, _BREAK).replace(_BREAK + " ", _BREAK).replace(_BREAK, "\n")
    if "\n|\n" in text or text.startswith("|") or text.endswith("|"):  # a line that is only "|": an empty row
        text = _EMPTY_ROW.sub("\n", text)
    while "\n\n\n" in text:  # at most one blank line in a row
        text = text.replace("\n\n\n", "\n\n")
    return text.strip().replace(_PRE_SPACE, " ")


def _drop(element) -> None:
    """Remove ``element`` and what it holds; the text after it stays."""
    parent = element.getparent()
    if parent is None:
        return
    if element.tail:
        previous = element.getprevious()
        if previous is not None:
            previous.tail = (previous.tail or "") + element.tail
        else:
            parent.text = (parent.text or "") + element.tail
    parent.remove(element)


def _hidden_style(style: str | None) -> bool:
    style = style.lower() if style else ""
    if "none" not in style and "mso-hide" not in style:
        return False
    style = style.replace(" ", "")
    return any(rule in style for rule in _HIDDEN_STYLES)


def _strip_tags(html: str) -> str:
    import html as html_module

    html = re.sub(r"(?is)<(script|style|head|template)\b.*?</\1\s*>", " ", html)
    html = re.sub(r"(?i)<\s*(br|/p|/div|/tr|/h[1-6]|/li)\b[^>]*>", "\n", html)
    return html_module.unescape(re.sub(r"<[^>]*>", " ", html))
