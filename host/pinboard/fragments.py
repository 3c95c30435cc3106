"""The board's markup kept per box and per list entry, so a render of an unchanged board reuses it.

With the rendered-board cache off (``board_cache=0``) every request still
captures the state, lays both canvases out and fills the page's templates;
but most of the page is the markup of cards whose inputs did not change
since the last request. ``Fragments`` keeps that markup, keyed by all that
the template reads:

* a box of a budget rectangle (``box_of`` in ``boxes.html.j2``): every field
  of the immutable ``Box`` (role, geometry, lines, marks, children), its DOM
  name, whether its card is marked as continuing in the list, the budget;
  and the whole rectangle (``rectangle`` in ``parts.html.j2``): its boxes'
  keys, the layer's name and size, the canvas;
* an entry of the list under a rectangle (``entry_line`` in
  ``parts.html.j2``): the item's ``CARD_FIELDS`` (id, title, summary,
  weight, kind, share, due and stale times), its badges and children, the
  budget. The macro is handed a view made of those facts only, so it cannot
  read a field the key leaves out (it would fail loudly instead).

The templates' own words (and the environment's filters and globals) are
fixed per environment, which is fixed per app. A changed item, a new minute
that changes a due time, another filter or budget: another key, rendered
once from the same macros. Least recently used markup goes first.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import fields
from operator import attrgetter

from fold_consumers.overview.cardtext import CARD_FIELDS, card_facts
from fold_consumers.overview.layout import Box

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
        self._parts = _Kept(limit)  # one box or one list entry
        self._wholes = _Kept(max(2, limit // 32))  # a whole rectangle, all the entries of a list
        self.rendered = 0  # parts rendered from the templates (the rest were kept ones)

    def rectangle(self, layer, canvas: str, marked, budget: int):
        """A layer's budget rectangle on ``canvas`` (what ``rectangle(layer, canvas, marked)`` renders)."""
        from markupsafe import Markup

        prefix = f"{layer.key}-{canvas[0]}"
        keys = tuple((box.id in marked, box_key(box)) for box in layer.boxes)
        whole = ("rectangle", canvas, layer.key, layer.width, layer.height, budget, keys)
        html = self._wholes.get(whole)
        if html is None:
            boxes, parts = self._macros(budget)[0].box_of, []
            for index, (box, key) in enumerate(zip(layer.boxes, keys)):
                name = f"{prefix}{index}"
                part = self._parts.get((name, budget, key))
                parts.append(part if part is not None else self._render((name, budget, key), boxes, box, name, marked))
            html = str(self._macros(budget)[1].rectangle(layer, canvas, marked, Markup("".join(parts))))
            self._wholes.put(whole, html)
        return Markup(html)

    def entries(self, entries, budget: int):
        """The list items of a layer (what ``entry_line`` renders for each)."""
        from markupsafe import Markup

        keys = tuple((card_facts(entry["view"]), entry["badges"],
                      None if entry["children"] is None else tuple(entry["children"].items())) for entry in entries)
        whole = ("entries", budget, keys)
        html = self._wholes.get(whole)
        if html is None:
            parts = []
            for entry, key in zip(entries, keys):
                part = self._parts.get(("entry", budget, key))
                if part is None:
                    shown = {"view": dict(zip(CARD_FIELDS, key[0])), "badges": entry["badges"],
                             "children": entry["children"]}
                    part = self._render(("entry", budget, key), self._macros(budget)[1].entry_line, shown)
                parts.append(part)
            html = "".join(parts)
            self._wholes.put(whole, html)
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
