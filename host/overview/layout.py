"""State capture → boxes: the geometry of the visual overview (contract §13).

Shared by ``foldctl overview`` (which draws the boxes through Chromium) and the
Pinboard (which serves them live). A pure function of its inputs: no clock, no
store, no browser.

    capture(state, now=…, baseline=…)  → Capture   (§8 documents at c and b, same now)
    layout(capture, Query(…), Canvas(…)) → Overview (layers of boxes + what was left out)

Geometry. Every shown layer is a budget rectangle of area
``A = width·height``; its budget ``B`` is the store's. Inside it, squarified
(``treemap.layer_tiles``), in this order:

* each shown item i: a ``card`` of area ``A·s_i/B``;
* the active items the query filtered out: one neutral ``omitted`` box of area
  ``A·Σs_omitted/B`` (the denominator never changes: hidden shares are not
  free space);
* free budget: ``free`` boxes of total area ``A·(B − used)/B``, drawn blank
  (one box, or two when the cards sit in a corner of a mostly empty layer).

The three parts add up to ``A``. A children layer is its own rectangle of its
own size (``Canvas.child_*``), at its own scale: never scaled by the parent's
share. Colour, border and marks carry kind, weight and diff state — never
area. Text never enlarges a card (``cardtext``).

Diff (``statediff``): items withdrawn or merged since the baseline are
``gone`` boxes outside the layer's rectangle, at the same scale (area
``A·s_b/B``); new and changed items carry a mark; a moved but unchanged item
carries none.

Selection (``Query``): ``item`` scopes the overview to that item's children
layer; ``depth`` is the number of layer levels drawn (1 = only the first
rectangle); ``min_weight`` and ``kinds`` filter items in every layer. Every
active item in scope that is not drawn as a card is listed in
``Overview.omitted`` with why (``filter``, ``parent_not_shown``, ``depth``).

For a live page (the Pinboard): ``layout(capture(state, now=now), Query(...),
Canvas(...))`` once per request; draw each ``Layer`` as an ``<svg
viewBox="0 0 width height">`` (it then scales to any screen) and each ``Box``
with SVG attributes — no inline ``style`` attribute is needed, so a strict CSP
(``default-src 'self'``) holds; serve ``overview_page.stylesheet()`` as a
file for the colours and fonts. ``Box.fits`` is a pure estimate of whether the
card holds its text (link the card to its details when it is False); the
same state gives the same boxes, so positions stay put between reloads.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from types import MappingProxyType

from fold_core.kernel.view import state_document
from fold_core.state import State
from fold_host.overview.cardtext import CARD_FIELDS, DEFAULT_FIELDS, FIELDS, card_facts, card_text, marks
from fold_host.overview.statediff import TreeEntry, item_tree, state_diff
from fold_host.overview.treemap import layer_tiles, squarify, strip

__all__ = ["DEFAULT_FIELDS", "FIELDS", "KINDS", "KIND_COLOURS", "WEIGHTS", "Box", "Canvas", "Capture", "Layer",
           "Overview", "Query", "capture", "layout"]

WEIGHTS = ("critical", "high", "normal", "low", "trace")
KINDS = ("needs-you", "in-progress", "done", "fyi")
# Card fills by kind (the legend's colours; the PNG test samples them).
KIND_COLOURS = MappingProxyType({
    "needs-you": "#f6a49c",
    "in-progress": "#9cc3f7",
    "done": "#9fd8ae",
    "fyi": "#dcc4f5",
})


@dataclass(frozen=True)
class Canvas:
    """Sizes (CSS pixels) of the root rectangle and of every children layer's rectangle."""

    width: float = 960.0
    height: float = 600.0
    child_width: float = 960.0
    child_height: float = 600.0


@dataclass(frozen=True)
class Query:
    """What to draw: scope, depth, filters and the text fields of cards."""

    item: str | None = None
    depth: int | None = None
    min_weight: str | None = None
    kinds: tuple[str, ...] | None = None
    fields: tuple[str, ...] = DEFAULT_FIELDS

    def __post_init__(self) -> None:
        if self.depth is not None and self.depth < 1:
            raise ValueError(f"depth counts layer levels and must be ≥ 1, got {self.depth}")
        if self.min_weight is not None and self.min_weight not in WEIGHTS:
            raise ValueError(f"min_weight must be one of {', '.join(WEIGHTS)}, got {self.min_weight!r}")
        for kind in self.kinds or ():
            if kind not in KINDS:
                raise ValueError(f"kinds must be among {', '.join(KINDS)}, got {kind!r}")
        for name in self.fields:
            if name not in FIELDS:
                raise ValueError(f"fields must be among {', '.join(FIELDS)}, got {name!r}")

    def admits(self, view: Mapping) -> bool:
        """Whether the filters keep this item."""
        if self.min_weight is not None and WEIGHTS.index(view["weight"]) > WEIGHTS.index(self.min_weight):
            return False
        return self.kinds is None or view["kind"] in self.kinds

    def to_json(self, diff_from: int | None) -> dict:
        return {"item": self.item, "depth": self.depth, "min_weight": self.min_weight,
                "kinds": list(self.kinds) if self.kinds is not None else None,
                "fields": list(self.fields), "diff_from": diff_from}


@dataclass(frozen=True)
class Capture:
    """One immutable read: the §8 document at c, and the baseline document at b (same ``now``)."""

    current: Mapping
    baseline: Mapping | None = None
    # For items active at the baseline and not now: {"status", "merged_into", "at"}.
    gone: Mapping[str, Mapping] = field(default_factory=dict)
    baseline_event_seq: int | None = None

    @property
    def source_event_seq(self) -> int:
        return self.current["event_seq"]

    @cached_property
    def tree(self) -> dict[str, TreeEntry]:
        """``item_tree(current)``, made once per capture (each canvas laid out from it asks for it)."""
        return item_tree(self.current)


def capture(state: State, *, now: str, baseline: State | None = None) -> Capture:
    """A ``Capture`` of a ``fold_core.state.State`` (and an optional baseline state)."""
    current = state_document(state, now, not_active=0)
    if baseline is None:
        return Capture(current)
    before = state_document(baseline, now, not_active=0)
    gone = {}
    for item_id in item_tree(before):
        record = state.items.get(item_id)
        if record is not None and record["status"] != "active":
            gone[item_id] = {"status": record["status"], "merged_into": record["merged_into"],
                             "at": record["status_at"]}
    return Capture(current, before, gone, baseline.event_seq)


@dataclass(frozen=True)
class Box:
    """One rectangle, relative to its layer's rectangle (or to its layer's gone strip)."""

    role: str  # "card" | "omitted" | "free" | "gone"
    x: float
    y: float
    w: float
    h: float
    share: float  # whole shares, except the parts of a free area split in two
    id: str | None = None
    kind: str | None = None
    weight: str | None = None
    diff: str | None = None  # card: "new" | "changed"; gone: "withdrawn" | "merged"
    merged_into: str | None = None
    lines: tuple = ()  # ((field, text), ...) shown on the card
    detail: tuple = ()  # the full lines, for the detail list when the card cannot hold them
    badges: tuple[str, ...] = ()
    fits: bool = True  # the estimate; the overview measures the truth
    ids: tuple[str, ...] = ()  # omitted: the ids it stands for
    children: Mapping | None = None  # {"count", "used", "shown"} when the item has active children

    @property
    def area(self) -> float:
        return self.w * self.h

    def to_json(self) -> dict:
        data = {"role": self.role, "share": self.share,
                "geometry": {"x": self.x, "y": self.y, "w": self.w, "h": self.h, "area": self.area}}
        for name in ("id", "kind", "weight", "diff", "merged_into", "children"):
            value = getattr(self, name)
            if value is not None:
                data[name] = dict(value) if isinstance(value, Mapping) else value
        if self.role == "omitted":
            data["ids"] = list(self.ids)
        if self.role in ("card", "gone"):
            data["badges"], data["fits_estimate"] = list(self.badges), self.fits
        return data


@dataclass(frozen=True)
class Layer:
    """One budget rectangle: a layer's cards, omitted and free boxes, and its gone strip."""

    parent: str | None
    title: str | None
    level: int  # 1 = the first rectangle of the overview
    width: float
    height: float
    budget: int
    used: int
    omitted_share: int
    boxes: tuple[Box, ...]
    gone: tuple[Box, ...] = ()
    gone_size: tuple[float, float] = (0.0, 0.0)

    @property
    def key(self) -> str:
        """A DOM-safe name: ``root`` or the parent's id (ids are [a-z0-9-])."""
        return "root" if self.parent is None else f"item-{self.parent}"

    @property
    def free(self) -> int:
        return self.budget - self.used

    @property
    def area(self) -> float:
        return self.width * self.height

    def to_json(self) -> dict:
        return {"layer": self.parent, "key": self.key, "title": self.title, "level": self.level,
                "budget": self.budget, "used": self.used, "free": self.free, "omitted_share": self.omitted_share,
                "geometry": {"w": self.width, "h": self.height, "area": self.area},
                "boxes": [box.to_json() for box in self.boxes],
                "gone": [box.to_json() for box in self.gone],
                "gone_geometry": {"w": self.gone_size[0], "h": self.gone_size[1]}}


@dataclass(frozen=True)
class Overview:
    """Everything the renderer draws, and what it leaves out (for render.json)."""

    source_event_seq: int
    revision: int
    now: str
    budget: int
    baseline_event_seq: int | None
    query: Query
    layers: tuple[Layer, ...]
    omitted: tuple[Mapping, ...]  # {"id", "layer", "share", "why"}
    changes: tuple[Mapping, ...]  # the whole diff, each with "shown"

    def to_json(self) -> dict:
        return {"source_event_seq": self.source_event_seq, "revision": self.revision, "now": self.now,
                "budget": self.budget, "baseline_event_seq": self.baseline_event_seq,
                "scope": self.query.to_json(self.baseline_event_seq),
                "omitted": [dict(entry) for entry in self.omitted],
                "changes": [dict(entry) for entry in self.changes] if self.baseline_event_seq is not None else None,
                "layers": [layer.to_json() for layer in self.layers]}


def layout(shot: Capture, query: Query = Query(), canvas: Canvas = Canvas()) -> Overview:
    """The boxes of every shown layer; raises ``ValueError`` when ``query.item`` is not active."""
    document = shot.current
    budget = document["budget"]
    tree = shot.tree
    members: dict[str | None, list[TreeEntry]] = {}
    for entry in tree.values():
        members.setdefault(entry.parent, []).append(entry)
    changes = {} if shot.baseline is None else state_diff(shot.baseline, document, shot.gone)
    before = {} if shot.baseline is None else item_tree(shot.baseline)
    if query.item is not None and query.item not in tree:
        raise ValueError(f"item {query.item} is not an active item of the captured state")
    builder = _Builder(query, canvas, budget, members, changes, before)
    title = tree[query.item].view["title"] if query.item is not None else None
    builder.add_layer(query.item, title, 1)
    shown = {box.id for layer in builder.layers for box in (*layer.boxes, *layer.gone) if box.id}
    listed = [{**change, "shown": change["id"] in shown} for change in changes.values()]
    return Overview(document["event_seq"], document["revision"], document["now"], budget,
                    shot.baseline_event_seq, query, tuple(builder.layers), tuple(builder.omitted), tuple(listed))


@lru_cache(maxsize=4096)
def _card_box(facts: tuple, rect: tuple, diff: str | None, fields: tuple, budget: int,
              children: tuple | None) -> Box:
    """A card from all that it depends on (an immutable ``Box``: the same card is built once, then shared)."""
    item_id, weight, kind, share = facts[:4]
    badges = marks(dict(zip(CARD_FIELDS, facts)), diff)
    lines, detail, likely = card_text(dict(zip(CARD_FIELDS, facts)), fields, budget, rect[2], rect[3], badges)
    below = None
    if children is not None:
        below = MappingProxyType({"count": children[0], "used": children[1], "shown": children[2]})
    x, y, w, h = rect
    return Box("card", x, y, w, h, share=share, id=item_id, kind=kind, weight=weight, diff=diff,
               lines=lines, detail=detail, badges=badges, fits=likely, children=below)


class _Builder:
    """Walks the layers depth first in rank order, collecting rectangles and omissions."""

    def __init__(self, query: Query, canvas: Canvas, budget: int, members: Mapping, changes: Mapping,
                 before: Mapping) -> None:
        self.query, self.canvas, self.budget = query, canvas, budget
        self.members, self.changes, self.before = members, changes, before
        self.layers: list[Layer] = []
        self.omitted: list[dict] = []

    def add_layer(self, parent: str | None, title: str | None, level: int) -> None:
        query, budget = self.query, self.budget
        width, height = ((self.canvas.width, self.canvas.height) if level == 1
                         else (self.canvas.child_width, self.canvas.child_height))
        entries = self.members.get(parent, [])
        shown = [entry for entry in entries if query.admits(entry.view)]
        hidden = [entry for entry in entries if not query.admits(entry.view)]
        used = sum(entry.view["share"] for entry in entries)
        hidden_share = sum(entry.view["share"] for entry in hidden)
        rects, free_rects = layer_tiles([entry.view["share"] for entry in shown] + [hidden_share],
                                       budget - used, width, height)
        deeper = query.depth is None or level < query.depth
        boxes = [self._card(entry, rect, deeper) for entry, rect in zip(shown, rects)]
        if hidden_share:
            boxes.append(Box("omitted", *rects[-1], share=hidden_share,
                             ids=tuple(entry.view["id"] for entry in hidden)))
        if budget - used:
            # One free box, or two around a corner (their areas add up to the free share).
            total = sum(rect[2] * rect[3] for rect in free_rects)
            boxes.extend(Box("free", *rect, share=(budget - used) * rect[2] * rect[3] / total)
                         for rect in free_rects)
        gone, gone_size = self._gone(parent, width * height)
        self.layers.append(Layer(parent, title, level, width, height, budget, used, hidden_share,
                                 tuple(boxes), gone, gone_size))
        for entry in hidden:
            self._omit(entry, "filter")
        for entry in shown:
            view = entry.view
            if view["id"] in self.members:
                if deeper:
                    self.add_layer(view["id"], view["title"], level + 1)
                else:
                    self._omit_below(view["id"], "depth")

    def _card(self, entry: TreeEntry, rect: tuple, deeper: bool) -> Box:
        view = entry.view
        change = self.changes.get(view["id"])
        below = self.members.get(view["id"])
        children = (len(below), sum(child.view["share"] for child in below), deeper) if below else None
        return _card_box(card_facts(view), rect, change["op"] if change is not None else None, self.query.fields,
                         self.budget, children)

    def _gone(self, parent: str | None, area: float) -> tuple[tuple[Box, ...], tuple[float, float]]:
        """Withdrawn / merged items of this layer, at the layer's scale, outside its rectangle."""
        gone = [change for change in self.changes.values()
                if change["op"] in ("withdrawn", "merged") and change["layer"] == parent
                and self.query.admits(self.before[change["id"]].view)]
        if not gone:
            return (), (0.0, 0.0)
        total = area * sum(change["share"] for change in gone) / self.budget
        width, height = strip(total, self.canvas.width if parent is None else self.canvas.child_width)
        rects = squarify([change["share"] for change in gone], 0.0, 0.0, width, height)
        boxes = []
        for change, rect in zip(gone, rects):
            view = self.before[change["id"]].view
            extra = (("time", f"merged into {change['merged_into']}"),) if change["op"] == "merged" else ()
            lines, detail, likely = card_text(view, self.query.fields, self.budget, rect[2], rect[3],
                                              (change["op"],), extra)
            boxes.append(Box("gone", *rect, share=change["share"], id=change["id"], kind=view["kind"],
                             weight=view["weight"], diff=change["op"], merged_into=change.get("merged_into"),
                             lines=lines, detail=detail, badges=(change["op"],), fits=likely))
        return tuple(boxes), (width, height)

    def _omit(self, entry: TreeEntry, why: str) -> None:
        view = entry.view
        self.omitted.append({"id": view["id"], "layer": entry.parent, "share": view["share"], "why": why})
        self._omit_below(view["id"], "parent_not_shown" if why != "depth" else "depth")

    def _omit_below(self, parent: str, why: str) -> None:
        for entry in self.members.get(parent, ()):
            self._omit(entry, why)
