"""The Pinboard's pure parts: filters, source links, reminder times, bind policy, CSRF, pages.

No server and no browser here (tests/integration/test_pinboard.py drives the
real page); these pin the rules the page relies on.
"""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

import pytest

from fold_host.pinboard.board import BoardQuery, board
from fold_host.pinboard.inputs import parse_form, resolve_until, text_field
from fold_host.pinboard.pages import changes, item_history, item_page, source_link
from fold_host.web.security import Csrf, is_loopback
from fold_host.web.server import resolve_bind
from fold_core.errors import UsageError
from fold_core.store import memory_store

NOW = "2026-10-09T08:00:00+08:00"


class Params(dict):
    """A query-parameter multi-dict: ``get`` the first value, ``getlist`` all of them."""

    def get(self, key, default=None):
        values = super().get(key)
        return values[0] if values else default

    def getlist(self, key):
        return list(super().get(key, ()))


def test_board_query_parses_the_filter_form():
    assert BoardQuery.parse(Params()) == BoardQuery()
    query = BoardQuery.parse(Params(min_weight=["high"], kind=["fyi", "needs-you"], item=["trip"]))
    assert query == BoardQuery("high", ("needs-you", "fyi"), "trip") and query.filtered
    # Every kind ticked is the same as no kind filter.
    assert BoardQuery.parse(Params(kind=["needs-you", "in-progress", "done", "fyi"])).kinds is None
    for bad in (Params(min_weight=["heavy"]), Params(kind=["urgent"]), Params(item=["../etc"]),
                Params(item=["A" * 65])):
        with pytest.raises(ValueError):
            BoardQuery.parse(bad)


@pytest.mark.parametrize("ref,href", [
    ("https://example.org/a?b=1", "https://example.org/a?b=1"),
    ("http://example.org", "http://example.org"),
    ("javascript:alert(1)", None),
    ("JavaScript:alert(1)", None),
    ("data:text/html,<b>x</b>", None),
    ("event:e-17", None),
    ("https://exa mple.org", None),
    ("https:///no-host", None),
    ("//example.org/x", None),
    ("mailto:me@example.org", None),
])
def test_only_plain_web_addresses_become_links(ref, href):
    assert source_link(ref) == href


def test_reminder_times_are_instants_in_the_host_time_zone():
    now = datetime(2026, 10, 9, 20, 30, tzinfo=ZoneInfo("Asia/Shanghai"))
    zone = "Asia/Shanghai"
    assert resolve_until("1h", "", now, zone) == "2026-10-09T21:30:00+08:00"
    assert resolve_until("evening", "", now, zone) == "2026-10-10T18:00:00+08:00"  # 18:00 has passed today
    assert resolve_until("tomorrow", "", now, zone) == "2026-10-10T09:00:00+08:00"
    assert resolve_until("week", "", now, zone) == "2026-10-16T09:00:00+08:00"
    assert resolve_until("custom", "2026-10-12T07:15", now, zone) == "2026-10-12T07:15:00+08:00"
    # The picker is read in the host's zone, whatever the server's clock zone.
    utc_now = now.astimezone(ZoneInfo("UTC"))
    assert resolve_until("custom", "2026-10-12T07:15", utc_now, zone) == "2026-10-12T07:15:00+08:00"
    # The picked text is read like `foldctl feedback --until` (fold_host.timephrase): a phrase too, and a
    # picked time that a DST change skips is the instant one hour later.
    assert resolve_until("custom", "明天 9:00", now, zone) == "2026-10-10T09:00:00+08:00"
    berlin_now = datetime.fromisoformat("2026-03-28T23:50:00+01:00")
    assert resolve_until("custom", "2026-03-29T02:30", berlin_now, "Europe/Berlin") == "2026-03-29T03:30:00+02:00"
    for choice, picked in (("custom", ""), ("custom", "whenever"), ("custom", "2026-10-09T08:00"), ("soon", "")):
        with pytest.raises(ValueError):
            resolve_until(choice, picked, now, zone)


def test_form_fields_are_capped_before_anything_is_saved():
    fields = parse_form("text=%E7%AD%BE%0D%0Aline+two&csrf=abc&text=second".encode())
    assert fields == {"text": "签\r\nline two", "csrf": "abc"}  # the first value of a repeated name
    assert text_field(fields, "text") == "签\nline two"
    assert text_field({"text": " \n "}, "text") is None
    with pytest.raises(ValueError, match="at most 2000"):
        text_field({"text": "x" * 2001}, "text")
    with pytest.raises(ValueError):
        parse_form(b"text=\xff\xfe")


def test_a_non_loopback_bind_needs_a_token(monkeypatch):
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("[::1]") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.168.1.5") and not is_loopback("example.org")
    assert resolve_bind("127.0.0.1", 8765, None).token is None
    with pytest.raises(UsageError, match="refusing to listen on 0.0.0.0"):
        resolve_bind("0.0.0.0", 8765, None)
    monkeypatch.delenv("FOLD_TEST_PINBOARD_TOKEN", raising=False)
    with pytest.raises(UsageError, match="not set"):
        resolve_bind("0.0.0.0", 8765, "FOLD_TEST_PINBOARD_TOKEN")
    monkeypatch.setenv("FOLD_TEST_PINBOARD_TOKEN", "short")
    with pytest.raises(UsageError, match="at least 16"):
        resolve_bind("0.0.0.0", 8765, "FOLD_TEST_PINBOARD_TOKEN")
    monkeypatch.setenv("FOLD_TEST_PINBOARD_TOKEN", "a-long-enough-token-value")
    bind = resolve_bind("0.0.0.0", 8765, "FOLD_TEST_PINBOARD_TOKEN")
    assert bind.token == "a-long-enough-token-value" and not bind.loopback
    # A token set for a loopback bind is checked too.
    assert resolve_bind("127.0.0.1", 0, "FOLD_TEST_PINBOARD_TOKEN").token == "a-long-enough-token-value"


def test_csrf_tokens_are_bound_to_their_cookie_and_the_server():
    csrf, other = Csrf(), Csrf()
    nonce = csrf.new_nonce()
    assert csrf.valid(nonce, csrf.token(nonce))
    assert not csrf.valid(nonce, other.token(nonce))  # another server's secret
    assert not csrf.valid(csrf.new_nonce(), csrf.token(nonce))  # another browser's cookie
    assert not csrf.valid(None, csrf.token(nonce)) and not csrf.valid(nonce, None) and not csrf.valid(nonce, "")


def _store():
    store = memory_store(budget=64)
    declarations = [
        {"id": "visa", "title": "签证", "summary": "两步", "weight": "critical", "kind": "needs-you",
         "children": [{"id": "bank", "title": "流水", "weight": "high", "kind": "needs-you"}]},
        {"id": "old", "title": "旧的", "weight": "low", "kind": "fyi"},
    ]
    assert store.commit({"batch_id": "b1", "declarations": declarations}, actor="agent", now=NOW).exit_code == 0
    assert store.annotate(item="visa", text="明天去银行", author="user", now=NOW).exit_code == 0
    batch = {"batch_id": "b2", "acknowledges": ["ann-1"], "declarations": [
        {"id": "visa", "relation": "supersedes:visa", "title": "签证材料", "weight": "critical",
         "kind": "needs-you", "reason": "标题更清楚"},
        {"id": "old", "relation": "withdraw", "reason": "过时"}]}
    assert store.commit(batch, actor="agent", now="2026-10-09T09:00:00+08:00").exit_code == 0
    return store


def test_item_page_and_history_from_the_state_and_records():
    store = _store()
    state = store.state()
    from fold_host.pinboard.board import CANVASES

    page = item_page(state, "2026-10-10T08:00:00+08:00", "visa", CANVASES)
    assert page["view"]["title"] == "签证材料" and page["view"]["until_due"] is None
    assert [(note["id"], note["status"], note["acknowledged_revision"]) for note in page["view"]["annotations"]] \
        == [("ann-1", "acknowledged", 2)]
    assert {name: [box.id for box in view.layers[0].boxes if box.role == "card"]
            for name, view in page["children"].items()} == {"wide": ["bank"], "narrow": ["bank"]}
    gone = item_page(state, NOW, "old", CANVASES)
    assert gone["status"] == "withdrawn" and gone["children"] is None and gone["view"]["reason"] == "过时"
    assert item_page(state, NOW, "nothing", CANVASES) is None
    records = store.history(item="visa").document["records"]
    history, total = item_history(records, "visa")
    assert total == 3
    assert [(entry["event_seq"], entry["type"], entry["op"]) for entry in history] == [
        (3, "commit", "updated"), (2, "annotation", None), (1, "commit", "created")]
    assert history[0]["fields"] == ["title"] and history[0]["reason"] == "标题更清楚"
    assert history[0]["acks"] == ["ann-1"]


def test_changes_describe_records_newest_first():
    store = _store()
    listed = changes(store.history(since=1).document["records"])
    assert listed["count"] == 2 and listed["totals"]["updated"] == 1 and listed["totals"]["withdrawn"] == 1
    assert listed["totals"]["annotation"] == 1 and listed["totals"]["acknowledged"] == 1
    newest = listed["records"][0]
    assert newest["event_seq"] == 3
    assert [(entry["op"], entry["id"], entry["title"]) for entry in newest["entries"]] == [
        ("updated", "visa", "签证材料"), ("withdrawn", "old", "旧的")]
    assert changes(store.history(since=0).document["records"], limit=1)["shown"] == 1


def test_board_positions_depend_on_the_state_not_on_the_clock():
    state = _store().state()
    early = board(state, "2026-10-09T10:00:00+08:00", BoardQuery())
    late = board(state, "2026-10-12T10:00:00+08:00", BoardQuery())
    geometry = lambda drawn: [(box.id, box.x, box.y, box.w, box.h)  # noqa: E731
                              for view in drawn.views.values() for layer in view.layers for box in layer.boxes]
    assert geometry(early) == geometry(late)
    assert [layer["key"] for layer in early.layers] == ["root", "item-visa"]
