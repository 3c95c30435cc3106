"""Squarified treemap: exact areas, bounded aspect ratios (contract §13).

``squarify(values, x, y, w, h)`` tiles the rectangle with one rectangle per
value, each of area ``w·h·value/Σvalues`` *exactly* (up to float rounding):
the budget geometry must hold to the pixel, so nothing here rounds, pads or
enforces a minimum size. The order of the values is kept (rank order, then
"not shown", then free), which keeps positions stable between renders of the
same state; the squarified row rule (Bruls, Huizing, van Wijk 2000) keeps the
aspect ratios near 1 so that cards stay readable.

``layer_tiles`` places a layer's cards and its free budget. Among four
arrangements — one squarified sequence with free space last; the cards
squarified in a left column, a top band, or a top-left corner of the layer's
own proportions, each of exactly their total area, with free space beside,
below, or around them (then free space is two rectangles) — it keeps the one
whose worst card aspect ratio is smallest (ties keep the earlier), so that a
mostly empty layer does not squeeze its cards into slivers.

``strip`` sizes a free-standing rectangle that holds a given area with a
reasonable shape (for items shown outside a budget rectangle at its scale).

Pure functions over numbers; ``layer_tiles`` keeps its answers per
arguments (a live page lays the same layers out on every request).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import lru_cache

__all__ = ["Rect", "aspect", "layer_tiles", "squarify", "strip"]

Rect = tuple[float, float, float, float]  # x, y, width, height


def _worst(row_sum: float, row_min: float, row_max: float, length: float) -> float:
    """The worst aspect ratio of a row of areas laid along a side of ``length``."""
    side = length * length
    total = row_sum * row_sum
    return max(side * row_max / total, total / (side * row_min))


def squarify(values: Sequence[float], x: float, y: float, w: float, h: float) -> list[Rect]:
    """One rectangle per value (in order), tiling ``(x, y, w, h)`` by area.

    Zero values get an empty rectangle at the current corner; negative values
    are an error.
    """
    if any(value < 0 for value in values):
        raise ValueError("treemap values must be ≥ 0")
    total = float(sum(values))
    if total <= 0 or w <= 0 or h <= 0:
        return [(x, y, 0.0, 0.0) for _ in values]
    scale = w * h / total
    areas = [value * scale for value in values]
    rects: list[Rect | None] = [None] * len(values)
    order = [index for index, area in enumerate(areas) if area > 0]
    for index, area in enumerate(areas):
        if area <= 0:
            rects[index] = (x, y, 0.0, 0.0)
    start = 0
    while start < len(order):
        length = min(w, h)
        row_sum = row_min = row_max = areas[order[start]]
        end = start + 1
        while end < len(order):
            area = areas[order[end]]
            widened = (row_sum + area, min(row_min, area), max(row_max, area))
            if _worst(*widened, length) > _worst(row_sum, row_min, row_max, length):
                break
            row_sum, row_min, row_max = widened
            end += 1
        last_row = end == len(order)
        # The row runs along the short side: a column on the left (w ≥ h) or a band on top.
        column = w >= h
        side = h if column else w
        thickness = (w if column else h) if last_row else row_sum / side
        offset, limit = (y, y + h) if column else (x, x + w)
        for position, index in enumerate(order[start:end]):
            run = (limit - offset) if position == end - start - 1 else areas[index] / thickness
            rects[index] = (x, offset, thickness, run) if column else (offset, y, run, thickness)
            offset += run
        if column:
            x, w = x + thickness, w - thickness
        else:
            y, h = y + thickness, h - thickness
        start = end
    return [rect for rect in rects if rect is not None]


def aspect(rect: Rect) -> float:
    """Long side over short side (1 = square); 1 for an empty rectangle."""
    _, _, w, h = rect
    if w <= 0 or h <= 0:
        return 1.0
    return max(w / h, h / w)


def layer_tiles(values: Sequence[float], free: float, w: float, h: float) -> tuple[tuple[Rect, ...], tuple[Rect, ...]]:
    """Rectangles for ``values`` (in order) and one or two for ``free``, tiling ``(0, 0, w, h)`` by area."""
    return _tiles(tuple(values), free, w, h)


@lru_cache(maxsize=1024)  # tuples out: a kept answer cannot be changed by a caller
def _tiles(values: tuple, free: float, w: float, h: float) -> tuple[tuple[Rect, ...], tuple[Rect, ...]]:
    whole = squarify([*values, free], 0.0, 0.0, w, h)
    candidates = [(whole[:-1], [whole[-1]])]
    used = float(sum(values))
    if free > 0 and used > 0:
        share = used / (used + free)
        column, band = w * share, h * share
        candidates.append((squarify(values, 0.0, 0.0, column, h), [(column, 0.0, w - column, h)]))
        candidates.append((squarify(values, 0.0, 0.0, w, band), [(0.0, band, w, h - band)]))
        scale = math.sqrt(share)
        cw, ch = w * scale, h * scale
        candidates.append((squarify(values, 0.0, 0.0, cw, ch), [(cw, 0.0, w - cw, h), (0.0, ch, cw, h - ch)]))

    def worst(candidate: tuple[list[Rect], list[Rect]]) -> float:
        return max((aspect(rect) for rect in candidate[0]), default=1.0)

    cards, spaces = min(candidates, key=worst)
    return tuple(cards), tuple(spaces)


def strip(area: float, max_width: float, aspect: float = 1.6) -> tuple[float, float]:
    """Width and height of a rectangle of ``area`` no wider than ``max_width``.

    Prefers a ``aspect``:1 landscape shape; a very large area becomes a band
    of the full width.
    """
    if area <= 0:
        return 0.0, 0.0
    width = min(max_width, math.sqrt(area * aspect))
    return width, area / width
