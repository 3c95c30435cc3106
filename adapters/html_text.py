"""Untrusted markup and strings → plain text an observation can carry (contract §10).

Shared by every adapter that meets HTML or untrusted strings (mail bodies,
feed entries, work logs). Everything here is total: any input gives a string,
never an exception, never an invention.

* ``html_to_text(html) -> (text, note)`` — readable text through inscriptis:
  tables laid out, scripts, styles and ``display:none`` dropped, link targets
  and images not shown. Nothing is fetched or executed (inscriptis parses
  with lxml and has no network access). Bounded input; a plain tag-stripping
  fallback when the tree cannot be walked; ``note`` says when either happened.
* ``clean_text(text)`` — control characters (NUL included), lone surrogates
  and invisible padding removed; at most one blank line in a row.
* ``clean_line(text)`` — one-line text (titles, names): controls and line
  breaks become single spaces.
* ``cut_line(text, limit)`` — ``clean_line`` cut to ``limit`` code points with
  a visible mark (a 1 MB one-line title costs no more than its first part).

inscriptis is imported on first use, so importing this module stays cheap.
"""

from __future__ import annotations

import re

__all__ = ["clean_line", "clean_text", "cut_line", "html_to_text", "looks_like_html"]

HTML_LIMIT = 512 * 1024

_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\u200b\u200c\u200d\u200e\u2060\ufeff\u034f\u00ad]")
_LINE_CONTROL = re.compile("[\x00-\x1f\x7f\u2028\u2029\u0085]+")
_SURROGATE = re.compile("[\ud800-\udfff]")
_TRAILING = re.compile(r"[ \t\u00a0]+\n")
_BLANKS = re.compile(r"\n{3,}")
_HTML_HINT = re.compile(r"<\s*/?\s*[a-zA-Z][^>]*>|&(#\d+|#x[0-9a-fA-F]+|[a-zA-Z]+);")


def looks_like_html(text: str) -> bool:
    """True when ``text`` holds a tag or an entity (plain text is left alone)."""
    return bool(_HTML_HINT.search(text))


def html_to_text(html: str) -> tuple[str, str | None]:
    """``(text, note)``: readable text of untrusted HTML; nothing in it is fetched or run."""
    note = None
    if len(html) > HTML_LIMIT:
        html, note = html[:HTML_LIMIT], f"HTML cut to its first {HTML_LIMIT} characters before conversion"
    html = re.sub(r"^\s*<\?xml[^>]*>", "", html)  # lxml refuses a str with an encoding declaration
    html = _CONTROL.sub("", _SURROGATE.sub("\ufffd", html))  # lxml refuses NUL and lone surrogates
    try:
        from inscriptis import get_text
        from inscriptis.model.config import ParserConfig

        text = get_text(html, ParserConfig(display_links=False, display_images=False))
    except Exception as error:  # a tree inscriptis cannot walk (depth, lxml refusal): strip the tags
        text = _strip_tags(html)
        note = (note + "; " if note else "") + f"HTML read by tag stripping ({type(error).__name__})"
    return clean_text(text), note


def _strip_tags(html: str) -> str:
    import html as html_module

    html = re.sub(r"(?is)<(script|style|head|template)\b.*?</\1\s*>", " ", html)
    html = re.sub(r"(?i)<\s*(br|/p|/div|/tr|/h[1-6]|/li)\b[^>]*>", "\n", html)
    return html_module.unescape(re.sub(r"<[^>]*>", " ", html))


def clean_text(text: str) -> str:
    """Body text as a person reads it: no control characters, no invisible padding, tidy blank lines."""
    if not text:
        return ""
    if _SURROGATE.search(text):
        text = _SURROGATE.sub("\ufffd", text)
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = _CONTROL.sub("", text)
    text = _TRAILING.sub("\n", text)
    return _BLANKS.sub("\n\n", text).strip()


def clean_line(text: str) -> str:
    """One-line text (subject, names): controls and line breaks become single spaces."""
    if not text:
        return ""
    if _SURROGATE.search(text):
        text = _SURROGATE.sub("\ufffd", text)
    text = _LINE_CONTROL.sub(" ", text)
    text = _CONTROL.sub("", text)
    return " ".join(text.split()) if "  " in text or text[:1].isspace() or text[-1:].isspace() else text


def cut_line(text: str | None, limit: int) -> str:
    """``clean_line(text)`` of at most ``limit`` code points; a cut one ends with ``…``."""
    if not text:
        return ""
    head = text[: limit * 2 + 64]
    line = clean_line(head)
    if len(line) <= limit and len(head) == len(text):
        return line
    return line[: limit - 1].rstrip() + "…"
