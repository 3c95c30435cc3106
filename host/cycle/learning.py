"""What the host learns from the user's feedback, handed to the editor as ``user.learned`` (contract §9).

A sender or a thread whose items the user keeps snoozing or only
acknowledging matters less to them than its words say; one whose items the
user acts on matters more. The host counts, the editor judges:

* ``learning_for(db, item, refs, meaning, now)`` — what one feedback on an
  item notes: the senders (``sender_key`` of ``from``) and threads of the
  observations the item rests on; ``input`` (the user gives the editor new
  facts) clears their counts instead — a fresh start;
* ``learned_for(db, now)`` — the counts of the last ``LEARN_DAYS`` days, at
  most ``MAX_LEARNED`` entries, the most counted first:
  ``{"sender": "a@b.example" | "thread": "…", "snoozed", "acknowledged",
  "acted", "last"}``. ``snoozed`` and ``acknowledged`` count only feedback no
  later ``act`` or ``decide`` on the same item answered.
"""

from __future__ import annotations

from datetime import timedelta, timezone

from fold_core.observation import KEY_LIMIT, sender_key
from fold_core.timefmt import instant
from fold_host.hostdb import HostDB

__all__ = ["LEARN_DAYS", "MAX_LEARNED", "learned_for", "learning_for"]

LEARN_DAYS = 90
MAX_LEARNED = 50
_NOTED = ("ack", "snooze", "act", "decide")


def _utc(now: str) -> str:
    return instant(now).astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def learning_for(db: HostDB, item: str, refs, meaning: str, now: str) -> dict | None:
    """The ``learning`` part of ``HostDB.add_feedback`` for one feedback, or None when it teaches nothing."""
    if meaning not in _NOTED and meaning != "input":
        return None
    keys: dict[tuple[str, str], None] = {}
    for sender, thread in db.observations_about(item, refs):
        address = sender_key(sender)
        if address:
            keys[("sender", address)] = None
        if isinstance(thread, str) and thread.strip() and len(thread) <= KEY_LIMIT:
            keys[("thread", thread)] = None
    if not keys:
        return None
    return {"at": _utc(now), "before": _since(now), "item": item, "meaning": meaning, "keys": list(keys),
            "forget": meaning == "input"}


def _since(now: str) -> str:
    return (instant(now) - timedelta(days=LEARN_DAYS)).astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def learned_for(db: HostDB, now: str) -> list[dict]:
    """``user.learned`` at ``now``: the counts of the last ``LEARN_DAYS`` days (older feedback is dropped)."""
    return db.learned(_since(now), MAX_LEARNED)
