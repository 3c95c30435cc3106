"""What push notices from the clock and the sources' health, not from records (contract §12).

* **Deadlines** — an eligible item's ``due_at`` or its frame's ``decide_by``
  coming within ``remind_before`` of the host's clock (``context.now``):
  one reminder per deadline value (the key holds the instant), also in a
  cycle without records. A ``decide_by`` that falls inside the quiet hours
  is reminded ``remind_before`` earlier still, so the reminder does not
  wait behind them. A deadline already passed is not reminded.
* **Sources** — a source whose ``coverage`` status has been ``failed`` for
  ``alert_after`` (counted from its last successful poll, or from when push
  first saw it failing when it never succeeded) is announced once; its
  recovery once, when it was announced.

Also the clock arithmetic of quiet hours and digest times, in ``[host]
timezone``. ``deadlines`` and ``sources`` are dicts of the consumer's
memory, changed in place.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping, MutableMapping
from datetime import datetime, timedelta, timezone as dt_timezone
from typing import Any
from zoneinfo import ZoneInfo

from fold_core.plugin_api import ConsumerContext
from fold_core.timefmt import instant

from fold_consumers.items import walk_items

__all__ = ["Watch", "in_quiet_hours", "last_slot", "quiet_end"]

KEEP_PASSED = timedelta(days=2)  # a deadline key is forgotten this long after its deadline


def _minutes(quiet: str) -> tuple[int, int]:
    hours = [int(part) for part in re.split("[:-]", quiet)]
    return hours[0] * 60 + hours[1], hours[2] * 60 + hours[3]


def in_quiet_hours(quiet: str | None, now: str, timezone: str) -> bool:
    """Whether ``now`` falls in ``quiet`` (``"22:00-07:30"``, may cross midnight) in ``timezone``."""
    if not quiet:
        return False
    start, end = _minutes(quiet)
    local = instant(now).astimezone(ZoneInfo(timezone))
    minute = local.hour * 60 + local.minute
    return start <= minute < end if start < end else (minute >= start or minute < end)


def quiet_end(quiet: str | None, now: str, timezone: str) -> datetime | None:
    """When the quiet hours ``now`` falls in end (None outside them)."""
    if not quiet or not in_quiet_hours(quiet, now, timezone):
        return None
    _, end = _minutes(quiet)
    local = instant(now).astimezone(ZoneInfo(timezone))
    moment = local.replace(hour=end // 60, minute=end % 60, second=0, microsecond=0)
    return moment if moment > local else moment + timedelta(days=1)


def last_slot(times: list[str] | None, now: str, timezone: str) -> datetime | None:
    """The latest of the local ``times`` ("08:00") at or before ``now``."""
    if not times:
        return None
    local = instant(now).astimezone(ZoneInfo(timezone))
    found = []
    for text in times:
        hour, minute = int(text[:2]), int(text[3:])
        for days in (0, 1):
            day = (local - timedelta(days=days)).date()
            moment = datetime(day.year, day.month, day.day, hour, minute, tzinfo=ZoneInfo(timezone))
            if moment <= local:
                found.append(moment)
                break
    return max(found) if found else None


def _key(item: str, field: str, at: str) -> str:
    return f"deadline:{item}:{field}:{instant(at).astimezone(dt_timezone.utc).isoformat()}"


class Watch:
    """The deadlines and source alerts due at ``context.now`` (each once)."""

    def __init__(self, settings: Any, context: ConsumerContext, deadlines: MutableMapping[str, str],
                 sources: MutableMapping[str, dict]) -> None:
        self.settings, self.context, self.known, self.health = settings, context, deadlines, sources
        self.now = instant(context.now)

    @staticmethod
    def mark_answered(deadlines: MutableMapping[str, str], item: str, decide_by: str) -> None:
        """An answered decision is not reminded of."""
        deadlines[_key(item, "decide_by", decide_by)] = decide_by

    def deadlines(self, eligible: Callable[[Mapping[str, Any]], bool]) -> Iterator[dict]:
        for key in [key for key, at in self.known.items() if instant(at) < self.now - KEEP_PASSED]:
            del self.known[key]
        lead = self.settings.remind_before
        for view, _ in walk_items(self.context.state.document):
            if not eligible(view):
                continue
            frame = view.get("decision") or {}
            for field, at in (("due_at", view.get("due_at")), ("decide_by", frame.get("decide_by"))):
                if not at:
                    continue
                moment = instant(at)
                ahead = lead
                if field == "decide_by" and in_quiet_hours(self.settings.quiet_hours, at, self.context.timezone):
                    ahead = lead * 2
                key = _key(view["id"], field, at)
                if not self.now < moment <= self.now + ahead or key in self.known:
                    continue
                self.known[key] = at
                yield {"item": view["id"], "view": view, "key": key, "deadline": {"field": field, "at": at}}

    def sources(self) -> Iterator[dict]:
        now_text = self.context.now
        for entry in self.context.coverage:
            name = entry.get("source")
            if not isinstance(name, str):
                continue
            seen = dict(self.health.get(name) or {})
            if entry.get("status") == "failed":
                since = seen.get("since") or entry.get("last_ok_at") or now_text
                seen["since"] = since
                if not seen.get("alerted") and self.now - instant(since) >= self.settings.alert_after:
                    seen["alerted"] = True
                    yield {"key": f"source:{name}:{since}:failing", "rules": ["source_failing"], "source": name,
                           "since": since, "error": entry.get("error"), "at": now_text}
                self.health[name] = seen
            elif entry.get("status") == "ok":
                if seen.get("alerted"):
                    yield {"key": f"source:{name}:{seen['since']}:recovered", "rules": ["source_recovered"],
                           "source": name, "since": seen["since"], "at": now_text}
                self.health.pop(name, None)
