"""A scripted week (records, feedback, polls and pushes at chosen times) and its report: the ``report``
consumer writes 2026-W49 once (Markdown, self-contained HTML, an index line); ``foldctl report`` renders
the same bytes on demand; Markdown, HTML and JSON agree; the HTML opened in Chromium runs no script and
asks for nothing outside; the attention figures (``foldctl stats``, the report, /metrics) match the
values counted by hand below."""

from __future__ import annotations

import html
import io
import json
import os
import re
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

from conftest import missing_component, require_component
from fold_core.observation import Health, Observation, Poll
from fold_host.cli import main
from fold_host.cycle.delivery import deliver_all, register_new
from fold_host.cycle.feedback import save_feedback
from fold_host.hostdb import open_host_db

from consumer_support import Receiver, annotate, commit, instance

ZONE = "Asia/Shanghai"
CHROMIUM = os.environ.get("FOLD_CHROMIUM") or "/usr/bin/chromium"
XSS = "<script>alert()</script>"  # 24 code points: an item title
PROBE = "<img src=//127.0.0.1:9/>"  # 24 code points: another title


def at(day: int, hour: int) -> str:
    """2026-11-30 (Monday of W49) + ``day`` days, at ``hour`` local."""
    return f"2026-{11 if day == 0 else 12}-{30 if day == 0 else day:02d}T{hour:02d}:00:00+08:00"


def frame(question, decide_by, *options):
    return {"question": question, "evidence": "complete", "decide_by": decide_by,
            "options": [{"id": option, "label": option.title()} for option in options],
            "fallback": {"option": options[0], "summary": f"{options[0]} when nobody answers"}}


@pytest.fixture(scope="module")
def week(tmp_path_factory):
    receiver = Receiver()
    root = tmp_path_factory.mktemp("week")
    store = root / "store"
    os.environ["FOLD_TEST_PUSH_URLS"] = receiver.url
    (root / "plugins.toml").write_text(
        f'[store]\npath = "store"\n[host]\ntimezone = "{ZONE}"\nlanguage = "en"\n', encoding="utf-8")
    commit(store, {"batch_id": "seed", "declarations": [
        {"id": "seed", "title": "Existing item", "weight": "low", "kind": "fyi"}]}, "2026-11-29T09:00:00+08:00")
    # The instances start on Monday morning: the week before (W48) ended before them and is not written.
    db = open_host_db(store)
    push = instance("phone", "push", root, urls_env="FOLD_TEST_PUSH_URLS", min_weight="high", kinds=["needs-you"])
    report = instance("weekly", "report", root, dir=str(root / "reports"), urls_env="FOLD_TEST_PUSH_URLS")
    daily = instance("daily", "report", root, dir=str(root / "daily"), every="daily")
    register_new(db, str(store), [push, report, daily], now=at(0, 7))

    def deliver(now):
        results = deliver_all(db, str(store), [push, report, daily], now=now, timezone=ZONE, language="en",
                              coverage=())
        assert all(result["status"] == "ok" for result in results), results

    def feedback(item, meaning, now, **extra):
        document, code = save_feedback(str(store), item, meaning, None,
                                       "2026-12-09T09:00:00+08:00" if meaning == "snooze" else None, now, extra=extra)
        assert code == 0, document

    def poll(status, now):
        health = Health.ok() if status == "ok" else Health.failed("auth", "IMAP login failed")
        db.record_poll("mail", Poll(health=health), now=now)

    poll("ok", at(0, 8))
    commit(store, {"batch_id": "mon", "declarations": [
        {"id": "outage", "title": "Payments down", "weight": "critical", "kind": "in-progress"},
        {"id": "venue", "title": "Party venue", "weight": "normal", "kind": "needs-you",
         "decision": frame("Hall or park?", at(2, 18), "hall", "park")},
        {"id": "news", "title": XSS, "weight": "high", "kind": "fyi"},
        {"id": "lease", "title": "Lease renewal", "weight": "high", "kind": "needs-you",
         "decision": frame("Renew or move?", at(4, 12), "renew", "move")}]}, at(0, 9))
    deliver(at(0, 9))  # 4 interrupts: created
    feedback("news", "snooze", at(0, 10))  # shrugged off: a false interrupt
    commit(store, {"batch_id": "tue", "declarations": [
        {"id": "outage", "relation": "supersedes:outage", "weight": "high", "kind": "in-progress",
         "reason": "a workaround holds"}]}, at(1, 8))  # lowered within 24 h: a false interrupt
    deliver(at(1, 8))
    feedback("venue", "decide", at(1, 12), option="park", revision=2)  # 27 h after the frame appeared
    deliver(at(1, 12))
    poll("failed", at(2, 8))
    commit(store, {"batch_id": "wed", "declarations": [
        {"id": "tax", "title": "Tax papers", "weight": "normal", "kind": "fyi"},
        {"id": "memo", "title": PROBE, "weight": "low", "kind": "fyi"}]}, at(2, 10))
    deliver(at(2, 10))  # venue's decide_by is 8 h away but answered: no reminder
    poll("ok", at(3, 8))
    feedback("tax", "act", at(3, 10))  # acted on with no interrupt: a missed escalation
    annotate(store, "memo", "this matters", at(3, 11))  # the same
    deliver(at(3, 12))  # lease's decide_by is 24 h away: one deadline interrupt
    fallback = {"target": "lease", "action": "fallback", "meaning": "fallback", "via": "host", "option": "renew"}
    db.add_observations([Observation(id="feedback:fallback-lease", source="feedback", channel="feedback",
                                     sender="fold", at=at(4, 13), observed_at=at(4, 13), title="fallback: lease",
                                     text="", feedback=fallback)])
    commit(store, {"batch_id": "sat", "declarations": [
        {"id": "outage", "relation": "supersedes:outage", "weight": "high", "kind": "done"},
        {"id": "news", "relation": "withdraw", "reason": "read"}]}, at(5, 10))
    deliver(at(5, 10))
    titles = [body["title"] for body in receiver.bodies]
    deliver("2026-12-07T07:59:00+08:00")
    assert not (root / "reports").exists()  # not due before Monday 08:00
    receiver.bodies.clear()
    deliver("2026-12-07T08:00:00+08:00")
    announced = list(receiver.bodies)
    deliver("2026-12-07T09:00:00+08:00")
    assert len(receiver.bodies) == 1  # announced once
    yield {"root": root, "store": store, "db": db, "titles": titles, "deliver": deliver, "announced": announced}
    db.close()
    receiver.stop()
    del os.environ["FOLD_TEST_PUSH_URLS"]


def foldctl(root, *args) -> tuple[int, str]:
    out, err = io.TextIOWrapper(io.BytesIO(), encoding="utf-8"), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(["--config", str(root / "plugins.toml"), *args])
    out.flush()
    assert "Traceback" not in err.getvalue(), err.getvalue()
    return code, out.buffer.getvalue().decode()


HAND_COUNTED = {"notifications": {"total": 5, "by_kind": {"created": 4, "deadline": 1}, "by_mode": {"interrupt": 5}},
                "false_interrupts": 2, "missed_escalations": 2, "missed_items": ["memo", "tax"],
                "decisions": {"answered_before_deadline": 1, "answered_late": 0, "fell_back": 1, "open": 0,
                              "median_hours_to_answer": 27.0}}


def test_the_week_was_pushed_as_scripted(week):
    assert sorted(week["titles"]) == sorted([
        "New: Payments down", "New: Party venue", f"New: {XSS}", "New: Lease renewal",
        "Decide by 2026-12-04 12:00: Lease renewal"])


def test_the_new_report_is_announced_by_one_short_push(week):
    assert [body["title"] for body in week["announced"]] == ["Fold report 2026-W49"]
    message = week["announced"][0]["message"]
    assert message.startswith("5 notifications, 2 false interrupts, 2 missed escalations, 0 decisions open")
    assert message.endswith("reports/2026-W49.html")


def test_the_report_is_written_once_with_its_identity_and_agrees_with_foldctl_report(week):
    reports = week["root"] / "reports"
    assert sorted(path.name for path in reports.iterdir()) == ["2026-W49.html", "2026-W49.md", "index.jsonl"]
    files = {name: (reports / name).read_bytes() for name in ("2026-W49.md", "2026-W49.html", "index.jsonl")}
    week["deliver"]("2026-12-07T09:00:00+08:00")
    week["deliver"]("2026-12-08T09:00:00+08:00")
    assert {name: (reports / name).read_bytes() for name in files} == files  # never rewritten, one index line
    index = [json.loads(line) for line in files["index.jsonl"].decode().splitlines()]
    assert len(index) == 1
    line = index[0]
    assert (line["period"], line["first_event_seq"], line["last_event_seq"], line["revision"]) == (
        "2026-W49", 2, 6, 5)
    assert line["since"] == "2026-11-30T00:00:00+08:00" and line["until"] == "2026-12-07T00:00:00+08:00"
    code, md = foldctl(week["root"], "report", "--period", "2026-W49", "--format", "md")
    assert code == 0 and md == files["2026-W49.md"].decode()
    code, page = foldctl(week["root"], "report", "--period", "2026-W49", "--format", "html")
    assert code == 0 and page == files["2026-W49.html"].decode()
    code, text = foldctl(week["root"], "report", "--period", "2026-W49", "--format", "json")
    report = json.loads(text)
    assert report["schema"] == "fold.report/1" and report["identity"]["digest"] == line["digest"]
    assert report["attention"] == HAND_COUNTED
    assert [entry["item"] for entry in report["items"]["created"]] == ["outage", "venue", "news", "lease", "tax",
                                                                        "memo"]
    assert [entry["item"] for entry in report["items"]["done"]] == ["outage"]
    assert [entry["item"] for entry in report["items"]["withdrawn"]] == ["news"]
    assert [(entry["item"], sorted(entry["fields"])) for entry in report["changes"]] == [
        ("outage", ["weight"]), ("outage", ["kind"])]
    assert [(e["item"], e["option"]) for e in report["decisions"]["answered"]] == [("venue", "park")]
    assert [(e["item"], e["option"]) for e in report["decisions"]["fell_back"]] == [("lease", "renew")]
    assert report["decisions"]["open"] == []
    assert report["sources"] == [{"source": "mail", "polls": 3, "failed": 1, "last_status": "ok",
                                  "last_error": "IMAP login failed"}]
    # The three formats say the same things: every Markdown line is an HTML list entry, in order.
    assert [line[2:] for line in md.splitlines() if line.startswith("- ")] == [
        html.unescape(entry) for entry in re.findall(r"<li>(.*?)</li>", page)]
    for needle in ["Hall or park? → park", "Renew or move? → renew", "Payments down", "Tax papers",
                   "mail: 3 polls, 1 failed", "False interrupts: 2", "Missed escalations: 2",
                   "Median time to answer: 27.0 h", line["digest"]]:
        assert needle in md, needle
        assert needle.replace(">", "&gt;") in page, needle
    assert XSS not in page and "&lt;script&gt;alert()&lt;/script&gt;" in page


def test_daily_reports_catch_up_each_day_once(week):
    daily = week["root"] / "daily"
    index = [json.loads(line) for line in (daily / "index.jsonl").read_text().splitlines()]
    days = ["2026-11-30"] + [f"2026-12-0{day}" for day in range(1, 7)]
    assert [line["period"] for line in index][:7] == days  # each day once, in order
    assert len({line["period"] for line in index}) == len(index)
    written = {line["period"]: line["written_at"] for line in index}
    assert written["2026-12-03"] == written["2026-12-04"] == at(5, 10)  # caught up together on Saturday
    assert written["2026-11-30"] == at(1, 8)
    created = []
    for day in days:
        code, text = foldctl(week["root"], "report", "--period", day, "--format", "json")
        report = json.loads(text)
        assert report["identity"]["digest"] == index[days.index(day)]["digest"]
        created += [entry["item"] for entry in report["items"]["created"]]
        code, md = foldctl(week["root"], "report", "--period", day, "--format", "md")
        assert md == (daily / f"{day}.md").read_text(encoding="utf-8")
    assert created == ["outage", "venue", "news", "lease", "tax", "memo"]


def test_the_html_runs_no_script_and_asks_for_nothing_outside(week):
    require_component(CHROMIUM, "chromium")
    from playwright.sync_api import sync_playwright

    path = week["root"] / "reports" / "2026-W49.html"
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True,
                                             args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"])
        try:
            page = browser.new_page()
            requests, dialogs = [], []
            page.on("request", lambda request: requests.append(request.url))
            page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
            page.goto(path.as_uri(), wait_until="load")
            assert page.evaluate("document.scripts.length") == 0
            assert XSS in page.inner_text("body") and PROBE in page.inner_text("body")
            assert page.evaluate("document.images.length") == 0
        finally:
            browser.close()
    assert dialogs == [] and requests == [path.as_uri()]


def test_stats_match_the_hand_counted_figures(week):
    code, text = foldctl(week["root"], "stats", "--since", "2026-11-30T00:00:00+08:00", "--now",
                         "2026-12-06T23:59:00+08:00", "--format", "json")
    assert code == 0
    assert json.loads(text)["attention"] == HAND_COUNTED
    code, text = foldctl(week["root"], "stats", "--since", "2026-11-30T00:00:00+08:00", "--now",
                         "2026-12-06T23:59:00+08:00", "--format", "text")
    assert code == 0
    assert "false interrupts: 2" in text and "missed escalations: 2 (memo, tax)" in text
    assert "decisions: 1 answered before the deadline, 0 late, 1 fallen back, 0 open" in text
    assert "notifications sent: 5 (by kind: created 4, deadline 1; by mode: interrupt 5)" in text
    assert text.startswith("from 2026-11-30 00:00 to 2026-12-06 23:59\n"), text  # in the host's zone, not ISO


def test_metrics_count_the_same_figures(week):
    from prometheus_client import generate_latest
    from prometheus_client.parser import text_string_to_metric_families

    from fold_core.store.locate import open_store
    from fold_host.ops.metrics import registry_for

    store = open_store(str(week["store"]))
    text = generate_latest(registry_for(str(week["store"]), store.state)).decode()
    samples = {(sample.name, tuple(sorted(sample.labels.items()))): sample.value
               for family in text_string_to_metric_families(text) for sample in family.samples}
    assert samples[("fold_notifications_total", (("kind", "created"), ("mode", "interrupt")))] == 4
    assert samples[("fold_notifications_total", (("kind", "deadline"), ("mode", "interrupt")))] == 1
    assert samples[("fold_false_interrupts_total", ())] == 2
    assert samples[("fold_missed_escalations_total", ())] == 2
    assert samples[("fold_decisions_total", (("status", "answered"),))] == 1
    assert samples[("fold_decisions_total", (("status", "fell_back"),))] == 1
    assert samples[("fold_decisions_total", (("status", "open"),))] == 0
