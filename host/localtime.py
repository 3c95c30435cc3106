"""Times as a person reads them: local (``[host] timezone``), in words, in ``[host] language``.

``HumanTime(language, zone, now)`` shows a stored instant the way people
write it: ``today 09:00``, ``tomorrow 18:30``, ``Tue 8 Dec 09:00`` (the year
only when it is not this year's); in Chinese ``今天 09:00``, ``12月8日 周二
09:00``. ``in_text`` finds the ISO 8601 instants inside a text written by a
program or an editor (a reason such as ``reminded later(2026-12-06T04:23:30+01:00)``)
and shows each of them the same way; the rest of the text is left as it is.
JSON never goes through here: it keeps instants as stored.

Pure: ``now`` is given (the Pinboard's clock), never read here.
"""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from fold_core.timefmt import instants_shown

__all__ = ["HumanTime"]

_EN_DAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
_EN_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
_ZH_DAYS = ("周一", "周二", "周三", "周四", "周五", "周六", "周日")
_RELATIVE = {"en": {-1: "yesterday", 0: "today", 1: "tomorrow"}, "zh": {-1: "昨天", 0: "今天", 1: "明天"}}


def _zone(name: str | None) -> ZoneInfo:
    try:
        return ZoneInfo(name or "UTC")
    except (ZoneInfoNotFoundError, ValueError):
        return ZoneInfo("UTC")


class HumanTime:
    """Instants in one zone and language, relative to ``now`` (an aware time)."""

    def __init__(self, language: str, zone: str | None, now: datetime | str | None = None) -> None:
        self.language = language if language in _RELATIVE else "en"
        self.zone = _zone(zone)
        if isinstance(now, str):
            now = _parse(now)
        self.today = now.astimezone(self.zone).date() if now is not None else None

    def __call__(self, instant: object) -> str:
        """``instant`` (ISO 8601 with an offset) in words; anything else as given (None: empty)."""
        if instant is None:
            return ""
        moment = _parse(instant) if isinstance(instant, str) else instant if isinstance(instant, datetime) else None
        if moment is None or moment.tzinfo is None:
            return str(instant)
        local = moment.astimezone(self.zone)
        return f"{self._day(local)} {local.strftime('%H:%M')}"  # people write minutes, not seconds

    def _day(self, local: datetime) -> str:
        if self.today is not None:
            offset = (local.date() - self.today).days
            word = _RELATIVE[self.language].get(offset)
            if word is not None:
                return word
        same_year = self.today is not None and local.year == self.today.year
        if self.language == "zh":
            date = f"{local.month}月{local.day}日" if same_year else f"{local.year}年{local.month}月{local.day}日"
            return f"{date} {_ZH_DAYS[local.weekday()]}"
        date = f"{local.day} {_EN_MONTHS[local.month - 1]}" + ("" if same_year else f" {local.year}")
        return f"{_EN_DAYS[local.weekday()]} {date}"

    def in_text(self, text: object) -> str:
        """``text`` with every instant in it shown in words (a reason, a summary); None: empty."""
        if text is None:
            return ""
        return instants_shown(str(text), self)


def _parse(text: str) -> datetime | None:
    if not 10 < len(text) <= 64:
        return None
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00") if text.endswith("Z") else text)
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else None
