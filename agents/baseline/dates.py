"""Dates and deadlines in a message's words, zh and en: the baseline editor's small grammar.

``find_dates(text, anchor)`` finds the dates a person would read in a message
("10 月 12 日 18:00 前", "12 日前", "本周五", "明天上午", "三天内", "by Friday",
"Oct 12", "12 October 2026", "tomorrow 5pm", "2026-10-12") and resolves each to
an instant relative to ``anchor``: the message's own date (a "tomorrow" written
yesterday is today), in the timezone of the host's ``now``. A date whose year
is not written is the one nearest the anchor; a date without a time of day is
due at the end of that day (``上午`` at noon, ``下午`` / ``下班前`` at 18:00).

Each ``Mention`` says whether it is *firm* — a deadline marker next to it
("前", "之前", "截止", "最后还款日", "by", "before", "due", "no later than") —
and where it sits in the text, so the caller can tell a deadline from a
meeting or travel date. Pure functions of their arguments: no clock, no
locale, no I/O (a general date library read "10月12日18点" as a date a year
away and "12 日前" as "12 days ago", see ``docs/decisions.md``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta

__all__ = ["Mention", "cn_number", "find_dates"]

_CN = {"零": 0, "〇": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9}
_N = r"(?:\d{1,2}|[一二两三四五六七八九十]{1,3})"
_MONTHS = {"jan": 1, "feb": 2, "mar": 3, "apr": 4, "may": 5, "jun": 6, "jul": 7, "aug": 8, "sep": 9, "oct": 10,
           "nov": 11, "dec": 12}
_MONTH = (r"(jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sept?(?:ember)?"
          r"|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?")
_WEEKDAYS_EN = {"mon": 0, "tue": 1, "wed": 2, "thu": 3, "fri": 4, "sat": 5, "sun": 6}
_WEEKDAYS_ZH = {"一": 0, "二": 1, "三": 2, "四": 3, "五": 4, "六": 5, "日": 6, "天": 6, "末": 6}
_END_OF_DAY = time(23, 59)

_DATE_PATTERNS = (
    ("iso", re.compile(r"(?<!\d)(20\d\d)[-/.](\d{1,2})[-/.](\d{1,2})(?:[T ](\d{1,2}):(\d{2}))?(?!\d)")),
    ("zh_md", re.compile(rf"(?:(20\d\d)\s*年\s*)?({_N})\s*月\s*({_N})\s*[日号]")),
    ("zh_week", re.compile(r"(下下|下|本|这|上)?\s*(?:个)?(?:周|星期|礼拜)([一二三四五六日天末1-7])")),
    ("zh_rel", re.compile(r"(大后天|后天|明天|明日|明早|明晚|今天|今日|今晚|今早|今夜|当天|当日)")),
    ("zh_hours", re.compile(rf"({_N}|\d{{1,3}})\s*(?:个)?(?:小时|钟头)\s*(?:之内|以内|内)")),
    ("en_hours", re.compile(r"\b(?:within|in)\s+(\d{1,3}|one|two|three|four|five|seven|ten|fourteen)\s+hours?\b",
                            re.IGNORECASE)),
    ("zh_within", re.compile(rf"({_N}|\d{{1,3}})\s*(?:个)?(工作日|天|日|周|星期|礼拜)\s*(?:之内|以内|内)")),
    ("zh_month_end", re.compile(r"(本月|这个月|当月|月)\s*(?:底|末)")),
    ("zh_day", re.compile(r"(?<![\d月周期拜今明后昨节生作当])(\d{1,2})\s*[日号](?![内期常元])")),
    ("en_md", re.compile(rf"\b{_MONTH}\s+(\d{{1,2}})(?:st|nd|rd|th)?\b(?:,?\s*(20\d\d))?", re.IGNORECASE)),
    ("en_dm", re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTH}\b(?:,?\s*(20\d\d))?", re.IGNORECASE)),
    ("en_week", re.compile(r"\b((?i:this|next|coming)\s+)?((?i:mon|tues|wednes|thurs|fri|satur|sun)(?i:day)"
                           r"|Mon|Tue|Tues|Wed|Thu|Thur|Thurs|Fri|Sat|Sun)\b\.?")),
    ("en_rel", re.compile(r"\b(the day after tomorrow|tomorrow|tmrw|today|tonight|end of (?:the )?day|eod|cob"
                          r"|end of (?:the )?week|eow|end of (?:the )?month|this weekend)\b", re.IGNORECASE)),
    ("en_within", re.compile(r"\b(?:within|in)\s+(\d{1,3}|one|two|three|four|five|seven|ten|fourteen)\s+"
                             r"(business days?|working days?|days?|weeks?)\b", re.IGNORECASE)),
)
_EN_NUMBERS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "seven": 7, "ten": 10, "fourteen": 14}

_ZH_TIME = re.compile(rf"\s*[（(]?\s*(?:周.|星期.)?\s*[)）]?\s*(上午|早上|早晨|中午|下午|傍晚|晚上|凌晨|早|晚)?\s*"
                      rf"(?:({_N})\s*(?:[:：]\s*(\d{{2}})|点\s*(?:(半)|(\d{{1,2}})\s*分?)?|时))?")
_ZH_PERIOD_ONLY = re.compile(r"\s*(上午|早上|中午|下午|傍晚|晚上|下班|午饭|中饭)")
_EN_TIME = re.compile(r"\s*(?:,\s*)?(?:at\s+|by\s+|before\s+)?(?:(\d{1,2})(?::(\d{2}))?\s*(a\.?m\.?|p\.?m\.?)\b"
                      r"|(\d{1,2}):(\d{2})\b|(noon|midnight|end of (?:the )?day|eod|cob))", re.IGNORECASE)
_EN_TIME_BEFORE = re.compile(r"(?:(\d{1,2})(?::(\d{2}))?\s*(a\.?m\.?|p\.?m\.?)|(\d{1,2}):(\d{2}))\s*(?:on\s+)?$",
                             re.IGNORECASE)
_AFTER_MARK = re.compile(r"[^，。；;,\n]{0,6}?(?:之前|以前|前|为止|截止|到期|之内|以内)"
                         r"|\s*(?:at the latest|latest|or earlier|deadline)\b", re.IGNORECASE)
_BEFORE_MARK = re.compile(r"(?:截止|截至|最后还款日|还款日|缴费日|到期日|期限|最迟|最晚|不晚于|务必于|务必在|请于|须于|需于|应于"
                          r"|\bby|\bbefore|\bdue(?:\s+(?:on|by|date))?|\bdeadline(?:\s+is)?|\bno later than|\buntil"
                          r"|\btill|\bexpires?(?:\s+on)?|\bcloses?(?:\s+on)?|\bends?(?:\s+on)?|\bdue date(?:\s+is)?)"
                          r"[^，。；;,.\n]{0,10}$", re.IGNORECASE)


@dataclass(frozen=True)
class Mention:
    """One date in the text, resolved."""

    at: datetime
    start: int
    end: int
    firm: bool  # a deadline marker stands next to it
    timed: bool  # the text gave a time of day


def cn_number(text: str) -> int | None:
    """``"12"``, ``"十二"``, ``"二十三"``, ``"三十一"``, ``"两"`` → the number; None when it is not one."""
    if text.isdigit():
        return int(text)
    if not text or any(ch not in _CN and ch != "十" for ch in text):
        return None
    if "十" not in text:
        return _CN[text] if len(text) == 1 else None
    tens, _, ones = text.partition("十")
    if len(tens) > 1 or len(ones) > 1:
        return None
    return (_CN[tens] if tens else 1) * 10 + (_CN[ones] if ones else 0)


def find_dates(text: str, anchor: datetime) -> list[Mention]:
    """Every date in ``text`` resolved against ``anchor`` (aware), in text order, overlaps removed."""
    if not text:
        return []
    found: list[Mention] = []
    taken: list[tuple[int, int]] = []
    for name, pattern in _DATE_PATTERNS:
        for match in pattern.finditer(text):
            if any(match.start() < end and start < match.end() for start, end in taken):
                continue
            if name in ("zh_hours", "en_hours"):
                word = match.group(1)
                hours = cn_number(word) if name == "zh_hours" else (
                    int(word) if word.isdigit() else _EN_NUMBERS[word.lower()])
                if hours is None or hours > 24 * 31:
                    continue
                at, end, timed = (anchor + timedelta(hours=hours)).replace(second=0, microsecond=0), match.end(), True
            else:
                day = _resolve(name, match, anchor.date())
                if day is None:
                    continue
                clock, end, timed = _time_after(text, match, name, day)
                at = datetime.combine(day, clock, tzinfo=anchor.tzinfo)
            firm = bool(_AFTER_MARK.match(text, end) or _BEFORE_MARK.search(text[max(0, match.start() - 24):
                                                                                 match.start()])
                        or name in ("zh_within", "en_within", "zh_hours", "en_hours"))
            taken.append((match.start(), end))
            found.append(Mention(at, match.start(), end, firm, timed))
    return sorted(found, key=lambda m: m.start)


def _resolve(name: str, match: re.Match, today: date) -> date | None:
    groups = match.groups()
    try:
        if name == "iso":
            return date(int(groups[0]), int(groups[1]), int(groups[2]))
        if name == "zh_md":
            month, day = cn_number(groups[1]), cn_number(groups[2])
            return _month_day(today, month, day, int(groups[0]) if groups[0] else None)
        if name in ("en_md", "en_dm"):
            month_text, day_text = (groups[0], groups[1]) if name == "en_md" else (groups[1], groups[0])
            return _month_day(today, _MONTHS[month_text[:3].lower()], int(day_text),
                              int(groups[2]) if groups[2] else None)
        if name == "zh_day":
            return _day_of_month(today, int(groups[0]))
        if name == "zh_week":
            return _weekday(today, _WEEKDAYS_ZH.get(groups[1], (int(groups[1]) - 1) if groups[1].isdigit() else 0),
                            {"下": "next", "下下": "after-next", "本": "this", "这": "this", "上": "last"}.get(
                                groups[0] or "", ""))
        if name == "en_week":
            return _weekday(today, _WEEKDAYS_EN[groups[1][:3].lower()], (groups[0] or "").strip().lower())
        if name in ("zh_rel", "en_rel"):
            return _relative(today, groups[0].lower())
        if name == "zh_month_end":
            return _month_end(today)
        if name in ("zh_within", "en_within"):
            count = cn_number(groups[0]) if name == "zh_within" else (
                int(groups[0]) if groups[0].isdigit() else _EN_NUMBERS[groups[0].lower()])
            business = groups[1].startswith(("工作", "business", "working", "Business", "Working"))
            if groups[1] in ("周", "星期", "礼拜") or groups[1].lower().startswith("week"):
                count = count * 7 if count is not None else None
            return _add_days(today, count, business) if count is not None and count <= 366 else None
    except (ValueError, KeyError, TypeError):
        return None
    return None


def _month_day(today: date, month: int | None, day: int | None, year: int | None) -> date | None:
    if month is None or day is None or not 1 <= month <= 12 or not 1 <= day <= 31:
        return None
    if year is not None:
        return date(year, month, day)
    found = date(today.year, month, day) if day <= _days_in(today.year, month) else None
    if found is None:
        return None
    if found < today - timedelta(days=182):
        return date(today.year + 1, month, day) if day <= _days_in(today.year + 1, month) else None
    if found > today + timedelta(days=182):
        return date(today.year - 1, month, day) if day <= _days_in(today.year - 1, month) else None
    return found


def _day_of_month(today: date, day: int) -> date | None:
    if not 1 <= day <= 31:
        return None
    year, month = today.year, today.month
    if day < today.day:  # "12 日前" written on the 20th: the 12th of the next month
        year, month = (year + 1, 1) if month == 12 else (year, month + 1)
    return date(year, month, day) if day <= _days_in(year, month) else None


def _weekday(today: date, weekday: int, which: str) -> date:
    monday = today - timedelta(days=today.weekday())
    if which == "this":
        return monday + timedelta(days=weekday)
    if which == "next":
        return monday + timedelta(days=7 + weekday)
    if which == "after-next":
        return monday + timedelta(days=14 + weekday)
    if which == "last":
        return monday + timedelta(days=weekday - 7)
    return today + timedelta(days=(weekday - today.weekday()) % 7)  # the coming one (today counts)


def _relative(today: date, word: str) -> date:
    if word in ("大后天",):
        return today + timedelta(days=3)
    if word in ("后天", "the day after tomorrow"):
        return today + timedelta(days=2)
    if word in ("明天", "明日", "明早", "明晚", "tomorrow", "tmrw"):
        return today + timedelta(days=1)
    if word in ("end of the week", "end of week", "eow"):
        return today + timedelta(days=4 - today.weekday()) if today.weekday() <= 4 else today
    if word == "this weekend":
        return today + timedelta(days=6 - today.weekday())
    if word in ("end of the month", "end of month"):
        return _month_end(today)
    return today


def _month_end(today: date) -> date:
    return date(today.year, today.month, _days_in(today.year, today.month))


def _add_days(today: date, count: int, business: bool) -> date:
    if not business:
        return today + timedelta(days=count)
    day = today
    while count > 0:
        day += timedelta(days=1)
        count -= day.weekday() < 5
    return day


def _days_in(year: int, month: int) -> int:
    following = date(year + 1, 1, 1) if month == 12 else date(year, month + 1, 1)
    return (following - timedelta(days=1)).day


def _time_after(text: str, match: re.Match, name: str, day: date) -> tuple[time, int, bool]:
    """The time of day written with the date (after it, or before it in English), its end, whether given."""
    end = match.end()
    groups = match.groups()
    if name == "iso" and groups[3] is not None:
        return _clock(int(groups[3]), int(groups[4])), end, True
    word = (groups[0] or "").lower() if name in ("zh_rel", "en_rel") else ""
    if name.startswith("en") or name == "iso":
        timed = _EN_TIME.match(text, end)
        if timed and timed.group(0).strip():
            return _en_clock(timed), timed.end(), True
        before = _EN_TIME_BEFORE.search(text[max(0, match.start() - 16):match.start()])
        if before:
            return _en_clock(before), end, True
        if word in ("tonight",):
            return _END_OF_DAY, end, False
        if word in ("end of the day", "end of day", "eod", "cob"):
            return time(18, 0), end, True
        return _END_OF_DAY, end, False
    timed = _ZH_TIME.match(text, end)
    period = timed.group(1) if timed else None
    hour = cn_number(timed.group(2)) if timed and timed.group(2) else None
    if timed and hour is not None and hour <= 24:
        minute = 30 if timed.group(4) else int(timed.group(3) or timed.group(5) or 0)
        if period in ("下午", "傍晚", "晚上", "晚") and hour < 12:
            hour += 12
        elif period is None and 1 <= hour <= 6:
            hour += 12  # "5 点前" in a message is five in the afternoon
        return _clock(hour, minute), timed.end(), True
    only = _ZH_PERIOD_ONLY.match(text, end)
    part = (only.group(1) if only else None) or period or {"明早": "上午", "今早": "上午", "今晚": "晚上",
                                                           "明晚": "晚上"}.get(word)
    deadline_of = {"上午": time(12, 0), "早上": time(10, 0), "中午": time(12, 0), "午饭": time(12, 0),
                   "中饭": time(12, 0), "下午": time(18, 0), "傍晚": time(19, 0), "下班": time(18, 0)}
    if part in deadline_of:
        return deadline_of[part], (only.end() if only else (timed.end() if timed else end)), True
    return _END_OF_DAY, end, False


def _clock(hour: int, minute: int) -> time:
    if hour == 24:
        return _END_OF_DAY
    return time(min(hour, 23), min(minute, 59))


def _en_clock(found: re.Match) -> time:
    groups = found.groups()
    if len(groups) > 5 and groups[5]:
        word = groups[5].lower()
        return time(12, 0) if word == "noon" else (time(18, 0) if word in ("eod", "cob") or word.startswith("end")
                                                   else _END_OF_DAY)
    if groups[0] is not None:
        hour, minute = int(groups[0]), int(groups[1] or 0)
        meridiem = groups[2].lower().replace(".", "")
        if meridiem == "pm" and hour < 12:
            hour += 12
        elif meridiem == "am" and hour == 12:
            hour = 0
        return _clock(hour, minute)
    return _clock(int(groups[3]), int(groups[4]))
