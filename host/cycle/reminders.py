"""Reminders (contract §9 ``events[].reminder``).

A snooze saved through ``foldctl feedback --meaning snooze --until T`` (or
the Pinboard) is a row of the ``reminders`` table. When a cycle's clock
reaches ``until`` the reminder becomes one observation of channel
``reminder`` — ``{"feedback", "target", "requested_at"}`` — and goes to the
editor like any other event. It fires once: the observation id is derived
from the reminder id (a second firing is a deduplicated insert) and
``fired_at`` is set afterwards; a crash between the two fires nothing twice.
Reminders live in host.db, so they survive restarts.
"""

from __future__ import annotations

from datetime import datetime

from fold_core.observation import Observation
from fold_core.timefmt import instant
from fold_host.hostdb import HostDB

__all__ = ["REMINDER_SOURCE", "fire_due", "reminder_observation", "unfired"]

REMINDER_SOURCE = "reminder"


def unfired(db: HostDB) -> list[dict]:
    """Reminders that have not fired yet, soonest first."""
    return sorted(db.unfired_reminders(), key=lambda r: (instant(r["due_at"]).timestamp(), r["id"]))


def reminder_observation(reminder: dict, *, now_text: str) -> Observation:
    """The ``reminder`` observation a due reminder becomes."""
    return Observation(
        id=f"{REMINDER_SOURCE}:{reminder['id']}", source=REMINDER_SOURCE, channel="reminder", sender="fold",
        at=reminder["due_at"], observed_at=now_text, title=f"reminder: {reminder['target']}",
        text=f"The user asked at {reminder['requested_at']} to be reminded of {reminder['target']} now.",
        reminder={"feedback": reminder["feedback"], "target": reminder["target"],
                  "requested_at": reminder["requested_at"]})


def fire_due(db: HostDB, now: datetime, now_text: str) -> int:
    """Turn every reminder due at ``now`` into its observation; the number fired."""
    fired = 0
    for reminder in unfired(db):
        if instant(reminder["due_at"]) > now:
            break
        fired += db.add_observations([reminder_observation(reminder, now_text=now_text)])
        db.reminder_fired(reminder["id"], now=now_text)
    return fired
