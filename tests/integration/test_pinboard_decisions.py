"""Decision frames and the pages a person reads every day, on the Pinboard in a real Chromium.

A real file store and host.db in a temporary directory, the Pinboard in a
thread (127.0.0.1, port 0), Debian's Chromium through Playwright. An answer
is checked where the user and the editor would look for it: `foldctl
decisions` and the feedback inbox (`foldctl inbox`), run as subprocesses; a
frame changed by another process makes an old page's click a stale answer
that stores nothing.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from conftest import missing_component, require_component
from fold_core.observation import Observation
from fold_core.store.file import file_store
from fold_host.hostdb import open_host_db
from fold_host.pinboard.app import create_app
from fold_host.web.server import Bind, ServerThread

ZONE = "Asia/Shanghai"
NOW = "2026-12-06T08:00:00+08:00"
CLOCK = datetime(2026, 12, 6, 9, 0, tzinfo=ZoneInfo(ZONE))
CHROMIUM = os.environ.get("FOLD_CHROMIUM") or "/usr/bin/chromium"

FRAME = {"question": "先临时缓解，还是本周迁移到按字段合并？",
         "options": [{"id": "mitigate", "label": "先临时缓解", "consequence": "今天恢复登录；下周仍需迁移"},
                     {"id": "migrate", "label": "本周迁移", "consequence": "周四停服 2 小时，根治"}],
         "recommended": "mitigate", "basis": "负载测试显示迁移需停服 2 小时。",
         "fallback": {"option": "mitigate", "summary": "周五 18:00 前无答复则先缓解"},
         "decide_by": "2026-12-11T18:00:00+08:00", "evidence": "partial", "gap": "移动端是否受影响尚未验证"}
SOONER = {"question": "Keep the seat upgrade?", "options": [{"id": "keep", "label": "Keep it"},
                                                           {"id": "drop", "label": "Drop it",
                                                            "consequence": "refund of 40 EUR"}],
          "fallback": {"summary": "kept when nobody answers", "option": "keep"},
          "decide_by": "2026-12-07T12:00:00+08:00", "evidence": "complete"}
SUMMARY = "代理确认还缺近六个月的纸质银行流水和公司开具的在职证明原件，两份材料都需要加盖公章，周五十八点前送到代理处否则顺延"

ITEMS = [
    {"id": "auth", "title": "登录失败：先缓解还是迁移", "weight": "critical", "kind": "needs-you",
     "summary": "coding agent 在问", "decision": FRAME,
     "reason": "reminded later(2026-12-06T04:23:30+01:00)",
     "sources": [{"channel": "agent", "ref": "event:agents:q-17"}]},
    {"id": "seat", "title": "Seat upgrade", "weight": "normal", "kind": "needs-you", "decision": SOONER},
    {"id": "visa", "title": "签证材料缺银行流水", "weight": "high", "kind": "in-progress", "share": 26, "reason": "the largest matter this week",
     "summary": SUMMARY, "sources": [{"channel": "email", "ref": "event:mail:1"}]},
    {"id": "bill", "title": "Electricity bill paid", "weight": "low", "kind": "done",
     "due_at": "2026-12-06T06:00:00+08:00"},
]
MAIL_SUBJECT = "Re: 签证材料——还缺近 6 个月银行流水（请周五前补交）"
MAIL_SENDER = "Visa Agency <visa@example.org>"


def foldctl(store: Path, *args: str) -> tuple[int, dict]:
    done = subprocess.run([sys.executable, "-m", "fold_host", "--store", str(store), *args], capture_output=True,
                          text=True, timeout=60)
    assert "Traceback" not in done.stderr, done.stderr
    return done.returncode, json.loads(done.stdout)


def commit(store: Path, batch_id: str, *declarations: dict, now: str = NOW) -> None:
    answer = file_store(store).commit({"batch_id": batch_id, "declarations": list(declarations)}, actor="agent",
                                      now=now)
    assert answer.exit_code == 0, answer.document


@pytest.fixture
def store(tmp_path) -> Path:
    path = tmp_path / "store"
    file_store(path, budget=64)
    commit(path, "b1", *ITEMS)
    with open_host_db(path) as db:
        db.add_observations([
            Observation(id="mail:1", source="mail", channel="email", sender=MAIL_SENDER, at=NOW, observed_at=NOW,
                        title=MAIL_SUBJECT, text="请补交流水"),
            Observation(id="agents:q-17", source="agents", channel="agent", sender="coding-agent", at=NOW,
                        observed_at=NOW, title="refresh_token_ttl=0 or migrate?", text="…")])
    return path


def serve(store: Path, language: str = "en"):
    app = create_app(str(store), timezone=ZONE, language=language, clock=lambda: CLOCK, board_cache=0)
    return ServerThread(app, Bind("127.0.0.1", 0, None))


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


@pytest.fixture
def page(chromium):
    context = chromium.new_context(viewport={"width": 1280, "height": 900})
    tab = context.new_page()
    errors: list[str] = []
    tab.on("pageerror", lambda error: errors.append(str(error)))
    yield tab
    context.close()
    assert errors == []


def decisions(store: Path, status: str | None = None) -> dict[str, dict]:
    code, document = foldctl(store, "decisions", "--now", CLOCK.isoformat(), *(["--status", status] if status else []))
    assert code == 0, document
    return {entry["item"]: entry for entry in document["decisions"]}


def feedback_count(store: Path) -> int:
    code, document = foldctl(store, "inbox", "--source", "feedback")
    assert code == 0, document
    return len(document["observations"])


def test_the_item_page_shows_the_frame_and_one_click_answers_it(store, page):
    with serve(store) as server:
        page.goto(server.url + "item/auth")
        frame = page.locator("#decision")
        text = frame.inner_text()
        for expected in (FRAME["question"], "先临时缓解", "今天恢复登录；下周仍需迁移", "本周迁移", "周四停服 2 小时，根治",
                         "负载测试显示迁移需停服 2 小时。", "周五 18:00 前无答复则先缓解",
                         "Fri 11 Dec 18:00", "移动端是否受影响尚未验证", "recommended", "if nobody answers"):
            assert expected in text, expected
        assert "partial" in frame.locator(".evidence").inner_text()
        assert frame.locator("button").all_inner_texts() == ["先临时缓解", "本周迁移"]
        assert frame.locator("li.option.recommended").get_attribute("data-option") == "mitigate"
        assert decisions(store)["auth"]["status"] == "open"
        before = feedback_count(store)
        # One click: the button's own form carries the CSRF token and the frame's digest.
        digest = frame.get_attribute("data-digest")
        page.click("#decision li[data-option=migrate] button")
        assert "You chose “本周迁移”" in page.locator("#notice").inner_text()
        assert "Your answer: 本周迁移" in page.locator("#decision .answered").inner_text()
        answered = decisions(store)["auth"]
        assert answered["status"] == "answered"
        assert (answered["answer"]["option"], answered["answer"]["digest"], answered["answer"]["via"]) == \
            ("migrate", digest, "button")
        assert feedback_count(store) == before + 1
        page.reload()  # post/redirect/get: a reload does not answer again
        assert feedback_count(store) == before + 1


def test_an_answer_to_a_changed_frame_stores_nothing_and_says_what_changed(store, page):
    with serve(store) as server:
        page.goto(server.url + "item/auth")
        old_digest = page.locator("#decision").get_attribute("data-digest")
        before = feedback_count(store)
        # Another process changes the frame while the page is open: the question, a label, the deadline.
        changed = {**FRAME, "question": "先临时缓解，还是下周迁移？", "decide_by": "2026-12-08T18:00:00+08:00",
                   "options": [FRAME["options"][0], {**FRAME["options"][1], "label": "下周迁移"}]}
        commit(store, "b2", {"id": "auth", "relation": "supersedes:auth", "weight": "critical",
                             "kind": "needs-you", "decision": changed}, now="2026-12-06T08:30:00+08:00")
        page.click("#decision li[data-option=migrate] button")
        stale = page.locator("#stale").inner_text()
        assert "your answer was not saved" in stale
        for expected in ("The question was: " + FRAME["question"], "The option 本周迁移 is now called 下周迁移",
                         "The time to decide by changed; it was: Fri 11 Dec 18:00"):
            assert expected in stale, expected
        # The page now shows the new frame, bound to its new digest.
        assert page.locator("#decision .question").inner_text() == "先临时缓解，还是下周迁移？"
        new_digest = page.locator("#decision").get_attribute("data-digest")
        assert new_digest != old_digest
        assert page.locator("#decision input[name=digest]").first.get_attribute("value") == new_digest
        assert feedback_count(store) == before
        assert decisions(store)["auth"]["status"] == "open"
        # Choosing again on the new frame counts.
        page.click("#decision li[data-option=migrate] button")
        assert decisions(store)["auth"]["answer"]["option"] == "migrate"
        assert feedback_count(store) == before + 1


def test_decisions_lists_the_open_ones_soonest_first_and_cards_show_the_question(store, page):
    with serve(store) as server:
        page.goto(server.url + "decisions")
        assert [entry.get_attribute("data-item") for entry in page.locator("li.decision-entry").all()] == \
            ["seat", "auth"]
        assert "decide by tomorrow 12:00" in page.locator("li.decision-entry[data-item=seat]").inner_text()
        page.click("li.decision-entry[data-item=seat] li[data-option=drop] button")
        page.goto(server.url + "decisions")
        assert [entry.get_attribute("data-item") for entry in page.locator("li.decision-entry").all()] == ["auth"]
        page.goto(server.url)
        card = page.locator(".canvas-wide [data-text][data-id=auth]")
        assert card.locator(".line-question").inner_text() == FRAME["question"]
        assert card.locator(".line-recommended").inner_text() == "recommended: 先临时缓解"
        assert "recommended: 先临时缓解" in page.locator("#entry-auth .entry-question").inner_text()


def test_the_item_page_names_its_messages_and_says_times_in_local_words(store, page):
    with serve(store) as server:
        page.goto(server.url + "item/visa")
        assert page.locator("h1.item-title").inner_text() == "签证材料缺银行流水"
        subject = page.locator("ul.cited a.cited-subject")
        assert subject.inner_text() == MAIL_SUBJECT
        assert subject.get_attribute("href") == "/observation/mail:1?item=visa"
        assert MAIL_SENDER in page.locator("ul.cited").inner_text()
        # The title comes first, then the messages it was made from.
        assert page.evaluate("document.querySelector('h1.item-title').nextElementSibling.className") == "cited"
        page.goto(server.url + "item/auth")
        reason = page.locator(".fields dt:text('reason') + dd").inner_text()
        assert reason == "reminded later(today 11:23)"  # 04:23:30+01:00 is 11:23 in Shanghai
        assert "2026-12" not in page.locator(".fields").inner_text()
        # The history says who did what and when, in words; the batch id waits behind its toggle.
        history = page.locator("#history li").first
        assert history.locator(".when").inner_text() == "today 08:00 · The editor"
        assert history.locator("strong").inner_text() == "added"
        assert "b1" not in history.inner_text()
        history.locator("details summary").click()
        assert "b1" in history.locator("details").inner_text()


def test_a_large_card_shows_its_whole_summary_and_its_first_subject(store, page):
    with serve(store) as server:
        page.goto(server.url)
        card = page.locator(".canvas-wide [data-text][data-id=visa]")
        assert card.locator(".line-summary").inner_text() == SUMMARY
        assert card.locator(".line-source").inner_text() == MAIL_SUBJECT
        clipped = page.evaluate("""() => { const el = document.querySelector('.canvas-wide [data-text][data-id=visa]');
            return el.scrollHeight > el.clientHeight + 1; }""")
        assert clipped is False
        # A small card is not given a subject it has no room for.
        assert page.locator(".canvas-wide [data-text][data-id=seat] .line-source").count() == 0


def test_a_done_item_shows_no_countdown(store, page):
    with serve(store) as server:
        page.goto(server.url)
        card = page.locator(".canvas-wide [data-text][data-id=bill]").inner_text()
        entry = page.locator("#entry-bill").inner_text()
        for shown in (card, entry):
            assert "overdue" not in shown.lower() and "due in" not in shown
        page.goto(server.url + "item/bill")
        due = page.locator(".fields dt:text('due') + dd").inner_text()
        assert due == "today 06:00"  # the date stays, the countdown goes
        assert page.locator(".fields .badge-overdue").count() == 0


def test_the_pages_speak_chinese_with_local_times(store, page):
    with serve(store, "zh") as server:
        page.goto(server.url + "item/auth")
        text = page.locator("main").inner_text()
        for expected in ("推荐", "没有回答时", "已知情况", "证据：部分", "请在 12月11日 周五 18:00 前决定", "给编辑留言",
                         "告诉编辑", "我已决定", "稍后提醒我"):
            assert expected in text, expected
        for english in ("Saved as saved", "What I", "recommended"):
            assert english not in text
        page.click("#decision li[data-option=mitigate] button")
        assert "你选择了“先临时缓解”" in page.locator("#notice").inner_text()
        page.goto(server.url + "changes")
        changes = page.locator("main").inner_text()
        assert "今天 08:00" in changes and "编辑" in changes and "新增了" in changes
        assert "b1" not in changes  # the batch id is behind the details toggle


def test_an_answer_without_the_form_token_is_refused_and_stores_nothing(store):
    import httpx

    with serve(store) as server, httpx.Client(base_url=server.url) as client:
        page = client.get("/item/auth").text
        digest = page.split('data-digest="', 1)[1].split('"', 1)[0]
        token = page.split('name="csrf" value="', 1)[1].split('"', 1)[0]
        before = feedback_count(store)
        refused = [client.post("/item/auth/decide", data={"option": "migrate", "digest": digest}),
                   client.post("/item/auth/decide", data={"option": "migrate", "digest": digest, "csrf": "0" * 64}),
                   client.post("/item/auth/decide", data={"option": "migrate", "digest": digest, "csrf": token},
                               headers={"origin": "http://evil.example"})]
        assert [response.status_code for response in refused] == [403, 403, 403]
        unknown = client.post("/item/auth/decide", data={"option": "nope", "digest": digest, "csrf": token})
        assert unknown.status_code == 422 and "mitigate, migrate" in unknown.text
        assert feedback_count(store) == before
        assert decisions(store)["auth"]["status"] == "open"


def test_the_screenshot_script_reruns_into_any_directory(chromium, tmp_path):
    """docs/screenshots/ is made by scripts/pinboard_screenshots.py: it must keep working for anyone."""
    root = Path(__file__).resolve().parents[2]
    environment = {**os.environ, "FOLD_CHROMIUM": CHROMIUM}
    done = subprocess.run([sys.executable, str(root / "scripts" / "pinboard_screenshots.py"), "--out", str(tmp_path)],
                          capture_output=True, text=True, timeout=300, env=environment)
    assert done.returncode == 0, done.stderr
    names = sorted(path.name for path in tmp_path.glob("*.png"))
    assert names == ["pinboard-changes-en.png", "pinboard-changes-zh.png", "pinboard-item-en.png",
                     "pinboard-item-zh.png"]
    for name in names:
        data = (tmp_path / name).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20_000
        assert (root / "docs" / "screenshots" / name).exists()  # the committed ones are referenced from docs
