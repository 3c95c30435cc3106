"""The board's markup kept per box and per list entry, so a render of an unchanged board reuses it.

With the rendered-board cache off (``board_cache=0``) every request still
captures the state, lays both canvases out and fills the page's templates;
but most of the page is the markup of cards whose inputs did not change
since the last request. ``Fragments`` keeps that markup, keyed by all that
the template reads:

* a box of a budget rectangle (``box_of`` in ``boxes.html.j2``): every field
  of the immutable ``Box`` (role, geometry, lines, marks, children), its DOM
  name, whether its card is marked as continuing in the list, the budget;
  and the last drawing of each rectangle (``rectangle`` in
  ``parts.html.j2``), reused when it was drawn from equal boxes (a ``Box``
  compares every field), marks, size and budget;
* an entry of the list under a rectangle (``entry_line`` in
  ``parts.html.j2``): the item's ``CARD_FIELDS`` (id, title, summary,
  weight, kind, share, due and stale times), its badges and children, the
  budget. The macro is handed a view made of those facts only, so it cannot
  read a field the key leaves out (it would fail loudly instead); and the
  last list of each layer, reused for equal facts.

The templates' own words (and the environment's filters and globals) are
fixed per environment, which is fixed per app. A changed item, a new minute
that changes a due time, another filter or budget: another key, rendered
once from the same macros. What no board used for a while goes first (two
generations, bounded).
"""

from __future__ import annotations

import threading
from dataclasses import fields
from operator import attrgetter

from fold_host.overview.cardtext import CARD_FIELDS, card_facts
from fold_host.overview.layout import Box

__all__ = ["Fragments"]

_BOX_FIELDS = tuple(field.name for field in fields(Box) if field.name != "children")
_BOX_VALUES = attrgetter(*_BOX_FIELDS)


def box_key(box: Box) -> tuple:
    """Everything a box's markup can depend on, hashable (the children mapping as its items)."""
    children = box.children
    return _BOX_VALUES(box), None if children is None else tuple(children.items())


class _Kept:
    """At most ``limit`` values in two generations: reads take no lock; a full young one becomes the old one.

    What was read from the old generation moves to the young one, so what the
    current board uses stays and what no board used for a generation goes.
    """

    def __init__(self, limit: int) -> None:
        self.limit = max(2, limit)
        self._young: dict = {}
        self._old: dict = {}
        self._lock = threading.Lock()

    def get(self, key):
        value = self._young.get(key)
        if value is None:
            value = self._old.get(key)
            if value is not None:
                self.put(key, value)
        return value

    def put(self, key, value) -> None:
        with self._lock:
            if len(self._young) >= self.limit // 2:
                self._old, self._young = self._young, {}
            self._young[key] = value

    def __len__(self) -> int:
        return len(self._young) + len(self._old)


class Fragments:
    """Kept markup of boxes, rectangles and list entries for one template environment (thread-safe)."""

    def __init__(self, environment, *, card_href: str = "/item/", limit: int = 4096) -> None:
        self._environment, self._card_href = environment, card_href
        self._modules: dict[int, tuple] = {}  # budget -> (boxes module, parts module)
        self._parts = _Kept(limit)  # one box or one list entry, by its key
        self._last = _Kept(max(2, limit // 16))  # per rectangle and list: what it was drawn from, its markup
        self.rendered = 0  # parts rendered from the templates (the rest were kept ones)

    def rectangle(self, layer, canvas: str, marked, budget: int):
        """A layer's budget rectangle on ``canvas`` (what ``rectangle(layer, canvas, marked)`` renders)."""
        from markupsafe import Markup

        # The last drawing of this rectangle is reused when it was drawn from equal boxes (a Box compares
        # every field; boxes of unchanged cards are the same objects, so the comparison is mostly identity).
        drawn = (layer.boxes, tuple([box.id in marked for box in layer.boxes]), layer.width, layer.height, budget)
        slot = ("rectangle", canvas, layer.key)
        last = self._last.get(slot)
        if last is not None and last[0] == drawn:
            return Markup(last[1])
        prefix, macros, parts = f"{layer.key}-{canvas[0]}", self._macros(budget), []
        for index, box in enumerate(layer.boxes):
            name = f"{prefix}{index}"
            key = (name, box.id in marked, budget, box_key(box))
            part = self._parts.get(key)
            parts.append(part if part is not None else self._render(key, macros[0].box_of, box, name, marked))
        html = str(macros[1].rectangle(layer, canvas, marked, Markup("".join(parts))))
        self._last.put(slot, (drawn, html))
        return Markup(html)

    def entries(self, layer_key: str, entries, budget: int):
        """The list items of a layer (what ``entry_line`` renders for each)."""
        from markupsafe import Markup

        facts = [(card_facts(entry["view"]), entry["badges"], entry["children"]) for entry in entries]
        slot = ("entries", layer_key)
        last = self._last.get(slot)
        if last is not None and last[0] == (facts, budget):
            return Markup(last[1])
        macros, parts = self._macros(budget), []
        for values, badges, children in facts:
            key = ("entry", budget, values, badges, None if children is None else tuple(children.items()))
            part = self._parts.get(key)
            if part is None:
                shown = {"view": dict(zip(CARD_FIELDS, values)), "badges": badges, "children": children}
                part = self._render(key, macros[1].entry_line, shown)
            parts.append(part)
        html = "".join(parts)
        self._last.put(slot, ((facts, budget), html))
        return Markup(html)

    def _macros(self, budget: int) -> tuple:
        modules = self._modules.get(budget)
        if modules is None:
            context = {"budget": budget, "card_href": self._card_href, "details": frozenset()}
            modules = tuple(self._environment.get_template(name).make_module(context)
                            for name in ("boxes.html.j2", "parts.html.j2"))
            self._modules[budget] = modules
        return modules

    def _render(self, key: tuple, macro, *arguments) -> str:
        html = str(macro(*arguments))
        self.rendered += 1
        self._parts.put(key, html)
        return html
