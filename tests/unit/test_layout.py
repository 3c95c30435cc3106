"""The overview's pure layout (contract §13): geometry, diff, selection.

No browser here: these check the boxes the renderer is given. The real PNGs
and DOM measurements are in tests/integration/test_overview.py.
"""

from __future__ import annotations

import itertools
import random
import subprocess
import sys

import pytest

from fold_host.overview import layout
from fold_host.overview.cardtext import card_lines, fits
from fold_host.overview.treemap import aspect, layer_tiles, squarify, strip
from fold_core.store import memory_store

NOW = "2026-10-09T08:00:00+08:00"
LATER = "2026-10-12T08:00:00+08:00"


def item(item_id, weight, kind="fyi", title=None, **extra):
    return {"id": item_id, "title": title or item_id, "weight": weight, "kind": kind, **extra}


NESTED = [
    item("visa", "critical", "needs-you", due_at="2026-10-10T00:00:00+08:00"),
    item("trip", "high", "in-progress", summary="三个子项", children=[
        item("hotel", "critical", "needs-you", summary="两步", children=[
            item("booking", "normal", "needs-you"), item("receipt", "trace", "done")]),
        item("train", "high", "done"),
        item("note", "low", "fyi"),
    ]),
    item("weekly", "normal", "needs-you"),
    item("standup", "low", "fyi"),
    item("t1", "trace", "done"),
]


def nested_store():
    store = memory_store(64)
    answer = store.commit({"batch_id": "b1", "declarations": NESTED}, actor="agent", now=NOW)
    assert answer.exit_code == 0, answer.document
    return store


def boxes_by_id(overview):
    return {box.id: (layer, box) for layer in overview.layers for box in (*layer.boxes, *layer.gone) if box.id}


# -- treemap -------------------------------------------------------------------


def overlap(a, b):
    width = min(a[0] + a[2], b[0] + b[2]) - max(a[0], b[0])
    height = min(a[1] + a[3], b[1] + b[3]) - max(a[1], b[1])
    return max(width, 0) * max(height, 0)


@pytest.mark.parametrize("seed", range(30))
def test_squarify_tiles_the_rectangle_with_exact_areas(seed):
    rng = random.Random(seed)
    values = sorted((rng.choice([24, 12, 6, 3, 1, rng.randint(1, 30)]) for _ in range(rng.randint(1, 40))),
                    reverse=True) + [rng.randint(0, 20)]
    width, height = rng.uniform(200, 1200), rng.uniform(150, 900)
    rects = squarify(values, 0, 0, width, height)
    total = sum(values)
    assert len(rects) == len(values)
    for value, rect in zip(values, rects):
        assert rect[2] * rect[3] == pytest.approx(width * height * value / total, rel=1e-9, abs=1e-6)
        assert rect[0] >= -1e-9 and rect[1] >= -1e-9
        assert rect[0] + rect[2] <= width + 1e-6 and rect[1] + rect[3] <= height + 1e-6
    for a, b in itertools.combinations(rects, 2):
        assert overlap(a, b) < 1e-6


def test_squarify_keeps_budget_cards_readable():
    # The shares of a full root layer at B = 64: no card is a sliver.
    values = [24, 12, 6, 6, 6, 3, 3, 1, 1, 1, 1]
    for rect in squarify(values, 0, 0, 960, 600):
        assert max(rect[2] / rect[3], rect[3] / rect[2]) < 3.5, rect


@pytest.mark.parametrize("values, free", [([24, 6, 1], 33), ([6, 3, 1], 54), ([1], 63), ([12], 52),
                                          ([1] * 40, 24), ([24, 12, 6, 6, 6, 3, 3, 1, 1, 1], 1)])
def test_a_mostly_empty_layer_does_not_squeeze_its_cards(values, free):
    cards, spaces = layer_tiles(values, free, 960, 600)
    assert max(aspect(rect) for rect in cards) <= 3
    total = sum(values) + free
    for value, rect in zip(values, cards):
        assert rect[2] * rect[3] == pytest.approx(960 * 600 * value / total)
    assert sum(w * h for _, _, w, h in spaces) == pytest.approx(960 * 600 * free / total)
    for a, b in itertools.combinations(cards + spaces, 2):
        assert overlap(a, b) < 1e-6


def test_strip_holds_the_area():
    for area in (1.0, 900.0, 54_000.0, 576_000.0, 2_000_000.0):
        width, height = strip(area, 960)
        assert width <= 960 and width * height == pytest.approx(area)


# -- geometry ------------------------------------------------------------------


def test_cards_omitted_and_free_areas_follow_the_shares():
    store = nested_store()
    shot = layout.capture(store.state(), now=LATER)
    query = layout.Query(kinds=("needs-you", "in-progress", "fyi"))
    overview = layout.layout(shot, query, layout.Canvas(900, 500, 600, 400))
    root, trip, hotel = overview.layers
    assert (root.parent, trip.parent, hotel.parent) == (None, "trip", "hotel")
    assert (root.width, root.height, trip.width, trip.height) == (900, 500, 600, 400)
    document = shot.current
    shares = {view["id"]: view["share"] for view in _views(document["root"])}
    for layer in overview.layers:
        area = layer.width * layer.height
        assert sum(box.area for box in layer.boxes) == pytest.approx(area)
        for box in layer.boxes:
            if box.role == "card":
                assert box.area == pytest.approx(area * shares[box.id] / 64)
        omitted = [box for box in layer.boxes if box.role == "omitted"]
        free = sum(box.area for box in layer.boxes if box.role == "free")
        used = sum(shares[entry["id"]] for entry in _members(document, layer.parent))
        hidden = sum(shares[i] for i in (omitted[0].ids if omitted else ()))
        assert (omitted[0].area if omitted else 0) == pytest.approx(area * hidden / 64)
        assert free == pytest.approx(area * (64 - used) / 64)
    # The filter kept the denominator: t1 (done, 1) and train (done, 12) are "not shown", not free.
    assert [box.ids for box in root.boxes if box.role == "omitted"] == [("t1",)]
    assert [box.ids for box in trip.boxes if box.role == "omitted"] == [("train",)]
    assert {entry["id"]: entry["why"] for entry in overview.omitted} == {
        "t1": "filter", "train": "filter", "receipt": "filter"}


def _views(layer):
    for view in layer.get("items", ()):
        yield view
        if view["children"]:
            yield from _views(view["children"])


def _members(document, parent):
    if parent is None:
        return document["root"]["items"]
    return next(view for view in _views(document["root"]) if view["id"] == parent)["children"]["items"]


def test_a_child_layer_is_never_scaled_by_its_parents_share():
    overview = layout.layout(layout.capture(nested_store().state(), now=LATER))
    by_id = boxes_by_id(overview)
    trip_layer, hotel = by_id["hotel"]
    # hotel is critical (24) in trip's layer: 24/64 of trip's own rectangle, whatever trip's share (12).
    assert hotel.area == pytest.approx(trip_layer.width * trip_layer.height * 24 / 64)


def test_item_scope_and_depth():
    shot = layout.capture(nested_store().state(), now=LATER)
    overview = layout.layout(shot, layout.Query(item="trip", depth=1))
    assert [layer.parent for layer in overview.layers] == ["trip"]
    assert overview.layers[0].level == 1 and overview.layers[0].width == layout.Canvas().width
    hotel = boxes_by_id(overview)["hotel"][1]
    assert hotel.children == {"count": 2, "used": 7, "shown": False}
    assert [(entry["id"], entry["why"]) for entry in overview.omitted] == [("booking", "depth"), ("receipt", "depth")]
    with pytest.raises(ValueError, match="not an active item"):
        layout.layout(shot, layout.Query(item="nope"))


def test_min_weight_hides_children_of_a_hidden_parent():
    overview = layout.layout(layout.capture(nested_store().state(), now=LATER), layout.Query(min_weight="critical"))
    assert [layer.parent for layer in overview.layers] == [None]
    whys = {entry["id"]: entry["why"] for entry in overview.omitted}
    assert whys["trip"] == "filter" and whys["hotel"] == whys["booking"] == "parent_not_shown"


@pytest.mark.parametrize("bad", [{"depth": 0}, {"min_weight": "urgent"}, {"kinds": ("todo",)}, {"fields": ("body",)}])
def test_query_rejects_unknown_values(bad):
    with pytest.raises(ValueError):
        layout.Query(**bad)


# -- diff ------------------------------------------------------------------------


def diff_store():
    store = memory_store(64)
    first = [item("a", "normal", "fyi"), item("b", "low", "fyi"), item("c", "low", "fyi"),
             item("d", "normal", "needs-you"), item("e", "normal", "in-progress")]
    assert store.commit({"batch_id": "b1", "declarations": first}, actor="agent", now=NOW).exit_code == 0
    baseline = store.state()
    second = [{"id": "a", "relation": "withdraw", "reason": "done"},
              {"id": "m", "relation": "merges:[b, c]", "title": "merged", "weight": "low", "kind": "fyi"},
              {"id": "d", "relation": "supersedes:d", "title": "d", "weight": "high", "kind": "needs-you"}]
    assert store.commit({"batch_id": "b2", "declarations": second}, actor="agent", now=NOW).exit_code == 0
    return store, baseline


def test_diff_marks_new_changed_and_draws_gone_items_outside_at_the_same_scale():
    store, baseline = diff_store()
    shot = layout.capture(store.state(), now=LATER, baseline=baseline)
    overview = layout.layout(shot)
    root = overview.layers[0]
    by_id = boxes_by_id(overview)
    assert by_id["m"][1].diff == "new" and by_id["d"][1].diff == "changed"
    # e moved from rank 3 to rank 2 but did not change: no mark at all.
    ranks_before = [view["id"] for view in shot.baseline["root"]["items"]]
    ranks_after = [view["id"] for view in shot.current["root"]["items"]]
    assert ranks_before.index("e") != ranks_after.index("e")
    assert by_id["e"][1].diff is None and by_id["e"][1].badges == ()
    gone = {box.id: box for box in root.gone}
    assert set(gone) == {"a", "b", "c"}
    assert gone["a"].diff == "withdrawn" and gone["b"].merged_into == gone["c"].merged_into == "m"
    area = root.width * root.height
    assert gone["a"].area == pytest.approx(area * 6 / 64) and gone["b"].area == pytest.approx(area * 3 / 64)
    assert sum(box.area for box in root.boxes) == pytest.approx(area)  # gone boxes are not inside
    ops = {change["id"]: change["op"] for change in overview.changes}
    assert ops == {"a": "withdrawn", "b": "merged", "c": "merged", "m": "new", "d": "changed"}


# -- card text -------------------------------------------------------------------


def test_card_lines_follow_the_fields_and_always_carry_the_id():
    view = {"id": "visa", "title": "签证", "summary": "缺流水", "weight": "critical", "kind": "needs-you",
            "share": 24, "until_due": "-1d2h", "until_stale": None, "age": "3d"}
    assert card_lines(view, ("title",), 64) == (("head", "visa"), ("title", "签证"))
    lines = dict(card_lines(view, ("title", "summary", "weight", "share", "due", "age"), 64))
    assert lines["head"] == "visa · critical · 24/64" and lines["time"] == "overdue 1d2h · age 3d"


def test_fit_estimate():
    long_cjk = (("head", "x · trace · fyi · 1/64"), ("title", "字" * 24), ("summary", "文" * 60))
    assert not fits(long_cjk, 120, 80)
    assert fits(long_cjk, 360, 600)


# -- import weight -----------------------------------------------------------------


def test_layout_and_state_reads_do_not_import_the_browser():
    code = (
        "import sys, fold_host.overview.layout\n"
        "from fold_host.cli import build_parser\n"
        "build_parser()\n"
        "heavy = sorted(m for m in sys.modules if m.split('.')[0] in ('playwright', 'jinja2', 'greenlet'))\n"
        "assert not heavy, heavy\n"
        "assert 'fold_host.overview.render' not in sys.modules\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
