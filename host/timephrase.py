"""Times as people write them: ``2h``, ``tomorrow 09:00``, ``mon 9:00``, ``2026-12-08``, ``明天 9:00``, ``下周一``.

One reader for every place a person gives a time — ``foldctl feedback
--until``, ``foldctl calls --since``, the Pinboard's reminder time and the MCP
``fold_feedback`` tool's ``until`` — so the same words mean the same instant
everywhere. A phrase is read against a given ``now`` in a given IANA time zone
(``[host] timezone``); nothing here reads a clock. The answer is an ISO 8601
instant with the zone's offset at that moment, which the callers show back
("read '2h' as …").

What is read (case and full-width forms do not matter):

* an ISO 8601 instant with an offset — kept exactly as written;
* a duration from now: ``2h``, ``30m``, ``1h30m``, ``2d``, ``1w``, ``90 min``,
  ``2 hours``, ``in 2h``, ``2小时``, ``30分钟``, ``3天后``, ``半小时``; hours and
  minutes are elapsed time (across a DST change too), days and weeks keep the
  wall-clock time;
* a day, optionally with a time: ``today``, ``tomorrow``, ``day after
  tomorrow``, ``yesterday``, ``今天``, ``明天``, ``后天``, ``昨天``, ``前天``, a
  weekday (``mon``, ``monday``, ``周一``, ``星期一``, ``礼拜一``; ``next mon`` and
  ``下周一`` are the Monday of next week), or a date ``2026-12-08``;
* a time of day: ``9:00``, ``09:00``, ``9am``, ``9:30pm``, ``9点``, ``9点半``,
  ``9点30分``, ``下午3点``, ``晚上8点``, ``九点`` (after a day, a bare hour ``9`` too).

Looking forward (``past=False``, for a reminder) a weekday or a time alone is
its next occurrence after ``now`` (``mon 9:00`` on a Monday at 08:00 is that
same morning) and a day without a time is 09:00; looking back (``past=True``,
for a "since") durations count back, a weekday or time alone is its latest
occurrence at or before ``now``, and a day without a time is its midnight.
A wall-clock time that a DST change skips is read one hour later (02:30 on
the spring-forward night in Berlin is 03:30 CEST); one that occurs twice is
its first occurrence.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta, timezone
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from fold_core.timefmt import parse_instant

__all__ = ["ACCEPTED", "PHRASE_LIMIT", "TimePhraseError", "read_time"]

PHRASE_LIMIT = 64  # characters: what any of the forms needs, with room
ACCEPTED = ("2h, 30m, 1h30m, 2d, 1w (from now), tomorrow 09:00, mon 9:00, next mon, 2026-12-08, "
            "2026-12-08 14:30, 9pm, 明天 9:00, 后天, 周一 9:00, 下周一 上午10点, 3天后, "
            "or an ISO 8601 instant with an offset like 2026-12-08T09:00:00+01:00")
MORNING, MIDNIGHT = time(9, 0), time(0, 0)


class TimePhraseError(ValueError):
    """A phrase that is not a time this module reads; the message lists the accepted forms."""


@dataclass(frozen=True)
class _Day:
    kind: str  # "date" (a fixed date), "offset" (days from today), "weekday", "next-weekday"
    value: object


_UNITS = {"w": "w", "wk": "w", "wks": "w", "week": "w", "weeks": "w", "周": "w", "星期": "w", "个星期": "w",
          "个礼拜": "w", "礼拜": "w",
          "d": "d", "day": "d", "days": "d", "天": "d",
          "h": "h", "hr": "h", "hrs": "h", "hour": "h", "hours": "h", "小时": "h", "个小时": "h", "钟头": "h",
          "个钟头": "h",
          "m": "m", "min": "m", "mins": "m", "minute": "m", "minutes": "m", "分钟": "m", "分": "m"}
_UNIT = "|".join(sorted((re.escape(unit) for unit in _UNITS), key=len, reverse=True))
_PART = re.compile(rf"(\d+(?:\.\d+)?)\s*({_UNIT})")
_AFTER, _BEFORE = ("later", "from now", "后", "之后", "以后"), ("ago", "前", "之前", "以前")
_DURATION = re.compile(rf"(?:in\s*)?((?:\d+(?:\.\d+)?\s*(?:{_UNIT})\s*)+)({'|'.join(_AFTER + _BEFORE)})?")
_HALF_HOUR = re.compile(r"(?:in\s*)?(?:half an hour|半个?小时)(后|之后|以后|前|之前|以前)?")

_WEEKDAYS_EN = {"mon": 0, "monday": 0, "tue": 1, "tues": 1, "tuesday": 1, "wed": 2, "wednesday": 2, "thu": 3,
                "thur": 3, "thurs": 3, "thursday": 3, "fri": 4, "friday": 4, "sat": 5, "saturday": 5, "sun": 6,
                "sunday": 6}
_WEEKDAYS_ZH = {"一": 0, "二": 1, "三": 2, "四": 3, "五": 4, "六": 5, "日": 6, "天": 6}
_OFFSETS = {"today": 0, "tomorrow": 1, "tmr": 1, "day after tomorrow": 2, "yesterday": -1, "今天": 0, "今日": 0,
            "明天": 1, "明日": 1, "后天": 2, "大后天": 3, "昨天": -1, "前天": -2}
_DAY = re.compile(
    r"(?P<date>(?P<y>\d{4})[-/.](?P<mo>\d{1,2})[-/.](?P<d>\d{1,2}))(?:t|\b|(?=\s)|$)"
    r"|(?P<offset>day after tomorrow|tomorrow|tmr|today|yesterday|大后天|今天|今日|明天|明日|后天|昨天|前天)"
    r"|(?P<zhnext>下个?)?(?:周|星期|礼拜)(?P<zhday>[一二三四五六日天])"
    rf"|(?P<ennext>next\s+)?(?P<enday>{'|'.join(sorted(_WEEKDAYS_EN, key=len, reverse=True))})\b")
_NUMERALS = {"零": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9,
             "十": 10, "十一": 11, "十二": 12}
_PERIOD = r"上午|早上|早晨|早|中午|下午|晚上|傍晚|凌晨|今晚"
_TIME = re.compile(
    rf"(?:at\s*)?(?P<period>{_PERIOD})?\s*(?P<h>\d{{1,2}}|十[一二]?|[零一二两三四五六七八九])"
    r"(?:\s*(?::(?P<m>\d{2})(?::(?P<s>\d{2}))?"  # 9:30, 9:30:15
    r"|点(?:(?P<half>半)|(?P<zm>\d{1,2})分?|钟)?|时(?:(?P<zm2>\d{1,2})分)?))?"  # 9点, 9点半, 9点30分, 9时30分
    r"\s*(?P<ampm>am|pm|a\.m\.|p\.m\.)?")
_NOON = re.compile(r"noon|中午")


def read_time(text: str, now: datetime, zone: str, *, past: bool = False) -> str:
    """The instant ``text`` means, read at ``now`` in ``zone``, as ISO 8601 with the zone's offset.

    :param past: read it looking back (a "since"): durations count back, a weekday is the latest one.
    :raises TimePhraseError: the phrase is none of the accepted forms (the message lists them).
    """
    if not isinstance(text, str) or not text.strip():
        raise TimePhraseError(f"write when; accepted: {ACCEPTED}")
    if len(text) > PHRASE_LIMIT:
        raise TimePhraseError(f"a time holds at most {PHRASE_LIMIT} characters; got {len(text)}")
    if parse_instant(text.strip()) is not None:
        return text.strip()  # an ISO instant stays exactly as written, as before phrases were read
    try:
        tz = ZoneInfo(zone)
    except (ZoneInfoNotFoundError, ValueError):
        raise TimePhraseError(f"the time zone {zone!r} is not an IANA zone name") from None
    phrase = " ".join(unicodedata.normalize("NFKC", text).lower().replace("：", ":").split())
    local_now = now.astimezone(tz)
    when = _duration(phrase, local_now, past)
    if when is None:
        when = _day_and_time(phrase, local_now, tz, past)
    if when is None:
        raise TimePhraseError(f"cannot read {text.strip()!r} as a time (read in {zone}); accepted: {ACCEPTED}")
    return when.astimezone(tz).replace(microsecond=0).isoformat()


def _duration(phrase: str, now: datetime, past: bool) -> datetime | None:
    half = _HALF_HOUR.fullmatch(phrase)
    if half is not None:
        back = past or half.group(1) in _BEFORE
        return _shift(now, {"m": -30.0 if back else 30.0})
    match = _DURATION.fullmatch(phrase)
    if match is None:
        return None
    back = past or match.group(2) in _BEFORE
    amounts: dict[str, float] = {}
    for number, unit in _PART.findall(match.group(1)):
        key = _UNITS[unit]
        amounts[key] = amounts.get(key, 0.0) + float(number) * (-1 if back else 1)
    return _shift(now, amounts)


def _shift(now: datetime, amounts: dict[str, float]) -> datetime:
    # Days and weeks move the calendar (the same wall-clock time), hours and minutes the clock.
    days = amounts.get("d", 0.0) + 7 * amounts.get("w", 0.0)
    whole = int(days)
    moved = _at(now.date() + timedelta(days=whole), now.timetz().replace(tzinfo=None), now.tzinfo)
    elapsed = timedelta(days=days - whole, hours=amounts.get("h", 0.0), minutes=amounts.get("m", 0.0))
    return (moved.astimezone(timezone.utc) + elapsed).astimezone(now.tzinfo)


def _at(day: date, clock: time, tz) -> datetime:
    """``day`` at wall-clock ``clock`` in ``tz``: a skipped time moves on by the gap, a repeated one is the first."""
    naive = datetime.combine(day, clock)
    first = naive.replace(tzinfo=tz, fold=0)
    return first.astimezone(timezone.utc).astimezone(tz)  # round trip: a skipped 02:30 becomes 03:30


def _day_and_time(phrase: str, now: datetime, tz, past: bool) -> datetime | None:
    day, rest = _read_day(phrase)
    clock = _read_clock(rest.strip(), bare_hour=day is not None)
    if clock is None or (day is None and clock is _NO_TIME):
        return None
    today = now.date()
    if day is None:  # a time alone: its next (or latest) occurrence
        return _nearest(lambda d: True, clock, now, tz, past)
    at_time = (MIDNIGHT if past else MORNING) if clock is _NO_TIME else clock
    if day.kind == "date":
        assert isinstance(day.value, date)
        return _at(day.value, at_time, tz)
    if day.kind == "offset":
        assert isinstance(day.value, int)
        return _at(today + timedelta(days=day.value), at_time, tz)
    assert isinstance(day.value, int)
    weekday = day.value
    if day.kind == "next-weekday":  # the weekday of next calendar week (Monday to Sunday)
        monday = today - timedelta(days=today.weekday()) + timedelta(days=7)
        return _at(monday + timedelta(days=weekday), at_time, tz)
    return _nearest(lambda d: d.weekday() == weekday, at_time, now, tz, past)


def _nearest(fits, clock: time, now: datetime, tz, past: bool) -> datetime | None:
    step = -1 if past else 1
    for days in range(0, 8 * step, step):
        day = now.date() + timedelta(days=days)
        if not fits(day):
            continue
        when = _at(day, clock, tz)
        if (when <= now) if past else (when > now):
            return when
    return None


def _read_day(phrase: str) -> tuple[_Day | None, str]:
    match = _DAY.match(phrase)
    if match is None:
        return None, phrase
    rest = phrase[match.end():]
    if match.group("date"):
        try:
            value = date(int(match.group("y")), int(match.group("mo")), int(match.group("d")))
        except ValueError:
            return None, phrase
        return _Day("date", value), rest
    if match.group("offset"):
        return _Day("offset", _OFFSETS[match.group("offset")]), rest
    if match.group("zhday"):
        kind = "next-weekday" if match.group("zhnext") else "weekday"
        return _Day(kind, _WEEKDAYS_ZH[match.group("zhday")]), rest
    kind = "next-weekday" if match.group("ennext") else "weekday"
    return _Day(kind, _WEEKDAYS_EN[match.group("enday")]), rest


_NO_TIME = time(0, 0, 0, 1)  # a marker: the phrase names a day only


def _read_clock(rest: str, *, bare_hour: bool) -> time | None:
    if not rest:
        return _NO_TIME
    if _NOON.fullmatch(rest):
        return time(12, 0)
    match = _TIME.fullmatch(rest)
    if match is None:
        return None
    hour_text = match.group("h")
    hour = int(hour_text) if hour_text.isdigit() else _NUMERALS.get(hour_text)
    minute_text = match.group("m") or match.group("zm") or match.group("zm2")
    minute = 30 if match.group("half") else int(minute_text or 0)
    second = int(match.group("s") or 0)
    marked = match.group("m") or "点" in rest or "时" in rest or match.group("ampm") or match.group("period")
    if hour is None or not (marked or bare_hour):
        return None
    ampm, period = match.group("ampm"), match.group("period")
    if ampm is not None:
        if not 1 <= hour <= 12:
            return None
        hour = hour % 12 + (12 if ampm.startswith("p") else 0)
    elif period in ("下午", "晚上", "傍晚", "今晚") and hour < 12:
        hour += 12
    elif period == "中午" and hour < 6:
        hour += 12
    if not (0 <= hour <= 23 and 0 <= minute <= 59 and 0 <= second <= 59):
        return None
    return time(hour, minute, second)
