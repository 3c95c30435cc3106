"""What a card says, and whether it is likely to fit (contract §13 "Text does not enlarge a card").

``card_lines`` turns an item view into the lines a card shows, in a fixed
order (head, title, a decision frame's question and recommended option,
summary, times), according to the requested fields. A ``done`` item has no
time line and no overdue or stale badge: nothing about it is late. The
head always carries the item's id — the handle that links a card to the detail
list and to the JSON. ``marks`` are the badges a card carries (diff state,
overdue, stale); they change colour and border, never area.

``card_text`` plans a card of a given size: the full lines when they are
likely to fit; otherwise a compact head without the weight and kind words
(the border and the colour still carry them) so that the title comes first;
the full lines always go to the detail list.

``fits`` is a conservative *estimate* of whether the lines fit a card of a
given size with the tool's fonts; it lets a live page (the Pinboard) link
small cards to their details without a browser round trip. The overview
measures the real layout in Chromium and reports what did not fit.

Pure functions; the sizes below are the ones the stylesheet uses. A card's
text depends only on its item's ``card_facts`` (the fields a card reads), so
``card_text`` keeps its plans per facts and size: a live page that lays the
same items out again (the Pinboard, on every request) plans each card once.
"""

from __future__ import annotations

import math
import unicodedata
from functools import lru_cache
from operator import itemgetter
from collections.abc import Mapping, Sequence

__all__ = ["CARD_FIELDS", "FIELDS", "DEFAULT_FIELDS", "FONT_PX", "LINE_HEIGHT", "PADDING_PX", "card_facts",
           "card_lines", "card_text", "decision_fact", "fits", "marks"]

FIELDS = ("title", "summary", "weight", "kind", "share", "due", "stale", "age")
DEFAULT_FIELDS = ("title", "summary", "weight", "kind", "share", "due")

# Kept equal to overview.css (.line-head, .line-title, .line-summary, .line-time).
FONT_PX = {"head": 11.0, "title": 14.0, "summary": 12.0, "time": 11.0, "question": 12.0, "recommended": 11.0,
           "source": 11.0}
LINE_HEIGHT = 1.3
PADDING_PX = 5.0
# Average advance of a non-wide character in em (Noto Sans CJK's Latin is ~0.55;
# bold a little wider); wide (CJK) characters advance 1 em.
_NARROW_EM = {"title": 0.62, "head": 0.58, "summary": 0.58, "time": 0.58, "question": 0.62, "recommended": 0.58,
              "source": 0.58}
#: the fields of an item view that a card's lines are made of (``card_lines`` reads nothing else).
CARD_FIELDS = ("id", "weight", "kind", "share", "title", "summary", "until_due", "until_stale", "age",
               "decision")
_FACTS = itemgetter(*CARD_FIELDS[:-1])
_PLANS = 4096  # card plans kept (a few boards' worth; then forgotten least recently used first)


def marks(view: Mapping, diff_op: str | None) -> tuple[str, ...]:
    """Badges for a card: ``new`` / ``changed`` (diff), ``overdue``, ``stale``."""
    found = []
    if diff_op in ("new", "changed"):
        found.append(diff_op)
    if view.get("kind") == "done":  # nothing is late about what is done
        return tuple(found)
    if _negative(view.get("until_due")):
        found.append("overdue")
    if _negative(view.get("until_stale")):
        found.append("stale")
    return tuple(found)


def _negative(duration: object) -> bool:
    return isinstance(duration, str) and duration.startswith("-")


def card_facts(view: Mapping) -> tuple:
    """The values of ``CARD_FIELDS`` in ``view`` (None when absent): all that a card's text depends on.

    ``decision`` is the part of a frame (§3.6) a card shows, hashable: ``(question, recommended option's
    label or None)``, or None when the item has no frame.
    """
    try:
        facts = _FACTS(view)  # a §8 item view has them all
    except KeyError:
        facts = tuple(view.get(name) for name in CARD_FIELDS[:-1])
    return (*facts, decision_fact(view.get("decision")))


def decision_fact(frame: object) -> tuple | None:
    """``(question, recommended label)`` of a frame, or None; an already reduced fact is kept."""
    if isinstance(frame, tuple) or frame is None:
        return frame
    if not isinstance(frame, Mapping) or not isinstance(frame.get("question"), str):
        return None
    recommended = frame.get("recommended")
    label = next((option.get("label") for option in frame.get("options") or ()
                  if isinstance(option, Mapping) and option.get("id") == recommended), None)
    return frame["question"], label


def card_lines(view: Mapping, fields: Sequence[str], budget: int) -> tuple:
    """``((field, text), ...)`` for a card; ``head`` (id, weight, kind, share) first and always present."""
    return _lines(card_facts(view), tuple(fields), budget)


def _lines(facts: tuple, fields: tuple, budget: int) -> tuple:
    item_id, weight, kind, share, title, summary, until_due, until_stale, age, decision = facts
    head = [item_id]
    if "weight" in fields:
        head.append(weight)
    if "kind" in fields:
        head.append(kind)
    if "share" in fields:
        head.append(f"{share}/{budget}")
    lines = [("head", " · ".join(head))]
    if "title" in fields:
        lines.append(("title", title))
    if decision is not None:  # what the user is asked comes before the summary
        lines.append(("question", decision[0]))
        if decision[1]:
            lines.append(("recommended", decision[1]))
    if "summary" in fields and summary:
        lines.append(("summary", summary))
    times = []
    if kind == "done":  # a done item counts down to nothing
        until_due = until_stale = None
    if "due" in fields and until_due is not None:
        times.append(f"overdue {until_due[1:]}" if _negative(until_due) else f"due in {until_due}")
    if "stale" in fields and until_stale is not None:
        times.append(f"stale {until_stale[1:]} ago" if _negative(until_stale) else f"stale in {until_stale}")
    if "age" in fields and age is not None:
        times.append(f"age {age}")
    if times:
        lines.append(("time", " · ".join(times)))
    return tuple(lines)


@lru_cache(maxsize=4096)
def _text_width(text: str, field: str) -> float:
    size = FONT_PX[field]
    narrow = _NARROW_EM[field] * size
    return sum(size if unicodedata.east_asian_width(char) in "WF" else narrow for char in text)


def fits(lines: Sequence[tuple[str, str]], width: float, height: float, badges: Sequence[str] = ()) -> bool:
    """Whether ``lines`` (and the badges in the head) likely fit a ``width × height`` card.

    A margin for word wrapping is included: the estimate errs towards "does not fit".
    """
    inner_w, inner_h = width - 2 * PADDING_PX, height - 2 * PADDING_PX
    if inner_w <= 0 or inner_h <= 0:
        return False
    needed = 0.0
    for field, text in lines:
        if field == "head" and badges:
            text = " ".join(badge.upper() for badge in badges) + "  " + text
        # Latin text wraps at spaces, so a line holds a little less than its width.
        rows = max(1, math.ceil(_text_width(text, field) * 1.15 / inner_w))
        needed += rows * FONT_PX[field] * LINE_HEIGHT
    return needed <= inner_h


def card_text(view: Mapping, fields: Sequence[str], budget: int, width: float, height: float,
              badges: Sequence[str] = (), extra: tuple = ()) -> tuple[tuple, tuple, bool]:
    """``(lines shown on the card, full lines for the detail list, likely fits)``."""
    return _plan(card_facts(view), tuple(fields), budget, width, height, tuple(badges), extra)


@lru_cache(maxsize=_PLANS)  # a pure function of its arguments: the facts, not the view they came from
def _plan(facts: tuple, fields: tuple, budget: int, width: float, height: float, badges: tuple,
          extra: tuple) -> tuple[tuple, tuple, bool]:
    full = _lines(facts, fields, budget) + extra
    if fits(full, width, height, badges):
        return full, full, True
    compact = _lines(facts, tuple(name for name in fields if name not in ("weight", "kind")), budget) + extra
    return compact, full, fits(compact, width, height, badges)
