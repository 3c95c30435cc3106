"""The Pinboard through a real Chromium (contract §12, §13).

One uvicorn server (in a thread of this process, 127.0.0.1, port 0) over a
real file store serves the whole module; Chromium (Debian's, through
Playwright) opens its pages as a user would. Geometry is measured from the
DOM of the visible canvas against shares taken from the state document;
inputs are checked in the store (``foldctl state`` in a subprocess) and in
host.db; the screenshots are written to ``$FOLD_TEST_OUT`` (else the pytest
temporary directory) and checked for overlap.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import httpx
import pytest

from conftest import missing_component, require_component
from fold_host.pinboard.app import create_app
from fold_host.web.server import Bind, ServerThread
from fold_core.store.file import file_store
from tests.support.ports import free_port
from tests.support.states import views_and_members

NOW = "2026-10-09T08:00:00+08:00"
ZONE = "Asia/Shanghai"
CLOCK = datetime(2026, 10, 11, 8, 0, tzinfo=ZoneInfo(ZONE))
TOLERANCE = 0.02
CHROMIUM = os.environ.get("FOLD_CHROMIUM") or "/usr/bin/chromium"
XSS_TITLE = "<script>alert()</script>"  # 24 code points
XSS_SUMMARY = "<img src=x onerror=alert(2)>"
JS_URL = "javascript:alert(3)"


def item(item_id, weight, kind="fyi", title=None, **extra):
    return {"id": item_id, "title": title or f"{item_id} 标题", "weight": weight, "kind": kind, **extra}


NESTED = [
    item("visa", "critical", "needs-you", title="签证材料缺银行流水", summary="12日截止，带护照原件",
         due_at="2026-10-10T00:00:00+08:00", sources=[{"channel": "email", "ref": "https://mail.example.org/m/17",
                                                       "quote": "请在12日前补交流水"}]),
    item("trip", "high", "in-progress", title="出差安排", summary="三个子项", children=[
        item("hotel", "critical", "needs-you", title="订酒店", summary="两步", children=[
            item("booking", "normal", "needs-you"), item("receipt", "trace", "done"),
            item("pay", "low", "in-progress")]),
        item("train", "high", "done"),
        item("photo", "normal", "in-progress"),
        item("note", "low", "fyi"),
        item("tiny", "trace", "fyi"),
    ]),
    item("weekly", "normal", "needs-you", title="Weekly report", due_at="2026-10-12T18:00:00+08:00"),
    item("reading", "normal", "fyi", stale_after="2026-10-10T00:00:00+08:00"),
    item("xss", "low", "fyi", title=XSS_TITLE, summary=XSS_SUMMARY,
         sources=[{"channel": "web", "ref": JS_URL}, {"channel": "web", "ref": "data:text/html,<b>x</b>"}]),
    item("t1", "trace", "done"),
    item("t2", "trace", "fyi"),
    item("m1", "trace", "fyi"),
    item("m2", "trace", "fyi"),
]

# Every section's visible canvas: its frame and boxes (this test's own measurement).
MEASURE = """() => [...document.querySelectorAll('section.layer')].map(section => {
  const canvas = [...section.querySelectorAll('.canvas')].find(c => getComputedStyle(c).display !== 'none');
  const box = el => { const r = el.getBoundingClientRect();
    return {role: el.dataset.role, id: el.dataset.id || null, x: r.x + scrollX, y: r.y + scrollY,
            w: r.width, h: r.height}; };
  return {key: section.dataset.layer, canvas: canvas.dataset.canvas,
          frame: box(canvas.querySelector('[data-role=layer]')),
          boxes: [...canvas.querySelectorAll('[data-role]')].filter(e => e.dataset.role !== 'layer').map(box)};
})"""


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("pinboard") / "store"
    answer = file_store(path, budget=64).commit({"batch_id": "b1", "declarations": NESTED}, actor="agent", now=NOW)
    assert answer.exit_code == 0, answer.document
    return path


@pytest.fixture(scope="module")
def server(store):
    app = create_app(str(store), timezone=ZONE, clock=lambda: CLOCK)
    with ServerThread(app, Bind("127.0.0.1", 0, None)) as running:
        yield running


@pytest.fixture(scope="module")
def chromium():
    require_component(CHROMIUM, "chromium")
    fonts = subprocess.run(["fc-list", ":family=Noto Sans CJK SC"], capture_output=True, text=True).stdout
    if not fonts.strip():
        missing_component("the Noto Sans CJK font", "fonts-noto-cjk")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True,
                                             args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"])
        yield browser
        browser.close()


class Tab:
    """A page in its own context that records every request and any dialog or page error."""

    def __init__(self, context) -> None:
        self.requests: list[str] = []
        self.dialogs: list[str] = []
        self.errors: list[str] = []
        self.page = context.new_page()
        self.page.on("request", lambda request: self.requests.append(request.url))
        self.page.on("dialog", lambda dialog: (self.dialogs.append(dialog.message), dialog.dismiss()))
        self.page.on("pageerror", lambda error: self.errors.append(str(error)))

    def open(self, url: str):
        response = self.page.goto(url, wait_until="load")
        self.page.evaluate("document.fonts.ready.then(() => true)")
        return response


@pytest.fixture
def context(chromium):
    created = []

    def make(width=1280, height=800):
        context = chromium.new_context(viewport={"width": width, "height": height}, device_scale_factor=1)
        created.append(context)
        return context

    yield make
    for context in created:
        context.close()


@pytest.fixture(scope="module")
def shots(tmp_path_factory) -> Path:
    given = os.environ.get("FOLD_TEST_OUT")
    out = Path(given) / "pinboard" if given else tmp_path_factory.mktemp("pinboard-shots")
    out.mkdir(parents=True, exist_ok=True)
    return out


def state_views(store: Path) -> tuple[dict, dict]:
    """From the state document (not from the layout): every active item's view, and the members of each layer."""
    return views_and_members(file_store(store).state_document(now=CLOCK.isoformat()).document)


def check_geometry(layers: list[dict], store: Path, omitted: set[str] = frozenset()) -> set[str]:
    """Every card's, the omitted box's and the free boxes' areas against share/budget; the card ids drawn."""
    views, members = state_views(store)
    drawn = set()
    for layer in layers:
        parent = None if layer["key"] == "root" else layer["key"].removeprefix("item-")
        frame = layer["frame"]
        area = frame["w"] * frame["h"]
        assert area > 0
        cards = {box["id"]: box for box in layer["boxes"] if box["role"] == "card"}
        assert sorted(cards) == sorted(i for i in members[parent] if i not in omitted)
        for item_id, box in cards.items():
            expected = views[item_id]["share"] / 64
            assert abs(box["w"] * box["h"] / area - expected) <= TOLERANCE * expected, (item_id, box, expected)
            assert frame["x"] - 0.5 <= box["x"] and box["x"] + box["w"] <= frame["x"] + frame["w"] + 0.5
        hidden = sum(views[i]["share"] for i in members[parent] if i in omitted)
        free = 64 - sum(views[i]["share"] for i in members[parent])
        for role, share in (("omitted", hidden), ("free", free)):
            measured = sum(box["w"] * box["h"] for box in layer["boxes"] if box["role"] == role) / area
            assert abs(measured - share / 64) <= TOLERANCE * max(share / 64, 1 / 64), (role, measured, share)
        drawn.update(cards)
    return drawn


def overlapping(rects: list[dict]) -> list[tuple]:
    found = []
    for i, a in enumerate(rects):
        for b in rects[i + 1:]:
            if (min(a["x"] + a["w"], b["x"] + b["w"]) - max(a["x"], b["x"]) > 0.5
                    and min(a["y"] + a["h"], b["y"] + b["h"]) - max(a["y"], b["y"]) > 0.5):
                found.append((a.get("id"), b.get("id")))
    return found


@pytest.mark.parametrize("width,height,canvas", [(1280, 800, "wide"), (390, 844, "narrow")])
def test_board_shows_every_active_item_at_its_share(server, store, context, shots, width, height, canvas):
    tab = Tab(context(width, height))
    assert tab.open(server.url).status == 200
    layers = tab.page.evaluate(MEASURE)
    assert {layer["canvas"] for layer in layers} == {canvas}
    assert [layer["key"] for layer in layers] == ["root", "item-trip", "item-hotel"]
    views, _ = state_views(store)
    assert check_geometry(layers, store) == set(views)  # every active item, nested ones included
    for layer in layers:
        assert overlapping(layer["boxes"]) == []
    # Nothing spills sideways; the panel does not cover the board.
    page_width = tab.page.evaluate("document.documentElement.scrollWidth")
    assert page_width <= width
    if canvas == "wide":
        board = tab.page.locator(".board").bounding_box()
        panel = tab.page.locator("aside.panel").bounding_box()
        assert board["x"] + board["width"] <= panel["x"]
    # Card text is the tool's size (never scaled below 10 px) and the fonts are the CJK ones.
    sizes = tab.page.evaluate("""() => [...document.querySelectorAll('.canvas')]
        .filter(c => getComputedStyle(c).display !== 'none')
        .flatMap(c => [...c.querySelectorAll('.line-title')])
        .map(el => el.getBoundingClientRect().height)""")
    assert sizes and min(sizes) >= 10
    families = tab.page.evaluate("[...document.fonts].filter(f => f.status === 'loaded').map(f => f.family)")
    assert any("FoldSans" in family for family in families)
    tab.page.screenshot(path=str(shots / f"board-{width}x{height}.png"))
    tab.page.screenshot(path=str(shots / f"board-{width}x{height}-full.png"), full_page=True)
    assert all(url.startswith(server.url) for url in tab.requests), tab.requests


def test_marks_come_from_the_time_projection(server, context):
    tab = Tab(context())
    tab.open(server.url)
    card = lambda item_id: tab.page.locator(f".canvas-wide [data-text][data-id={item_id}]")  # noqa: E731
    assert "OVERDUE" in card("visa").inner_text()
    assert "STALE" in card("reading").inner_text()
    assert "due in 1d10h" in card("weekly").inner_text()
    assert "OVERDUE" not in card("weekly").inner_text()
    # Kind by colour: the fill of a needs-you card is the legend's colour.
    fill = tab.page.evaluate("""() => getComputedStyle(
        document.querySelector('.canvas-wide rect.fill[data-id=visa]')).fill""")
    assert fill == "rgb(246, 164, 156)"


def test_filters_leave_one_not_shown_area_and_positions_stay(server, store, context):
    tab = Tab(context())
    tab.open(server.url + "?min_weight=normal&kind=needs-you&kind=in-progress&kind=done")
    layers = tab.page.evaluate(MEASURE)
    views, _ = state_views(store)
    omitted = {i for i, view in views.items()
               if view["weight"] in ("low", "trace") or view["kind"] == "fyi"}
    # Children of a filtered-out parent are not drawn: only the layers of shown parents remain.
    check_geometry(layers, store, omitted)
    assert "not shown (filtered)" in tab.page.inner_text("section#layer-root")
    # The form says what is chosen; a reload draws every box where it was.
    assert tab.page.locator("select[name=min_weight]").input_value() == "normal"
    assert not tab.page.locator("input[name=kind][value=fyi]").is_checked()
    tab.page.reload()
    assert tab.page.evaluate(MEASURE) == layers
    tab.open(server.url + "?min_weight=heavy")
    assert "min_weight must be one of" in tab.page.inner_text("main")


def test_a_parent_card_opens_its_children_as_their_own_rectangle(server, context):
    tab = Tab(context())
    tab.open(server.url)
    tab.page.click(".canvas-wide a.card-link[href='/item/trip']")
    assert tab.page.url == server.url + "item/trip"
    assert tab.page.locator("section.children .canvas-wide [data-role=card]").count() == 5
    tab.page.click("text=Open the children on the board")
    layers = tab.page.evaluate(MEASURE)
    assert [layer["key"] for layer in layers] == ["item-trip", "item-hotel"]


def test_item_page_shows_fields_sources_and_history(server, context):
    tab = Tab(context())
    tab.open(server.url + "item/visa")
    text = tab.page.inner_text("main")
    for expected in ("签证材料缺银行流水", "12日截止，带护照原件", "critical", "needs-you", "24/64", "rank 1",
                     "yesterday 00:00", "OVERDUE", "请在12日前补交流水", "History (1 record)", "created"):
        assert expected in text
    link = tab.page.locator("a.source-link")
    assert link.get_attribute("href") == "https://mail.example.org/m/17"
    assert link.inner_text() == "https://mail.example.org/m/17"
    assert link.get_attribute("rel") == "noopener noreferrer nofollow"
    assert all(url.startswith(server.url) for url in tab.requests), tab.requests


def test_item_text_is_only_ever_text(server, context):
    tab = Tab(context())
    for path in ("", "item/xss"):
        response = tab.open(server.url + path)
        html = response.text()
        assert "<script>" not in html and "<img src=x" not in html
        assert "style=" not in html  # geometry and colours come from the stylesheet (CSP blocks inline style)
        csp = response.headers["content-security-policy"]
        assert "default-src 'self'" in csp and "script-src 'none'" in csp
    assert tab.page.locator("h1.item-title").inner_text() == XSS_TITLE
    assert tab.page.locator("p.item-summary").inner_text() == XSS_SUMMARY
    assert tab.page.locator("main img, main script").count() == 0
    # javascript: and data: references are text, never a link.
    assert tab.page.locator("a[href^='javascript'], a[href^='data']").count() == 0
    assert JS_URL in tab.page.locator("code.source-ref").all_inner_texts()
    tab.open(server.url)
    assert tab.page.locator(f".canvas-wide [data-text][data-id=xss] .line-title").inner_text() == XSS_TITLE
    assert tab.dialogs == [] and tab.errors == []
    assert all(url.startswith(server.url) for url in tab.requests), tab.requests


def run_foldctl(*args: str, store: Path) -> tuple[int, dict]:
    done = subprocess.run([sys.executable, "-m", "fold_host", "--store", str(store), *args],
                          capture_output=True, text=True, timeout=60)
    return done.returncode, json.loads(done.stdout)


def test_an_annotation_from_the_form_is_pending_and_a_second_tab_sees_it(server, store, context):
    shared = context()
    first, second = Tab(shared), Tab(shared)
    second.open(server.url + "item/weekly")
    assert second.page.locator("li.note").count() == 0
    before = file_store(store).state().event_seq
    first.open(server.url + "item/weekly")
    text = "周报里加上预算表（第3页）\n<b>不是粗体</b>"
    first.page.fill("#annotate-text", text)
    first.page.click("#annotate button[type=submit]")
    notice = first.page.locator("#notice").inner_text()
    assert "Your note is saved (ann-1)" in notice and "the next time it looks" in notice
    code, document = run_foldctl("state", "--now", CLOCK.isoformat(), store=store)
    assert code == 0
    pending = [(note["item"], note["text"]) for note in document["pending_annotations"]]
    assert ("weekly", text) in pending
    second.page.reload()
    note = second.page.locator("li.note[data-note=ann-1]")
    assert note.locator(".note-text").inner_text() == text
    assert "saved, waiting for the editor" in note.inner_text()
    # The server wrote one annotation record and nothing else: never an item field.
    records = file_store(store).history(since=before).document["records"]
    assert [record["type"] for record in records] == ["annotation"]
    # Reloading the page after the POST does not send it again (post/redirect/get).
    first.page.reload()
    assert file_store(store).state().event_seq == before + 1


def test_a_refused_annotation_says_why_and_keeps_the_text(server, context):
    tab = Tab(context())
    tab.open(server.url + "item/reading")
    tab.page.fill("#annotate-text", "   ")
    tab.page.evaluate("document.querySelector('#annotate-text').removeAttribute('required')")
    tab.page.click("#annotate button[type=submit]")
    assert "write something to save" in tab.page.locator("#annotate .error").inner_text()


def test_a_commit_from_another_process_shows_after_reload(server, store, context, tmp_path):
    tab = Tab(context())
    tab.open(server.url)
    assert tab.page.locator(".canvas-wide [data-id=extra]").count() == 0
    batch = tmp_path / "batch.json"
    batch.write_text(json.dumps({"batch_id": "b-extra", "declarations": [item("extra", "trace", "fyi")]}))
    code, receipt = run_foldctl("commit", "--actor", "agent", "--now", "2026-10-10T08:00:00+08:00", str(batch),
                                store=store)
    assert code == 0, receipt
    tab.page.reload()
    assert tab.page.locator(".canvas-wide rect.fill[data-id=extra]").count() == 1


def test_changes_since_the_last_visit_come_from_the_records(server, store, context):
    tab = Tab(context())
    tab.open(server.url + "changes")
    seen = file_store(store).state().event_seq
    assert f"remembers event {seen}" in tab.page.text_content("main")  # behind a details toggle
    answer = file_store(store).commit({"batch_id": "b-changes", "declarations": [
        item("fresh", "trace", "fyi", title="新来的"),
        {"id": "t1", "relation": "supersedes:t1", "weight": "trace", "kind": "done", "title": "t1 改了"},
        {"id": "t2", "relation": "withdraw", "reason": "不需要了"},
        {"id": "merged-notes", "relation": "merges:[m1, m2]", "title": "合并的笔记", "weight": "low",
         "kind": "fyi"},
    ]}, actor="agent", now="2026-10-10T09:00:00+08:00")
    assert answer.exit_code == 0, answer.document
    tab.open(server.url)
    assert "1 new record since your last visit" in tab.page.inner_text("aside.panel")
    tab.page.click("text=1 new record since your last visit")
    main = tab.page.inner_text("main")
    assert "At yesterday 09:00:" in main  # the record's time, local and in words
    assert "added: 2 · changed: 1 · took down: 1 · merged away: 2" in main
    assert "b-changes" not in main  # the batch id is behind the toggle
    tab.page.click("li.record details summary")
    assert "b-changes" in tab.page.inner_text("li.record details")
    ops = {(li.get_attribute("class"), li.locator("a").inner_text())
           for li in tab.page.locator("li.record li").all()}
    assert ("op-created", "新来的") in ops and ("op-updated", "t1 改了") in ops
    assert ("op-withdrawn", "t2 标题") in ops and ("op-created", "合并的笔记") in ops
    assert ("op-merged", "m1 标题") in ops and ("op-merged", "m2 标题") in ops
    # The visit is remembered: the next look shows nothing new.
    tab.open(server.url + "changes")
    assert "Nothing happened since." in tab.page.inner_text("main")
    tab.open(server.url + "item/t2")  # a withdrawn item keeps its page and history
    assert "withdrawn" in tab.page.inner_text(".status-note")


def test_forms_without_the_csrf_token_are_refused(server, store):
    before = file_store(store).state().event_seq
    with httpx.Client(base_url=server.url) as client:
        page = client.get("/item/visa")
        token = page.text.split('name="csrf" value="', 1)[1].split('"', 1)[0]
        refused = [
            client.post("/item/visa/annotate", data={"text": "no token"}),
            client.post("/item/visa/annotate", data={"text": "wrong token", "csrf": "0" * 64}),
            client.post("/item/visa/annotate", data={"text": "other origin", "csrf": token},
                        headers={"origin": "http://evil.example"}),
            client.post("/item/visa/feedback", data={"meaning": "ack"}),
        ]
        assert [response.status_code for response in refused] == [403, 403, 403, 403]
        assert "nothing was saved" in refused[0].text
        # Another client (no cookie) with a token copied from the page: refused too.
        with httpx.Client(base_url=server.url) as stranger:
            assert stranger.post("/item/visa/annotate", data={"text": "copied", "csrf": token}).status_code == 403
        assert file_store(store).state().event_seq == before
        accepted = client.post("/item/visa/annotate", data={"text": "with the token", "csrf": token})
        assert accepted.status_code == 303
        too_big = client.post("/item/visa/annotate", content=b"text=" + b"x" * 40000,
                              headers={"content-type": "application/x-www-form-urlencoded"})
        assert too_big.status_code == 413
    assert file_store(store).state().event_seq == before + 1


def test_only_loopback_host_names_are_answered(server):
    assert httpx.get(server.url, headers={"host": "evil.example"}).status_code == 421
    assert httpx.get(server.url.replace("127.0.0.1", "localhost")).status_code == 200
    assert httpx.get(server.url, headers={"host": "127.0.0.2"}).status_code == 200  # bound there: its own name
    assert httpx.get(server.url, headers={"host": "127.0.0.1.evil.example"}).status_code == 421


def test_with_a_token_every_request_needs_it(store, context):
    secret = "a-long-test-token-0123456789"
    app = create_app(str(store), token=secret, timezone=ZONE, clock=lambda: CLOCK)
    with ServerThread(app, Bind("127.0.0.1", 0, secret)) as guarded:
        for path in ("", "item/visa", "changes", "nowhere"):
            response = httpx.get(guarded.url + path)
            assert response.status_code == 401, path
            assert 'name="token"' in response.text and "签证" not in response.text
        assert httpx.post(guarded.url + "item/visa/annotate", data={"text": "x"}).status_code == 401
        wrong = httpx.get(guarded.url, headers={"authorization": "Bearer not-the-token"})
        assert wrong.status_code == 401
        right = httpx.get(guarded.url + "item/visa", headers={"authorization": f"Bearer {secret}"})
        assert right.status_code == 200 and "签证材料缺银行流水" in right.text
        # The login form sets an HttpOnly cookie; the browser then sees the board.
        tab = Tab(context())
        assert tab.open(guarded.url).status == 401
        # Each submit navigates: wait for the answer's page, not the form still on screen.
        tab.page.fill("#token", "wrong-token-wrong-token")
        with tab.page.expect_navigation():
            tab.page.click("form button[type=submit]")
        assert "That is not the token." in tab.page.inner_text("main")
        tab.page.fill("#token", secret)
        with tab.page.expect_navigation():
            tab.page.click("form button[type=submit]")
        assert tab.page.locator("section#layer-root").count() == 1
        cookies = {cookie["name"]: cookie for cookie in tab.page.context.cookies()}
        assert cookies["fold_auth"]["httpOnly"] and cookies["fold_auth"]["value"] != secret
        assert all(url.startswith(guarded.url) for url in tab.requests), tab.requests


def test_serve_refuses_a_non_loopback_bind_without_a_token(store, tmp_path):
    env = {**os.environ, "FOLD_CONFIG": str(tmp_path / "none.toml")}
    (tmp_path / "none.toml").write_text("")
    done = subprocess.run([sys.executable, "-m", "fold_host", "serve", "--store", str(store), "--host", "0.0.0.0",
                           "--port", "0"], capture_output=True, text=True, timeout=60, env=env)
    assert done.returncode == 2
    assert "refusing to listen on 0.0.0.0" in done.stderr and "token_env" in done.stderr
    assert json.loads(done.stdout)["ok"] is False


def test_foldctl_serve_serves_until_terminated(store, tmp_path):
    import signal

    config = tmp_path / "plugins.toml"
    config.write_text('[pinboard]\nhost = "127.0.0.1"\n')
    env = {**os.environ, "FOLD_CONFIG": str(config)}
    process = subprocess.Popen([sys.executable, "-m", "fold_host", "serve", "--store", str(store), "--port", "0"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        line = process.stderr.readline()
        assert "the Pinboard of" in line, line
        url = line.split(" at ", 1)[1].split(";", 1)[0].strip()
        response = httpx.get(url, timeout=30)
        assert response.status_code == 200 and "Root layer" in response.text
    finally:
        process.send_signal(signal.SIGTERM)
        out, _ = process.communicate(timeout=30)
    assert process.returncode == 0
    assert json.loads(out) == {"ok": True, "url": url, "store": str(store), "stopped_by": "SIGTERM"}


def inbox(store: Path) -> list[dict]:
    code, document = run_foldctl("inbox", "--source", "feedback", store=store)
    assert code == 0, document
    return document["observations"]


def test_feedback_and_a_snooze_reach_the_host_database(server, store, context):
    before = file_store(store).state().event_seq
    tab = Tab(context())
    tab.open(server.url + "item/visa")
    tab.page.click("#feedback-ack button[type=submit]")
    assert "Noted: you have seen it. The editor reads it the next time" in tab.page.locator("#notice").inner_text()
    tab.page.check("#feedback-say input[value=act]")
    tab.page.fill("#feedback-value", "流水已打印")
    tab.page.click("#feedback-say button[type=submit]")
    assert "Noted: you have done it" in tab.page.locator("#notice").inner_text()
    tab.page.check("#feedback-snooze input[value=custom]")
    tab.page.fill("#until-at", "2026-10-12T07:30")
    tab.page.fill("#snooze-value", "等银行开门")
    tab.page.click("#feedback-snooze button[type=submit]")
    notice = tab.page.locator("#notice").inner_text()
    assert "You will be reminded tomorrow 07:30" in notice
    with sqlite3.connect(store / "host.db") as db:
        reminders = db.execute("SELECT target, due_at, fired_at FROM reminders").fetchall()
    assert reminders == [("visa", "2026-10-12T07:30:00+08:00", None)]
    titles = [observation["title"] for observation in inbox(store)]
    assert sorted(titles) == ["ack: visa", "act: visa", "snooze: visa"]
    # Feedback never touches the store: the editor decides in its next cycle.
    assert file_store(store).state().event_seq == before
    # A reminder in the past, or feedback on an unknown item, is refused with the reason.
    tab.page.check("#feedback-snooze input[value=custom]")
    tab.page.fill("#until-at", "2026-10-01T07:30")
    tab.page.evaluate("document.querySelector('#until-at').removeAttribute('min')")
    tab.page.click("#feedback-snooze button[type=submit]")
    assert "in the past" in tab.page.locator("#feedback .error").inner_text()
    with sqlite3.connect(store / "host.db") as db:
        assert db.execute("SELECT count(*) FROM reminders").fetchone() == (1,)


def test_foldctl_run_serve_starts_the_daemon_and_the_pinboard_in_one_process(store, tmp_path):
    import signal

    config = tmp_path / "plugins.toml"
    config.write_text(f'[store]\npath = "{store}"\n\n[pinboard]\nport = {free_port()}\n')
    process = subprocess.Popen([sys.executable, "-m", "fold_host", "run", "--serve", "--config", str(config)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        for line in process.stderr:
            if "the Pinboard at" in line:
                break
        url = line.split("the Pinboard at", 1)[1].strip()
        response = httpx.get(url + "item/visa", timeout=30)
        assert response.status_code == 200 and "签证材料缺银行流水" in response.text
    finally:
        process.send_signal(signal.SIGTERM)
        out, _ = process.communicate(timeout=60)
    assert process.returncode == 0
    document = json.loads(out)
    assert document["ok"] is True and document["pinboard"] == url


def test_the_item_page_reads_the_records_of_the_last_events_unless_asked_for_all(server, store, monkeypatch):
    from fold_host.pinboard import routes as pinboard_routes

    answer = file_store(store).annotate(item="visa", text="最近的一条", author="user", now=NOW)
    last = answer.document["event_seq"]
    monkeypatch.setattr(pinboard_routes, "HISTORY_WINDOW", 1)
    recent = httpx.get(server.url + "item/visa").text
    assert f"(1 record after event {last - 1})" in recent and "?history=all#history" in recent
    assert "最近的一条" in recent and "<strong>added</strong>" not in recent
    whole = httpx.get(server.url + "item/visa?history=all").text
    assert "after event" not in whole and "<strong>added</strong>" in whole
