"""Boxes → the overview's HTML page, from templates the tool owns (contract §13).

``page_html`` fills ``templates/overview.html.j2`` with an ``Overview``:
autoescaping is on for every value (item text is untrusted and only ever
appears as text), geometry goes into SVG attributes, and the page carries a
Content-Security-Policy that allows nothing but its own nonce'd stylesheet —
no script, no image, no font or network fetch. ``stylesheet`` is the same CSS
on its own (the Pinboard can serve it as a file under ``default-src 'self'``).
"""

from __future__ import annotations

import secrets
from collections.abc import Collection
from functools import lru_cache
from pathlib import Path

from fold_core.words import Words
from fold_host.localtime import HumanTime
from fold_host.overview.cardtext import FONT_PX, LINE_HEIGHT, PADDING_PX
from fold_host.overview.layout import KIND_COLOURS, Overview
from fold_host.overview.words import CATALOG, card_line

__all__ = ["PAGE_MARGIN", "TEMPLATES", "page_html", "page_width", "px", "stylesheet"]

PAGE_MARGIN = 24
TEMPLATES = Path(__file__).with_name("templates")


@lru_cache(maxsize=1)
def _environment():
    import jinja2

    environment = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=False,
        lstrip_blocks=False,
    )
    environment.filters["px"] = px
    # the shared boxes template's words and card lines (the Pinboard installs its own, in [host] language)
    environment.globals.update(t=_words, line=lambda field, text: text)
    return environment


def _words(template: str, **values) -> str:
    """English: the template itself."""
    return template.format(**values) if values else template


def px(value: float) -> str:
    """A coordinate for an SVG attribute: enough digits for sub-pixel exactness, no exponent."""
    text = f"{float(value):.4f}".rstrip("0").rstrip(".")
    return "0" if text in ("", "-0") else text


def page_width(overview: Overview) -> int:
    """The CSS width of the page body's content (the widest rectangle)."""
    widths = [layer.width for layer in overview.layers] + [layer.gone_size[0] for layer in overview.layers]
    return int(max(widths + [640.0]) + 0.999)


def stylesheet(width: float = 960) -> str:
    """The overview's CSS (colours, fonts and text sizes of the cards)."""
    return _environment().get_template("overview.css.j2").render(
        colours=KIND_COLOURS, font=FONT_PX, line_height=LINE_HEIGHT, padding=PADDING_PX,
        margin=PAGE_MARGIN, width=width,
    )


def page_html(overview: Overview, *, details: Collection[str] = (), nonce: str | None = None,
              language: str = "en", timezone: str | None = None) -> str:
    """The whole page; ``details`` are the ids of cards whose text does not fit (listed below).

    Its labels are in ``language`` (``[host] language``), its time in ``timezone``, in words.
    """
    words = Words(language, timezone).extend(CATALOG)
    nonce = nonce or secrets.token_urlsafe(18)
    details = frozenset(details)
    detail_boxes = [box for layer in overview.layers for box in (*layer.boxes, *layer.gone)
                    if box.id is not None and box.id in details]
    return _environment().get_template("overview.html.j2").render(
        ov=overview, budget=overview.budget, colours=KIND_COLOURS, css=stylesheet(page_width(overview)),
        nonce=nonce, details=details, detail_boxes=detail_boxes, t=words, lang=words.language,
        line=card_line(words), now=HumanTime(words.language, timezone)(overview.now),  # a picture kept: the full date
    )
