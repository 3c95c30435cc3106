"""Sources open: an item's ``event:<id>`` source leads to its observation's page (contract §12), in Chromium.

A real store and host.db in a temporary directory, the Pinboard in a thread,
Debian's Chromium through Playwright. One observation is ordinary mail; one
is hostile from its id to its meta (markup, ``javascript:`` URLs): the page
shows it as text, makes no link of it, runs nothing and fetches nothing.
"""

from __future__ import annotations

import os
from datetime import datetime
from urllib.parse import quote
from zoneinfo import ZoneInfo

import pytest

from conftest import require_component
from fold_core.observation import Observation
from fold_core.store.file import file_store
from fold_host.hostdb import open_host_db
from fold_host.pinboard.app import create_app
from fold_host.web.server import Bind, ServerThread

NOW = "2026-10-09T08:00:00+08:00"
CLOCK = datetime(2026, 10, 9, 9, 0, tzinfo=ZoneInfo("Asia/Shanghai"))
CHROMIUM = os.environ.get("FOLD_CHROMIUM") or "/usr/bin/chromium"
EVIL_ID = 'evil:<b>x</b>/../?q=1#frag "quoted"'
EVIL_TITLE = "<script>alert(1)</script>"
EVIL_TEXT = '<img src=x onerror=alert(2)>\nline two <a href="javascript:alert(3)">click</a>'
EVIL_URL = "javascript:alert(4)"
MAIL_TEXT = "代理确认还缺近 6 个月银行流水。\n请在 12 日 18 点前送到。"


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    path = tmp_path_factory.mktemp("observations") / "store"
    batch = {"batch_id": "b1", "declarations": [
        {"id": "visa", "title": "签证材料缺银行流水", "weight": "critical", "kind": "needs-you",
         "sources": [{"channel": "email", "ref": "event:mail:1", "quote": "还缺近 6 个月银行流水"}]},
        {"id": "xss", "title": "hostile", "weight": "low", "kind": "fyi",
         "sources": [{"channel": "web", "ref": "event:" + EVIL_ID}]}]}
    assert file_store(path, budget=64).commit(batch, actor="agent", now=NOW).exit_code == 0
    with open_host_db(path) as db:
        db.add_observations([
            Observation(id="mail:1", source="mail", channel="email", sender="Agency <visa@example.org>", at=NOW,
                        observed_at=NOW, title="签证材料", text=MAIL_TEXT, url="https://mail.example.org/m/1",
                        thread="visa-thread", meta={"flags": ["\\Seen"]}),
            Observation(id=EVIL_ID, source="evil", channel="web", sender='"<b>bold</b>" <x@y>', at=NOW,
                        observed_at=NOW, title=EVIL_TITLE, text=EVIL_TEXT, url=EVIL_URL,
                        meta={"html": "<iframe src=//evil.example></iframe>"})])
        db.mark([{"event": "mail:1", "disposition": "used", "why": "代理确认缺材料", "related": ["visa"]},
                 {"event": EVIL_ID, "disposition": "used", "why": "<em>why</em>", "related": ["xss", "<b>"]}],
                batch_id="b1", now=NOW)
    return path


@pytest.fixture(scope="module")
def server(store):
    app = create_app(str(store), timezone="Asia/Shanghai", clock=lambda: CLOCK)
    with ServerThread(app, Bind("127.0.0.1", 0, None)) as running:
        yield running


@pytest.fixture(scope="module")
def browser():
    require_component(CHROMIUM, "chromium")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, headless=True,
                                              args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"])
        yield launched
        launched.close()


@pytest.fixture
def tab(browser):
    context = browser.new_context()
    page = context.new_page()
    seen = {"requests": [], "dialogs": [], "errors": []}
    page.on("request", lambda request: seen["requests"].append(request.url))
    page.on("dialog", lambda dialog: (seen["dialogs"].append(dialog.message), dialog.dismiss()))
    page.on("pageerror", lambda error: seen["errors"].append(str(error)))
    yield page, seen
    context.close()


def test_an_event_source_opens_the_observation_it_came_from(server, tab):
    page, seen = tab
    page.goto(server.url + "item/visa")
    link = page.locator("a.source-event")
    assert link.inner_text() == "event:mail:1"
    link.click()
    page.wait_for_load_state("load")
    assert page.url == server.url + "observation/mail:1?item=visa"
    assert page.locator("h1.observation-title").inner_text() == "签证材料"
    assert page.locator("pre.observation-text").inner_text() == MAIL_TEXT  # line breaks kept
    assert page.locator("code.url-text").inner_text() == "https://mail.example.org/m/1"
    assert page.locator("a.url-link").get_attribute("href") == "https://mail.example.org/m/1"
    assert page.locator("a.url-link").get_attribute("rel") == "noopener noreferrer nofollow"
    body = page.inner_text("main")
    for expected in ("Agency <visa@example.org>", "observed today 08:00", "visa-thread", "processed", "代理确认缺材料",
                     "\\\\Seen"):
        assert expected in body, expected
    assert page.locator("li.disposition a[href='/item/visa']").count() == 1
    page.click("p.crumbs a[href='/item/visa']")
    page.wait_for_load_state("load")
    assert page.url == server.url + "item/visa"
    assert seen["dialogs"] == [] and seen["errors"] == []
    assert all(url.startswith(server.url) for url in seen["requests"]), seen["requests"]


def test_hostile_observation_text_is_only_ever_text(server, tab):
    page, seen = tab
    page.goto(server.url + "item/xss")
    page.click("a.source-event")
    page.wait_for_load_state("load")
    response = page.goto(page.url)
    html = response.text()
    assert "<script>" not in html and "<img src=x" not in html and "<iframe" not in html and "<b>" not in html
    assert "script-src 'none'" in response.headers["content-security-policy"]
    assert page.locator("dd.observation-id").inner_text() == EVIL_ID  # the id survived the URL both ways
    assert page.locator("h1.observation-title").inner_text() == EVIL_TITLE
    assert page.locator("pre.observation-text").inner_text() == EVIL_TEXT
    assert page.locator("dd.observation-from").inner_text() == '"<b>bold</b>" <x@y>'
    assert page.locator("code.url-text").inner_text() == EVIL_URL
    assert page.locator("a.url-link").count() == 0  # javascript: is text, never a link
    assert page.locator("main img, main script, main iframe, main b, main em").count() == 0
    assert page.locator("a[href^='javascript']").count() == 0
    assert page.locator("li.disposition a").count() == 1  # "xss" is an item id; "<b>" is not
    assert seen["dialogs"] == [] and seen["errors"] == []
    assert all(url.startswith(server.url) for url in seen["requests"]), seen["requests"]


def test_an_unknown_observation_is_a_404_page(server, tab):
    page, _ = tab
    response = page.goto(server.url + "observation/" + quote("mail:404", safe=":"))
    assert response.status == 404 and "No such observation" in page.inner_text("main")


def test_a_store_without_host_db_shows_no_observation_and_creates_nothing(tmp_path, tab):
    path = tmp_path / "store"
    assert file_store(path, budget=64).commit({"batch_id": "b", "declarations": []}, actor="a",
                                              now=NOW).exit_code == 0
    with ServerThread(create_app(str(path), clock=lambda: CLOCK), Bind("127.0.0.1", 0, None)) as running:
        page, _ = tab
        assert page.goto(running.url + "observation/mail:1").status == 404
    assert not (path / "host.db").exists()
