"""A new user's first run on a realistic mailbox, at the real clock: the must-see mail ends where it should.

The mailbox (``tests/fixtures/mailbox``: 52 mails of one week, a third in
English; promotions, phishing, newsletters, automated mail, threads, a
forward) is written relative to today and read through a maildir source by
the default editor, the whole mailbox taken on the first poll (more than one
window). Targets: at least 90% of the twelve must-see mails are items of the
expected kind at the expected weight or above; no promotion, phishing or
newsletter above low. The same holds whatever the day: a few fixed instants
(weekdays, a night, a month's and a year's end) are checked too.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pytest

from tests.fixtures.mailbox.score import first_run, outcomes, score


def _check(tmp_path: Path, anchor: datetime | None) -> dict:
    letters, reports = first_run(tmp_path, anchor)
    assert len(letters) == 52 and len(reports) >= 2  # more than one window: max_events is 50
    assert all(r["outcome"] == "committed" for r in reports), reports
    found = outcomes(tmp_path, letters, anchor)
    result = score(found)
    assert result["must_see"] == 12
    assert result["placed"] >= 11, result  # ≥ 90%
    assert result["loud_noise"] == [], result
    forward = next(o for o in found if o.letter.label == "duplicate")
    assert forward.disposition == "duplicate"  # a forward of the visa notice read in the same window
    assert all(o.disposition for o in found)  # every mail was read
    return result


def test_the_realistic_mailbox_at_the_real_clock(tmp_path):
    _check(tmp_path, None)


@pytest.mark.parametrize("anchor", ["2026-10-05T09:00:00+08:00", "2026-10-08T20:00:00+08:00",
                                    "2026-10-10T11:00:00+08:00", "2026-10-11T23:40:00+08:00",
                                    "2026-12-31T23:30:00+08:00", "2027-02-28T07:00:00+08:00"])
def test_the_realistic_mailbox_on_any_day(tmp_path, anchor):
    _check(tmp_path, datetime.fromisoformat(anchor))
