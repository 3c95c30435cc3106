"""Screenshots of the Pinboard's item page and changes page, in English and Chinese.

    .venv/bin/python scripts/pinboard_screenshots.py                 # writes docs/screenshots/*.png
    .venv/bin/python scripts/pinboard_screenshots.py --out /tmp/shots

A sample store and host.db in a temporary directory (an agent's question as
a decision frame, a mail-backed item, a done bill, a note and a second
editor cycle), the Pinboard on 127.0.0.1 (any free port) with a fixed clock,
and the system's Chromium (``FOLD_CHROMIUM``, else /usr/bin/chromium)
through Playwright. Nothing is fetched from the network; the same input
gives the same pages, so a rerun shows only what the code changed.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

from fold_core.observation import Observation
from fold_core.store.file import file_store
from fold_host.hostdb import open_host_db
from fold_host.pinboard.app import create_app
from fold_host.web.server import Bind, ServerThread

ROOT = Path(__file__).resolve().parent.parent
ZONE = "Europe/Berlin"
FIRST = "2026-12-05T18:40:00+01:00"
SECOND = "2026-12-06T07:55:00+01:00"
CLOCK = datetime(2026, 12, 6, 9, 0, tzinfo=ZoneInfo(ZONE))
CHROMIUM = os.environ.get("FOLD_CHROMIUM") or "/usr/bin/chromium"
PAGES = {"item": "/item/auth", "changes": "/changes"}

# The sample's item and message text in each language (a Chinese reader's sources write Chinese).
TEXT = {
    "en": {"question": "Mitigate now (refresh_token_ttl=0) or migrate to per-field merge this week?",
           "mitigate": ("Mitigate now", "logins work today; migrate next week"),
           "migrate": ("Migrate this week", "2 h downtime on Thursday; fixed"),
           "basis": "The load test shows the migration needs 2 hours of downtime.",
           "fallback": "Mitigated when nobody answers by Friday 18:00",
           "gap": "Whether mobile clients are affected is not verified yet",
           "auth": ("Login failures", "The coding agent asks how to stop the login errors",
                    "an agent's question with a deadline (asked 2026-12-05T18:32:00+01:00)"),
           "quote": "refresh_token_ttl=0 or migrate?",
           "visa": ("Visa: bank statements", "The agency needs six months of bank statements by Friday",
                    "Fetch statements on Monday; hand them in by Friday"),
           "bill": ("Electricity bill", "Pay 84.20 EUR by noon", "Paid by direct debit",
                    "reminded later(2026-12-06T04:23:30+01:00); the bank confirmed the payment"),
           "note": "The bank opens at 9; I'll fetch them on Monday.",
           "subjects": ("refresh_token_ttl=0 now, or per-field merge this week?", "Login error rate at 12% since 16:30",
                        "Re: your application — six months of bank statements missing")},
    "zh": {"question": "先临时缓解（refresh_token_ttl=0），还是本周迁移到按字段合并？",
           "mitigate": ("先临时缓解", "今天恢复登录；下周仍需迁移"), "migrate": ("本周迁移", "周四停服 2 小时，根治"),
           "basis": "负载测试显示迁移需停服 2 小时。", "fallback": "周五 18:00 前无答复则先缓解",
           "gap": "移动端是否受影响尚未验证",
           "auth": ("登录失败", "编码代理在问怎么止住登录失败", "代理提的问题，有截止时间（提问于 2026-12-05T18:32:00+01:00）"),
           "quote": "先 refresh_token_ttl=0 还是迁移？",
           "visa": ("签证材料缺银行流水", "代理要近六个月的银行流水，周五前交", "周一去银行打流水，周五前交给代理"),
           "bill": ("电费", "中午前交 84.20 欧元", "已自动扣款", "稍后提醒(2026-12-06T04:23:30+01:00)；银行确认已扣款"),
           "note": "银行九点开门，我周一去打流水。",
           "subjects": ("现在先把 refresh_token_ttl 设为 0，还是本周做按字段合并？", "16:30 起登录错误率 12%",
                        "回复：您的申请——还缺近六个月银行流水")},
}


def accepted(answer) -> None:
    if answer.exit_code != 0:
        raise SystemExit(f"the sample store was refused: {answer.document}")


def build_store(directory: Path, language: str) -> Path:
    """The sample store: two editor cycles, a note between them, and the messages the items cite."""
    text = TEXT[language]
    store = directory / f"store-{language}"
    files = file_store(store, budget=64)
    frame = {"question": text["question"],
             "options": [{"id": key, "label": text[key][0], "consequence": text[key][1]}
                         for key in ("mitigate", "migrate")],
             "recommended": "mitigate", "basis": text["basis"],
             "fallback": {"option": "mitigate", "summary": text["fallback"]},
             "decide_by": "2026-12-11T18:00:00+01:00", "evidence": "partial", "gap": text["gap"]}
    auth, visa, bill = text["auth"], text["visa"], text["bill"]
    first = [
        {"id": "auth", "title": auth[0], "weight": "critical", "kind": "needs-you", "summary": auth[1],
         "decision": frame, "reason": auth[2], "due_at": "2026-12-11T18:00:00+01:00",
         "sources": [{"channel": "agent", "ref": "event:agents:q-17", "quote": text["quote"]},
                     {"channel": "email", "ref": "event:mail:41"}]},
        {"id": "visa", "title": visa[0], "weight": "high", "kind": "in-progress", "summary": visa[1],
         "sources": [{"channel": "email", "ref": "event:mail:40"}]},
        {"id": "bill", "title": bill[0], "weight": "low", "kind": "needs-you",
         "due_at": "2026-12-06T12:00:00+01:00", "summary": bill[1]},
    ]
    accepted(files.commit({"batch_id": "sample-1", "declarations": first}, actor="agent", now=FIRST))
    accepted(files.annotate(item="visa", text=text["note"], author="user", now="2026-12-05T21:10:00+01:00"))
    second = [{"id": "bill", "relation": "supersedes:bill", "title": bill[0], "weight": "trace", "kind": "done",
               "summary": bill[2], "reason": bill[3]},
              {"id": "visa", "relation": "supersedes:visa", "title": visa[0], "weight": "high",
               "kind": "in-progress", "summary": visa[2], "sources": [{"channel": "email", "ref": "event:mail:40"}]}]
    accepted(files.commit({"batch_id": "sample-2", "declarations": second}, actor="agent", now=SECOND))
    subjects = text["subjects"]
    with open_host_db(store) as db:
        db.add_observations([
            Observation(id="agents:q-17", source="agents", channel="agent", sender="coding-agent", at=FIRST,
                        observed_at=FIRST, title=subjects[0], text="…"),
            Observation(id="mail:41", source="mail", channel="email", sender="Ops <ops@example.org>",
                        at="2026-12-05T17:02:00+01:00", observed_at=FIRST, title=subjects[1], text="…"),
            Observation(id="mail:40", source="mail", channel="email", sender="Visa Agency <visa@example.org>",
                        at="2026-12-04T10:15:00+01:00", observed_at=FIRST, title=subjects[2], text="…")])
    return store


def shoot(store: Path, out: Path, language: str, browser) -> list[Path]:
    app = create_app(str(store), timezone=ZONE, language=language, clock=lambda: CLOCK, board_cache=0)
    written = []
    with ServerThread(app, Bind("127.0.0.1", 0, None)) as server:
        context = browser.new_context(viewport={"width": 1100, "height": 900}, device_scale_factor=1)
        page = context.new_page()
        for name, path in PAGES.items():
            page.goto(server.url.rstrip("/") + path, wait_until="load")
            page.evaluate("document.fonts.ready.then(() => true)")
            target = out / f"pinboard-{name}-{language}.png"
            page.screenshot(path=str(target), full_page=True)
            written.append(target)
        context.close()
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(ROOT / "docs" / "screenshots"), help="where the PNGs go")
    args = parser.parse_args(argv)
    if not Path(CHROMIUM).exists():
        print(f"no Chromium at {CHROMIUM} (set FOLD_CHROMIUM)", file=sys.stderr)
        return 3
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory(prefix="fold-shots-") as temporary, sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True,
                                             args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"])
        try:
            for language in ("en", "zh"):
                for path in shoot(build_store(Path(temporary), language), out, language, browser):
                    print(path)
        finally:
            browser.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
