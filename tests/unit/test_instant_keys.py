"""``instant_key_once`` (a snapshot keys tens of thousands of ``status_at`` texts once each) is
``instant_key`` without the parse cache: the same key for every text, valid or not."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from hypothesis import given, settings
from hypothesis import strategies as st

from fold_core.timefmt import instant_key, instant_key_once

MOMENTS = st.datetimes(min_value=datetime(1971, 1, 2), max_value=datetime(2200, 1, 1))
OFFSETS = st.integers(-14 * 60, 14 * 60).map(lambda minutes: timezone(timedelta(minutes=minutes)))


@st.composite
def spellings(draw) -> object:
    moment = draw(MOMENTS)
    kind = draw(st.sampled_from(["offset", "z", "naive", "date", "junk", "other"]))
    if kind == "offset":
        return moment.replace(tzinfo=draw(OFFSETS)).isoformat(timespec=draw(st.sampled_from(
            ["seconds", "milliseconds", "microseconds", "minutes"])))
    if kind == "z":
        return moment.replace(microsecond=0).isoformat() + "Z"
    if kind == "naive":
        return moment.isoformat()
    if kind == "date":
        return moment.date().isoformat()
    if kind == "junk":
        return draw(st.text(max_size=80))
    return draw(st.none() | st.integers() | st.just("2026-10-10T08:00:00+08:00" + " " * 50))


@settings(max_examples=1500, deadline=None)
@given(text=spellings())
def test_the_same_key_as_instant_key(text):
    expected = instant_key(text) if isinstance(text, str) else float("inf")
    assert instant_key_once(text) == expected


def test_offsets_count():
    assert instant_key_once("2026-10-10T08:00:00+08:00") == instant_key_once("2026-10-10T00:00:00Z")
    assert instant_key_once("2026-10-10T08:00:00") == float("inf")
