"""The board's kept parts: a board rendered from kept markup and plans is the board rendered afresh.

With ``board_cache=0`` every request lays the board out and fills the
templates, but card plans, boxes, foldings and markup are kept between
requests (``cardtext``, ``layout``, ``treemap``, ``board``, ``fragments``).
Each test changes what a card depends on — a summary, a weight (so the
layer's geometry), a due time passing, a new child, a withdrawal, a filter —
and compares the page of the long-running app with the page of a new app in
a process whose kept parts were all forgotten. A key that misses one input
serves the old card and fails here.
"""

from __future__ import annotations

from dataclasses import fields, replace
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from starlette.testclient import TestClient

from fold_host.overview import cardtext, layout, treemap
from fold_host.overview.cardtext import CARD_FIELDS, FIELDS, card_text
from fold_host.overview.layout import Box
from fold_core import timefmt
from fold_core.kernel import state_document
from fold_core.store.file import file_store
from fold_host.pinboard import board as board_module
from fold_host.pinboard.app import create_app
from fold_host.pinboard.board import BoardQuery, board
from fold_host.pinboard.fragments import box_key

ZONE = "Asia/Shanghai"
NOW = "2026-10-09T08:00:00+08:00"


def _item(item_id, weight, kind="fyi", **extra):
    return {"id": item_id, "title": f"{item_id} 标题", "weight": weight, "kind": kind, **extra}


ITEMS = [
    _item("visa", "critical", "needs-you", summary="12日截止，带护照原件", due_at="2026-10-10T00:00:00+08:00"),
    _item("trip", "high", "in-progress", summary="三个子项", children=[
        _item("hotel", "critical", "needs-you", summary="两步", children=[
            _item("booking", "normal", "needs-you"), _item("receipt", "trace", "done")]),
        _item("train", "high", "done"), _item("photo", "normal", "in-progress"), _item("tiny", "trace", "fyi")]),
    _item("weekly", "normal", "needs-you", title="Weekly report 周报 long", summary="A long summary that will not fit a small trace-sized card",
          due_at="2026-10-12T18:00:00+08:00"),
    _item("reading", "normal", "fyi", stale_after="2026-10-10T00:00:00+08:00"),
    _item("xss", "low", "fyi", summary="<img src=x onerror=alert(2)>"),
    *(_item(f"t{n}", "trace", "done" if n % 2 else "fyi") for n in range(6)),
]


def forget() -> None:
    """Every part kept in this process (card plans, boxes, tiles, foldings, durations)."""
    for kept in (cardtext._plan, layout._card_box, treemap._tiles, board_module._folded, timefmt._duration):
        kept.cache_clear()
    board_module._FOLDS.clear()


class Board:
    """A long-running Pinboard app (rendered-board cache off) over a store, with a clock to move."""

    def __init__(self, path) -> None:
        self.path = path
        self.moment = datetime(2026, 10, 9, 9, 0, tzinfo=ZoneInfo(ZONE))
        self.batches = 0
        self.client = self._client()

    def _client(self) -> TestClient:
        app = create_app(str(self.path), timezone=ZONE, clock=lambda: self.moment, board_cache=0)
        return TestClient(app, base_url="http://127.0.0.1")

    def page(self, query: str = "") -> str:
        response = self.client.get("/" + query)
        assert response.status_code == 200, response.text[:300]
        return response.text

    def afresh(self, query: str = "") -> str:
        """The same page from a new app, nothing kept from before."""
        forget()
        response = self._client().get("/" + query)
        assert response.status_code == 200
        return response.text

    @property
    def rendered(self) -> int:
        return self.client.app.pages.fragments.rendered

    def commit(self, *declarations) -> None:
        self.batches += 1
        answer = file_store(self.path).commit({"batch_id": f"b{self.batches}", "declarations": list(declarations)},
                                              actor="agent", now=self.moment.isoformat())
        assert answer.exit_code == 0, answer.document


@pytest.fixture
def pinboard(tmp_path):
    path = tmp_path / "store"
    assert file_store(path, budget=64).commit({"batch_id": "b0", "declarations": ITEMS}, actor="agent",
                                              now=NOW).exit_code == 0
    forget()
    return Board(path)


def test_an_unchanged_board_is_joined_from_kept_markup(pinboard):
    first = pinboard.page()
    rendered = pinboard.rendered
    assert rendered > 30  # every box and entry of the first page came from the templates
    assert pinboard.page() == first  # nothing changed: the same bytes …
    assert pinboard.rendered == rendered  # … and not one fragment rendered again
    assert pinboard.afresh() == first


def test_a_changed_item_is_drawn_anew_and_the_rest_reused(pinboard):
    before = pinboard.page()
    rendered = pinboard.rendered
    pinboard.commit({"id": "xss", "relation": "supersedes:xss", "weight": "low", "kind": "fyi",
                     "summary": "新的摘要：已经补交"})
    page = pinboard.page()
    assert "新的摘要：已经补交" in page and "onerror=alert(2)" not in page and page != before
    assert 0 < pinboard.rendered - rendered < rendered // 3  # the changed card and its entry, not the board
    assert page == pinboard.afresh()


@pytest.mark.parametrize("change", ["weight", "due", "child", "another-child", "withdraw", "kind"])
def test_every_input_of_a_card_reaches_the_page(pinboard, change):
    pinboard.page()
    pinboard.page("?min_weight=high")
    if change == "weight":  # a new share: the whole root layer's geometry moves
        pinboard.commit({"id": "reading", "relation": "supersedes:reading", "weight": "high", "kind": "fyi"})
    elif change == "due":
        pinboard.commit({"id": "t1", "relation": "supersedes:t1", "weight": "trace", "kind": "done",
                         "due_at": "2026-10-09T12:00:00+08:00"})
    elif change == "child":  # a childless card gets a children line, a new layer appears
        pinboard.commit({"id": "reading", "relation": "supersedes:reading", "weight": "normal", "kind": "fyi",
                         "summary": "第一章", "children": [_item("chapter", "low", "fyi")]})
    elif change == "another-child":  # only the children line of the parent's card and entry changes
        pinboard.commit({"id": "hotel", "relation": "supersedes:hotel", "weight": "critical", "kind": "needs-you",
                         "children": [{"id": "booking", "relation": "supersedes:booking", "weight": "normal",
                                       "kind": "needs-you"},
                                      {"id": "receipt", "relation": "supersedes:receipt", "weight": "trace",
                                       "kind": "done"},
                                      _item("deposit", "low", "in-progress")]})
    elif change == "withdraw":
        pinboard.commit({"id": "photo", "relation": "withdraw", "reason": "不需要了"})
    else:
        pinboard.commit({"id": "train", "relation": "supersedes:train", "weight": "high", "kind": "needs-you"})
    for query in ("", "?min_weight=high", "?kind=fyi&kind=done"):
        assert pinboard.page(query) == pinboard.afresh(query), (change, query)


def test_the_passing_of_time_reaches_the_cards(pinboard):
    before = pinboard.page()
    pinboard.moment += timedelta(days=2, minutes=7)  # visa and reading become overdue and stale
    page = pinboard.page()
    assert page != before and page.count("badge-overdue") > before.count("badge-overdue")
    assert page == pinboard.afresh()


def test_kept_markup_is_what_the_templates_render(pinboard):
    """The kept rectangles and lists equal the macros' own output for the same board."""
    pages = pinboard.client.app.pages
    state = file_store(pinboard.path).state()
    drawn = board(state, pinboard.moment.isoformat(), BoardQuery())
    parts = pages.templates.get_template("parts.html.j2").make_module(
        {"budget": state.budget, "card_href": "/item/", "details": frozenset()})
    for index, layer in enumerate(drawn.layers):
        for name, view in drawn.views.items():
            marked = drawn.details[name]
            direct = str(parts.rectangle(view.layers[index], name, marked))
            assert str(pages.fragments.rectangle(view.layers[index], name, marked, state.budget)) == direct
            assert str(pages.fragments.rectangle(view.layers[index], name, marked, state.budget)) == direct
        direct = "".join(str(parts.entry_line(entry)) for entry in layer["entries"])
        assert str(pages.fragments.entries(layer["key"], layer["entries"], state.budget)) == direct
    assert any(drawn.details.values())  # some cards are marked, so the marked path is compared too


def test_a_box_key_changes_with_every_field_of_the_box():
    box = Box("card", 1.0, 2.0, 30.0, 40.0, 3, id="visa", kind="fyi", weight="low", diff=None,
              lines=(("head", "visa · low"),), detail=(("head", "visa · low"),), badges=(), fits=True,
              children={"count": 1, "used": 2, "shown": True})
    other = {"role": "gone", "x": 9.0, "y": 9.0, "w": 9.0, "h": 9.0, "share": 9, "id": "x", "kind": "done",
             "weight": "high", "diff": "new", "merged_into": "y", "lines": (("title", "t"),),
             "detail": (("title", "t"),), "badges": ("new",), "fits": False, "ids": ("a",),
             "children": {"count": 1, "used": 2, "shown": False}}
    assert set(other) == {field.name for field in fields(Box)}
    for name, value in other.items():
        assert box_key(replace(box, **{name: value})) != box_key(box), name


def test_a_card_plan_follows_every_field_it_is_made_of():
    view = {"id": "visa", "weight": "low", "kind": "fyi", "share": 3, "title": "签证", "summary": "两步",
            "until_due": "2d", "until_stale": "5h", "age": "1d", "reason": "not on a card", "decision": None}
    other = {"id": "bank", "weight": "high", "kind": "done", "share": 4, "title": "流水", "summary": "一步",
             "until_due": "-2d", "until_stale": "-5h", "age": "3d", "decision": ("先缓解还是迁移？", "先缓解")}
    assert set(other) == set(CARD_FIELDS)
    card_text(view, FIELDS, 64, 300.0, 200.0, ("new",))
    for name, value in other.items():
        changed = {**view, name: value}
        fresh = cardtext._plan.__wrapped__(tuple(changed[f] for f in CARD_FIELDS), FIELDS, 64, 300.0, 200.0,
                                           ("new",), ())
        assert card_text(changed, FIELDS, 64, 300.0, 200.0, ("new",)) == fresh != card_text(
            view, FIELDS, 64, 300.0, 200.0, ("new",)), name


def test_a_board_asks_the_state_for_no_inactive_entries_yet_counts_them(pinboard):
    pinboard.commit({"id": "photo", "relation": "withdraw", "reason": "不需要了"},
                    {"id": "t0", "relation": "withdraw", "reason": "过期"})
    state = file_store(pinboard.path).state()
    document = state_document(state, NOW, not_active=0)
    assert document["not_active"] == [] and document["not_active_total"] == 2
    assert state_document(state, NOW, not_active=5)["not_active_total"] == 2
