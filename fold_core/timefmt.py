"""Instants and compact durations (contract §1 "times", §2 "time projection").

Times are ISO 8601 instants that carry an offset (``Z`` or ``±hh:mm``); a naive
time is not an instant. They are stored exactly as given and compared as
instants. An instant is accepted only when its UTC instant lies between
``EARLIEST_INSTANT`` and ``LATEST_INSTANT`` (contract §1 "times"): a day inside
the years Python can hold, so it stays representable and formattable under any
offset (a year-1 time at ``+14:00`` has no UTC instant Python can hold). Durations are rendered as signed compact strings: the largest two
non-zero units of ``d``, ``h``, ``m``, truncated toward zero (``"2d3h"``,
``"-20h30m"``, ``"2d5m"``, ``"0m"``).

Pure functions: nothing here reads a clock.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import datetime, timezone
from functools import lru_cache

__all__ = ["EARLIEST_INSTANT", "INSTANT_IN_TEXT", "LATEST_INSTANT", "compact_duration", "duration_between", "instant",
           "instant_key", "instant_key_once", "instants_shown", "parse_instant"]

# An instant with its offset inside a text (a reason, a summary, a doctor detail), as stores and editors write them.
INSTANT_IN_TEXT = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:\d{2})")


# A day of margin at each end: any offset (always under 24 h) keeps the instant inside
# datetime's range, so converting it to a reader's zone never overflows.
EARLIEST_INSTANT = datetime(1, 1, 2, tzinfo=timezone.utc)
LATEST_INSTANT = datetime(9999, 12, 30, 23, 59, 59, 999999, tzinfo=timezone.utc)


def parse_instant(text: object) -> datetime | None:
    """The aware datetime for ``text``, or None when it is not an instant with an offset."""
    if not isinstance(text, str) or not 10 < len(text) <= 64:
        return None
    return _parse_text(text)


def _parse_uncached(text: str) -> datetime | None:
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    if moment.tzinfo is None or moment.utcoffset() is None:
        return None
    try:
        utc = moment.astimezone(timezone.utc)
    except (OverflowError, ValueError):  # the UTC instant is outside the years Python can hold
        return None
    if not EARLIEST_INSTANT <= utc <= LATEST_INSTANT:
        return None
    return moment


_parse_text = lru_cache(maxsize=4096)(_parse_uncached)


def instant_key(text: str) -> float:
    """A sort key for a stored (valid) instant: seconds since the epoch."""
    moment = parse_instant(text)
    if moment is None:  # stored times were validated; keep sorting total anyway
        return float("inf")
    return moment.timestamp()


def instant_key_once(text: str) -> float:
    """``instant_key(text)`` without the parse cache: for the many times a caller keys once
    each (its own table keeps them), where the cache would only evict what others reuse."""
    moment = _parse_uncached(text) if isinstance(text, str) and 10 < len(text) <= 64 else None
    if moment is None:
        return float("inf")
    return moment.timestamp()


def duration_between(later: str | None, earlier: str | None) -> str | None:
    """``later − earlier`` as a compact duration, or None when either is missing."""
    if later is None or earlier is None:
        return None
    return _duration(later, earlier)


@lru_cache(maxsize=4096)  # a state read asks for four per item, most of them the same from read to read
def _duration(later: str, earlier: str) -> str | None:
    a, b = parse_instant(later), parse_instant(earlier)
    if a is None or b is None:
        return None
    delta = a - b
    return compact_duration(delta.days * 86400 + delta.seconds, delta.microseconds)


def compact_duration(seconds: int, microseconds: int = 0) -> str:
    """Render a signed span of time as the largest two non-zero units of d/h/m.

    ``seconds``/``microseconds`` follow timedelta's normalisation (microseconds
    are non-negative), so the exact span is ``seconds + microseconds / 1e6``.
    Truncation is toward zero: −59 s is ``"0m"``, not ``"-1m"``.
    """
    total_us = seconds * 1_000_000 + microseconds
    negative = total_us < 0
    minutes = abs(total_us) // 60_000_000
    if minutes == 0:
        return "0m"
    days, rest = divmod(minutes, 1440)
    hours, mins = divmod(rest, 60)
    parts = [f"{value}{unit}" for value, unit in ((days, "d"), (hours, "h"), (mins, "m")) if value]
    return ("-" if negative else "") + "".join(parts[:2])


def instant(text: str) -> datetime:
    """The aware datetime of ``text``, which must be an instant with an offset (``ValueError`` otherwise)."""
    moment = parse_instant(text)
    if moment is None:
        raise ValueError(f"expected an instant with an offset, found {text!r}")
    return moment


def instants_shown(text: str, show: Callable[[str], str]) -> str:
    """``text`` with every instant in it replaced by ``show(instant)`` (the rest left as it is)."""
    return INSTANT_IN_TEXT.sub(lambda found: show(found.group(0)), text)
