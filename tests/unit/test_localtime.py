"""Times as a person reads them and what a changed decision frame says: pure functions."""

from __future__ import annotations

from fold_host.localtime import HumanTime
from fold_host.pinboard.decisions import frame_changes, frame_page, frame_seen
from fold_core.kernel.decision import frame_digest

NOW = "2026-12-06T09:00:00+01:00"


def test_instants_read_as_people_write_them_in_both_languages():
    en, zh = HumanTime("en", "Europe/Berlin", NOW), HumanTime("zh", "Europe/Berlin", NOW)
    assert en("2026-12-06T04:23:30+01:00") == "today 04:23"  # minutes, never seconds
    assert en("2026-12-05T23:59:00Z") == "today 00:59"  # the local date, not the stored one
    assert en("2026-12-05T22:59:00Z") == "yesterday 23:59"
    assert en("2026-12-07T08:00:00Z") == "tomorrow 09:00"
    assert en("2026-12-11T18:00:00+08:00") == "Fri 11 Dec 11:00"
    assert en("2027-01-04T09:00:00+01:00") == "Mon 4 Jan 2027 09:00"
    assert zh("2026-12-07T08:00:00Z") == "明天 09:00"
    assert zh("2026-12-11T18:00:00+08:00") == "12月11日 周五 11:00"
    assert zh("2027-01-04T09:00:00+01:00") == "2027年1月4日 周一 09:00"
    assert en("not a time") == "not a time" and en(None) == ""


def test_a_summer_time_change_moves_the_clock_not_the_day():
    # Berlin leaves summer time on 25 Oct 2026 at 03:00 → 02:00: the same UTC hour reads differently before/after.
    berlin = HumanTime("en", "Europe/Berlin", "2026-10-25T12:00:00+01:00")
    assert berlin("2026-10-25T00:30:00Z") == "today 02:30"  # still summer time (+02:00)
    assert berlin("2026-10-25T01:30:00Z") == "today 02:30"  # winter time (+01:00)
    assert berlin("2026-10-24T22:30:00Z") == "today 00:30"


def test_instants_inside_a_reason_are_shown_in_local_words():
    en = HumanTime("en", "Asia/Shanghai", "2026-12-06T09:00:00+08:00")
    assert en.in_text("reminded later(2026-12-06T04:23:30+01:00)") == "reminded later(today 11:23)"
    assert en.in_text("due 2026-12-07T01:00:00Z, then 2026-12-08T09:00+08:00") == \
        "due tomorrow 09:00, then Tue 8 Dec 09:00"
    assert en.in_text("no time here: 2026-12-07") == "no time here: 2026-12-07"


FRAME = {"question": "Mitigate or migrate?",
         "options": [{"id": "mitigate", "label": "Mitigate", "consequence": "works today"},
                     {"id": "migrate", "label": "Migrate"}],
         "recommended": "mitigate", "fallback": {"option": "mitigate", "summary": "mitigated on Friday"},
         "decide_by": "2026-12-11T18:00:00+01:00", "evidence": "partial", "gap": "mobile unknown"}


def test_what_changed_in_a_frame_is_said_field_by_field():
    after = {**FRAME, "question": "Mitigate, or migrate next week?",
             "options": [{"id": "mitigate", "label": "Mitigate now", "consequence": "works in an hour"},
                         {"id": "wait", "label": "Wait"}],
             "recommended": "wait", "decide_by": "2026-12-08T18:00:00+01:00", "evidence": "complete", "gap": None}
    said = [template.format(**values) for template, values in
            frame_changes(FRAME, after, HumanTime("en", "Europe/Berlin", NOW))]
    assert said == ["The question was: Mitigate or migrate?", "The option Mitigate is now called Mitigate now",
                    "The consequence of Mitigate now changed; it was: works today", "New option: Wait",
                    "The option Migrate is gone", "The recommendation changed; it was: Mitigate now",
                    "The time to decide by changed; it was: Fri 11 Dec 18:00",
                    "What is known changed; it was: partial — mobile unknown"]
    assert frame_changes(None, after) == [("The question was replaced since you opened the page.", {})]


def test_the_frame_seen_is_found_by_its_digest_and_options_are_marked():
    records = [{"changes": [{"item": {"id": "auth", "decision": FRAME}}]},
               {"changes": [{"item": {"id": "auth", "decision": {**FRAME, "question": "Other?"}}},
                            {"item": {"id": "other", "decision": FRAME}}]}]
    assert frame_seen(records, "auth", frame_digest(FRAME)) == FRAME
    assert frame_seen(records, "auth", "0" * 16) is None
    page = frame_page(FRAME)
    assert [(o["id"], o["recommended"], o["fallback"], o["consequence"]) for o in page["options"]] == \
        [("mitigate", True, True, "works today"), ("migrate", False, False, None)]
    assert page["basis"] is None and page["recommended_label"] == "Mitigate"
