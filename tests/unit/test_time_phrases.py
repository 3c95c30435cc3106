"""Times as people write them (``fold_host.timephrase``): zh and en, around DST changes and midnight, at a given now."""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

import pytest

from fold_host.timephrase import TimePhraseError, read_time

BERLIN = "Europe/Berlin"


def at(text: str) -> datetime:
    return datetime.fromisoformat(text)


# Saturday 28 March 2026, 23:50 CET: Berlin moves its clocks to CEST (+02:00) at 02:00 the next night.
BEFORE_SPRING = at("2026-03-28T23:50:00+01:00")


@pytest.mark.parametrize("phrase, expected", [
    ("2h", "2026-03-29T01:50:00+01:00"),  # still before the change
    ("3h", "2026-03-29T03:50:00+02:00"),  # three hours of elapsed time across the change: 03:50 CEST
    ("30m", "2026-03-29T00:20:00+01:00"),
    ("1h30m", "2026-03-29T01:20:00+01:00"),
    ("in 2 hours", "2026-03-29T01:50:00+01:00"),
    ("2小时", "2026-03-29T01:50:00+01:00"),
    ("30分钟", "2026-03-29T00:20:00+01:00"),
    ("半小时", "2026-03-29T00:20:00+01:00"),
    ("1d", "2026-03-29T23:50:00+02:00"),  # a day keeps the wall-clock time, in the new offset
    ("3天后", "2026-03-31T23:50:00+02:00"),
    ("tomorrow 09:00", "2026-03-29T09:00:00+02:00"),
    ("Tomorrow 9am", "2026-03-29T09:00:00+02:00"),
    ("明天 9:00", "2026-03-29T09:00:00+02:00"),
    ("明天9点半", "2026-03-29T09:30:00+02:00"),
    ("明天 下午3点", "2026-03-29T15:00:00+02:00"),
    ("tomorrow 00:30", "2026-03-29T00:30:00+01:00"),  # 40 minutes away, across midnight, before the change
    ("明天 00:30", "2026-03-29T00:30:00+01:00"),
    ("tomorrow 02:30", "2026-03-29T03:30:00+02:00"),  # skipped by the change: one hour later
    ("00:30", "2026-03-29T00:30:00+01:00"),  # a time alone: its next occurrence, past midnight
    ("tomorrow", "2026-03-29T09:00:00+02:00"),  # a day alone: 09:00
    ("后天", "2026-03-30T09:00:00+02:00"),
    ("mon 9:00", "2026-03-30T09:00:00+02:00"),
    ("周一 9:00", "2026-03-30T09:00:00+02:00"),
    ("星期一 9:00", "2026-03-30T09:00:00+02:00"),
    ("sun", "2026-03-29T09:00:00+02:00"),
    ("周日 晚上8点", "2026-03-29T20:00:00+02:00"),
    ("next mon", "2026-03-30T09:00:00+02:00"),  # Saturday: next week's Monday is the day after tomorrow
    ("下周一", "2026-03-30T09:00:00+02:00"),
    ("下周一 上午10点", "2026-03-30T10:00:00+02:00"),
    ("2026-12-08", "2026-12-08T09:00:00+01:00"),
    ("2026-12-08 14:30", "2026-12-08T14:30:00+01:00"),
    ("2026-03-29T02:30", "2026-03-29T03:30:00+02:00"),  # what a datetime-local picker sends, skipped hour
    ("２０２６－１２－０８　９：００", "2026-12-08T09:00:00+01:00"),  # full-width forms
    ("2026-12-08T09:00:00+08:00", "2026-12-08T09:00:00+08:00"),  # an ISO instant stays exactly as written
])
def test_phrases_before_the_spring_change(phrase, expected):
    assert read_time(phrase, BEFORE_SPRING, BERLIN) == expected


def test_around_the_autumn_change():
    # Saturday 24 October 2026, 23:50 CEST; at 03:00 on Sunday the clocks go back to 02:00 CET.
    now = at("2026-10-24T23:50:00+02:00")
    assert read_time("4h", now, BERLIN) == "2026-10-25T02:50:00+01:00"  # four elapsed hours, the hour repeated
    assert read_time("明天 9:00", now, BERLIN) == "2026-10-25T09:00:00+01:00"
    assert read_time("tomorrow 02:30", now, BERLIN) == "2026-10-25T02:30:00+02:00"  # twice that night: the first
    assert read_time("1d", now, BERLIN) == "2026-10-25T23:50:00+01:00"  # 25 hours later, the same wall time


def test_a_weekday_on_that_weekday():
    monday_early = at("2026-12-07T08:00:00+01:00")  # a Monday
    assert read_time("mon 9:00", monday_early, BERLIN) == "2026-12-07T09:00:00+01:00"  # still ahead today
    assert read_time("周一 9:00", monday_early, BERLIN) == "2026-12-07T09:00:00+01:00"
    assert read_time("mon 7:00", monday_early, BERLIN) == "2026-12-14T07:00:00+01:00"  # gone today: next week
    assert read_time("mon", monday_early, BERLIN) == "2026-12-07T09:00:00+01:00"
    assert read_time("下周一", monday_early, BERLIN) == "2026-12-14T09:00:00+01:00"  # next week, never today
    assert read_time("next mon 9:00", monday_early, BERLIN) == "2026-12-14T09:00:00+01:00"
    monday_late = at("2026-12-07T23:50:00+01:00")
    assert read_time("mon", monday_late, BERLIN) == "2026-12-14T09:00:00+01:00"
    assert read_time("tomorrow 00:30", monday_late, BERLIN) == "2026-12-08T00:30:00+01:00"
    assert read_time("今天 23:55", monday_late, BERLIN) == "2026-12-07T23:55:00+01:00"


def test_the_zone_is_the_one_given_not_the_offset_of_now():
    now = at("2026-12-07T01:00:00+00:00")  # 09:00 in Shanghai, 02:00 in Berlin
    assert read_time("明天 9:00", now, "Asia/Shanghai") == "2026-12-08T09:00:00+08:00"
    assert read_time("明天 9:00", now, BERLIN) == "2026-12-08T09:00:00+01:00"
    assert read_time("2h", now, "Asia/Shanghai") == "2026-12-07T11:00:00+08:00"


def test_looking_back_for_a_since():
    now = at("2026-12-07T08:00:00+01:00")  # a Monday
    assert read_time("24h", now, BERLIN, past=True) == "2026-12-06T08:00:00+01:00"
    assert read_time("2h ago", now, BERLIN) == "2026-12-07T06:00:00+01:00"
    assert read_time("2小时前", now, BERLIN) == "2026-12-07T06:00:00+01:00"
    assert read_time("yesterday", now, BERLIN, past=True) == "2026-12-06T00:00:00+01:00"
    assert read_time("昨天", now, BERLIN, past=True) == "2026-12-06T00:00:00+01:00"
    assert read_time("mon", now, BERLIN, past=True) == "2026-12-07T00:00:00+01:00"
    assert read_time("fri 18:00", now, BERLIN, past=True) == "2026-12-04T18:00:00+01:00"
    assert read_time("2026-12-01", now, BERLIN, past=True) == "2026-12-01T00:00:00+01:00"


@pytest.mark.parametrize("phrase", ["soon", "xyz", "25:00", "2026-13-01", "tomorrow at noonish", "周八", "9", ""])
def test_what_is_no_time_names_the_accepted_forms(phrase):
    with pytest.raises(TimePhraseError) as raised:
        read_time(phrase, BEFORE_SPRING, BERLIN)
    message = str(raised.value)
    assert "tomorrow 09:00" in message and "明天 9:00" in message and "2h" in message and "ISO 8601" in message


def test_a_bad_zone_and_a_long_phrase_are_clear_errors():
    with pytest.raises(TimePhraseError, match="IANA"):
        read_time("2h", BEFORE_SPRING, "Mars/Olympus")
    with pytest.raises(TimePhraseError, match="at most 64"):
        read_time("2h " * 40, BEFORE_SPRING, BERLIN)
