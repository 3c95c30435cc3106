"""Report periods: ISO weeks (``2026-W49``) and days (``2026-12-03``) in ``[host] timezone``.

A weekly period runs from Monday 00:00 to the next Monday 00:00 local time; a
daily one from 00:00 to 00:00. ``closed_period(every, at, now, tz)`` is the
latest period whose report is due at ``now``: the one that ended before the
most recent ``at`` (weekly: on a Monday) that has passed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from zoneinfo import ZoneInfo

from fold_core.errors import UsageError
from fold_core.timefmt import instant

__all__ = ["Period", "closed_period", "parse_period", "previous_period", "span"]

_WEEK = re.compile(r"^(\d{4})-W(\d{2})$")
_DAY = re.compile(r"^(\d{4})-(\d{2})-(\d{2})$")


@dataclass(frozen=True)
class Period:
    """A named span ``[since, until)``; ``name`` is None for an ad-hoc ``--since/--until`` span."""

    name: str | None
    since: datetime
    until: datetime

    def to_json(self, timezone: str) -> dict:
        return {"name": self.name, "since": self.since.isoformat(), "until": self.until.isoformat(),
                "timezone": timezone}


def _local(day: date, timezone: str) -> datetime:
    return datetime.combine(day, time(0, 0), tzinfo=ZoneInfo(timezone))


def parse_period(name: str, timezone: str) -> Period:
    """``2026-W49`` or ``2026-12-03`` as a period in ``timezone`` (``UsageError`` otherwise)."""
    week = _WEEK.match(name)
    try:
        if week:
            monday = date.fromisocalendar(int(week.group(1)), int(week.group(2)), 1)
            return Period(name, _local(monday, timezone), _local(monday + timedelta(days=7), timezone))
        day = _DAY.match(name)
        if day:
            start = date(int(day.group(1)), int(day.group(2)), int(day.group(3)))
            return Period(name, _local(start, timezone), _local(start + timedelta(days=1), timezone))
    except ValueError:
        pass
    raise UsageError(f"--period must be an ISO week like 2026-W49 or a day like 2026-12-03; got {name!r}")


def span(since: str, until: str) -> Period:
    """An ad-hoc period between two instants."""
    start, end = instant(since), instant(until)
    if end <= start:
        raise UsageError(f"--until must come after --since; got {since} .. {until}")
    return Period(None, start, end)


def _name(every: str, start: date) -> str:
    if every == "weekly":
        year, week, _ = start.isocalendar()
        return f"{year}-W{week:02d}"
    return start.isoformat()


def closed_period(every: str, at: str, now: str, timezone: str) -> Period | None:
    """The latest period whose report is due at ``now`` (None before the first ``at`` could pass)."""
    local = instant(now).astimezone(ZoneInfo(timezone))
    hour, minute = int(at[:2]), int(at[3:])
    day = local.date()
    for back in range(0, 8):
        candidate = day - timedelta(days=back)
        if every == "weekly" and candidate.isoweekday() != 1:
            continue
        moment = datetime.combine(candidate, time(hour, minute), tzinfo=ZoneInfo(timezone))
        if moment <= local:
            start = candidate - timedelta(days=7 if every == "weekly" else 1)
            return parse_period(_name(every, start), timezone)
    return None


def previous_period(period: Period, timezone: str) -> Period | None:
    """The named period just before ``period`` (None for an ad-hoc span)."""
    if period.name is None:
        return None
    local = period.since.astimezone(ZoneInfo(timezone)).date()
    if _WEEK.match(period.name):
        return parse_period(_name("weekly", local - timedelta(days=7)), timezone)
    return parse_period(_name("daily", local - timedelta(days=1)), timezone)
