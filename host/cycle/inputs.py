"""The user's word starts a cycle: annotations the editor has not been offered yet (contract §9, §11.1).

An annotation lives in the store, not in the inbox, so it is no pending
observation: without this, a note waited for the next review (``[host]
review_every``). ``new_annotations`` says which saved annotations no window
has carried yet — their numbers above ``host_meta.annotations_offered`` —
and ``offered`` notes them once a window opened with them. A window that
opens only for them is a ``review`` (``received: 0``) whose reason says so;
the annotations themselves reach the editor as ``pending_annotations``.
"""

from __future__ import annotations

from fold_core.state import State
from fold_host.hostdb import HostDB

__all__ = ["OFFERED_KEY", "new_annotations", "offered"]

OFFERED_KEY = "annotations_offered"


def _number(annotation_id: str) -> int:
    digits = annotation_id.rsplit("-", 1)[-1]
    return int(digits) if digits.isdigit() else 0


def new_annotations(state: State, db: HostDB) -> list[int]:
    """The numbers of the saved annotations no window has offered yet, in order."""
    seen = int(db.meta(OFFERED_KEY) or 0)
    return sorted(n for n in (_number(key) for key, note in state.annotations.items()
                              if note.get("status") == "saved") if n > seen)


def offered(db: HostDB, numbers: list[int]) -> None:
    """A window opened with these annotations: they no longer open one by themselves."""
    if numbers:
        db.set_meta(OFFERED_KEY, max(max(numbers), int(db.meta(OFFERED_KEY) or 0)))
