"""What the baseline editor takes from ``user.learned``: the user's own habits with a sender or a thread.

The host counts feedback per sender and thread (contract §9 ``user.learned``);
the baseline reads the counts of a message's thread, else of its sender:

* ``snoozed + acknowledged`` (put off, or only looked at) exceeding ``acted``
  by ``QUIET_STEP`` or more: the message is weighed one step lower, not below
  low;
* ``acted`` exceeding the others by ``ACTED_STEP`` or more: one step higher,
  not above high (learning alone never makes a matter critical).

Noise stays noise; the reason names the counts. Pure: the counts come in the
input.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from fold_core.observation import sender_key

__all__ = ["ACTED_STEP", "Lean", "Learned", "QUIET_STEP"]

QUIET_STEP = 3
ACTED_STEP = 2
_WEIGHTS = ("critical", "high", "normal", "low", "trace")


@dataclass(frozen=True)
class Lean:
    """One step down (``lower``) or up (``raise``) for a message, and why."""

    direction: str  # "lower" | "raise"
    by: str  # "sender" | "thread"
    count: int  # the feedback that decided it

    def apply(self, weight: str) -> str:
        index = _WEIGHTS.index(weight)
        if self.direction == "lower":
            return _WEIGHTS[min(index + 1, _WEIGHTS.index("low"))] if index < _WEIGHTS.index("low") else weight
        return _WEIGHTS[max(index - 1, _WEIGHTS.index("high"))] if index > _WEIGHTS.index("high") else weight


class Learned:
    """The ``user.learned`` entries, by sender and by thread."""

    def __init__(self, entries: Any) -> None:
        self.senders: dict[str, Mapping] = {}
        self.threads: dict[str, Mapping] = {}
        for entry in entries if isinstance(entries, list) else ():
            if not isinstance(entry, Mapping):
                continue
            if isinstance(entry.get("thread"), str):
                self.threads.setdefault(entry["thread"], entry)
            elif isinstance(entry.get("sender"), str):
                key = sender_key(entry["sender"])
                if key:
                    self.senders.setdefault(key, entry)

    def lean(self, event: Mapping[str, Any]) -> Lean | None:
        """How the user's habits move this message: the thread's counts first, then the sender's."""
        thread = event.get("thread")
        found = _lean(self.threads.get(thread), "thread") if isinstance(thread, str) else None
        if found is None:
            key = sender_key(event.get("from"))
            found = _lean(self.senders.get(key), "sender") if key else None
        return found


def _count(entry: Mapping, name: str) -> int:
    value = entry.get(name)
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def _lean(entry: Mapping | None, by: str) -> Lean | None:
    if entry is None:
        return None
    quiet = _count(entry, "snoozed") + _count(entry, "acknowledged")
    acted = _count(entry, "acted")
    if quiet - acted >= QUIET_STEP:
        return Lean("lower", by, quiet)
    if acted - quiet >= ACTED_STEP:
        return Lean("raise", by, acted)
    return None
