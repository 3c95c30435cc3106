"""The board: every layer as its budget rectangle, for two screen sizes (contract §12, §13).

``board(state, now, query)`` lays the captured state out twice with the
overview's pure geometry (``fold_host.overview.layout``): once on a wide canvas
and once on a narrow one. The page shows one of them by a CSS media query
(a phone gets rectangles whose cards are big enough for a line of text,
instead of the wide picture shrunk), with the same card area = share/budget,
free budget blank and one "not shown" area for what the filters leave out.
Below the rectangles, the list of the same items in rank order per layer is
the readable form on any screen.

A card of at least ``LARGE_CARD`` of its rectangle also shows the subject
of the message its item's first source cites (``with_subjects``; the
subjects come from host.db), when that line still fits whole.

Positions depend only on the state and the query (the layout is a pure
function; ``now`` only changes the words of the time projection), so a reload
without a change shows every card where it was.

``BoardQuery`` parses the filter form (``?min_weight=…&kind=…&item=…``); a
bad value is a ``ValueError`` whose message the page shows.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, replace
from functools import lru_cache

from fold_host.overview.cardtext import fits
from fold_host.overview.layout import KINDS, WEIGHTS, Box, Canvas, Overview, Query, capture, layout

__all__ = ["CANVASES", "LARGE_CARD", "Board", "BoardQuery", "board", "first_sources", "fold_lines", "large_cards",
           "with_subjects"]

# Wide: the overview's size (fits beside a side panel at 1280 px). Narrow: a
# 390 px phone minus its margins; the SVG scales to the column either way.
CANVASES = {"wide": Canvas(960.0, 600.0, 960.0, 600.0), "narrow": Canvas(360.0, 480.0, 360.0, 480.0)}
ITEM_ID = re.compile(r"^[a-z0-9-]{1,64}$")
# A card at least this part of its rectangle's area also shows its first source's subject when it fits.
LARGE_CARD = 0.12


@dataclass(frozen=True)
class BoardQuery:
    """The board's filters: minimum weight, kinds, and an optional item whose children layer is the scope."""

    min_weight: str | None = None
    kinds: tuple[str, ...] | None = None
    item: str | None = None

    @classmethod
    def parse(cls, params) -> "BoardQuery":
        """From query parameters (a multi-dict with ``get`` and ``getlist``)."""
        weight = params.get("min_weight") or None
        if weight is not None and weight not in WEIGHTS:
            raise ValueError(f"min_weight must be one of {', '.join(WEIGHTS)}")
        kinds = [kind for kind in params.getlist("kind") if kind]
        for kind in kinds:
            if kind not in KINDS:
                raise ValueError(f"kind must be among {', '.join(KINDS)}")
        item = params.get("item") or None
        if item is not None and not ITEM_ID.match(item):
            raise ValueError("item must be an item id ([a-z0-9-], 1–64 characters)")
        chosen = tuple(kind for kind in KINDS if kind in kinds)
        return cls(weight, chosen if chosen and len(chosen) < len(KINDS) else None, item)

    def layout_query(self) -> Query:
        return Query(item=self.item, min_weight=self.min_weight, kinds=self.kinds)

    @property
    def filtered(self) -> bool:
        return self.min_weight is not None or self.kinds is not None

    def key(self) -> tuple:
        return (self.min_weight, self.kinds, self.item)


@dataclass(frozen=True)
class Board:
    """What the board page draws: one overview per canvas and the rank-ordered list."""

    views: Mapping[str, Overview]  # canvas name -> layout
    layers: tuple[dict, ...]  # {"parent", "title", "used", "free", "omitted_share", "entries": [...]}
    document: Mapping  # the §8 document the layouts were made from
    details: Mapping[str, frozenset[str]]  # canvas name -> ids of cards whose text likely does not fit

    @property
    def wide(self) -> Overview:
        return self.views["wide"]


def fold_lines(overview: Overview) -> Overview:
    """The explicit folding rule of a live page: a card shows only the lines that fit whole.

    ``layout`` already drops the weight and kind words from a card whose text
    does not fit; here the trailing lines that still do not fit are left out
    too (never the head with the id), so no line is cut in half. The card is
    marked, and the list below holds every line.
    """
    layers = []
    for layer in overview.layers:
        boxes = layer.boxes
        if not all(box.fits for box in boxes):
            layer = replace(layer, boxes=tuple(box if box.fits else _fold(box) for box in boxes))
        layers.append(layer)
    return replace(overview, layers=tuple(layers))


def first_sources(state, items) -> dict[str, str]:
    """``{item id: observation id}`` for those of ``items`` whose first source is an observation (``event:<id>``)."""
    found = {}
    for item_id in items:
        sources = (state.items.get(item_id) or {}).get("sources") or ()
        ref = sources[0].get("ref") if sources else None
        if isinstance(ref, str) and ref.startswith("event:") and len(ref) > len("event:"):
            found[item_id] = ref[len("event:"):]
    return found


def large_cards(overview: Overview) -> set[str]:
    """The ids of the cards that take at least ``LARGE_CARD`` of their rectangle."""
    return {box.id for layer in overview.layers for box in layer.boxes
            if box.role == "card" and box.id is not None and layer.width * layer.height
            and box.w * box.h >= LARGE_CARD * layer.width * layer.height}


def with_subjects(overview: Overview, subjects: Mapping[str, str]) -> Overview:
    """Large cards gain their first source's subject as a last line, when it fits whole.

    A card that takes a large part of the board has room for more than its
    title and summary: the subject of the message it came from says what it
    is about in the sender's own words.
    """
    if not subjects:
        return overview
    layers = []
    for layer in overview.layers:
        area = layer.width * layer.height
        boxes = []
        for box in layer.boxes:
            subject = subjects.get(box.id) if box.role == "card" and box.id is not None else None
            if subject and area and box.w * box.h >= LARGE_CARD * area and box.fits:
                lines = (*box.lines, ("source", subject))
                if fits(lines, box.w, box.h, box.badges):
                    box = replace(box, lines=lines)
            boxes.append(box)
        layers.append(replace(layer, boxes=tuple(boxes)))
    return replace(overview, layers=tuple(layers))


# The layout shares one immutable Box per card between renders: its folded form is kept beside it
# (by identity; the entry holds the box, so its id is not reused while the entry lives).
_FOLDS: dict[int, tuple[Box, Box]] = {}
_FOLDS_LIMIT = 4096


def _fold(box: Box) -> Box:
    known = _FOLDS.get(id(box))
    if known is not None and known[0] is box:
        return known[1]
    lines = _folded(box.lines, box.w, box.h, box.badges)
    folded = box if lines == box.lines else replace(box, lines=lines)
    if len(_FOLDS) >= _FOLDS_LIMIT:
        _FOLDS.clear()
    _FOLDS[id(box)] = (box, folded)
    return folded


@lru_cache(maxsize=4096)  # a pure function of the card's lines and size: the same cards fold the same way
def _folded(lines: tuple, width: float, height: float, badges: tuple) -> tuple:
    while len(lines) > 1 and not fits(lines, width, height, badges):
        lines = lines[:-1]
    return lines


def board(state, now: str, query: BoardQuery,
          subjects: Callable[[Collection[str]], Mapping[str, str]] | None = None) -> Board:
    """Lay ``state`` out at ``now``; ``ValueError`` when ``query.item`` is not an active item.

    ``subjects``: given the ids of the large cards, ``{item id: its first source's subject}`` (host.db's
    observations), shown on those cards; asked once, only for the cards that could show one.
    """
    # The board shows no annotations: without their table, the capture costs the same
    # whatever the history (a long life holds thousands of acknowledged notes).
    shot = capture(state.replace(annotations={}), now=now)
    drawn = {name: layout(shot, query.layout_query(), canvas) for name, canvas in CANVASES.items()}
    large = set().union(*(large_cards(view) for view in drawn.values()))
    found = subjects(sorted(large)) if subjects is not None and large else {}
    views = {name: fold_lines(with_subjects(view, found)) for name, view in drawn.items()}
    wide = views["wide"]
    tree = shot.tree
    layers = []
    for layer in wide.layers:
        entries = [{"view": tree[box.id].view, "badges": box.badges, "children": box.children}
                   for box in layer.boxes if box.role == "card" and box.id is not None]
        layers.append({"parent": layer.parent, "key": layer.key, "title": layer.title, "used": layer.used,
                       "free": layer.free, "omitted_share": layer.omitted_share, "entries": entries,
                       "omitted": next((box.ids for box in layer.boxes if box.role == "omitted"), ())})
    details = {name: frozenset(box.id for layer in view.layers for box in layer.boxes
                               if box.role == "card" and box.id is not None and not box.fits)
               for name, view in views.items()}
    return Board(views, tuple(layers), shot.current, details)
