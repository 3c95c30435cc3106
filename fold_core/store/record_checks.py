"""The record-level rules ``foldctl verify`` checks on every engine (contract §7, §4).

``RecordChecker`` sees the records in order, before T applies each one, and
raises ``StoreCorrupt`` at the first that breaks a rule: a known version and
type, revisions that follow the record types, annotation ids in save order,
acks naming saved annotations, unique batch_ids, ids never reused, whole
post-images; ``check_budgets`` checks every layer of a replayed state
against the budget. The file store (``verify``) names a problem by its log
line, the PostgreSQL store (``pg.verify``) by its record: ``place`` says which.
"""

from __future__ import annotations

from fold_core.errors import StoreCorrupt
from fold_core.state import ITEM_FIELDS, State

__all__ = ["RecordChecker"]

_TYPES = ("commit", "acknowledge", "checked", "annotation")


class RecordChecker:
    """Checks each record before T applies it; knows the line (event_seq) being applied."""

    def __init__(self, budget: int, place: str) -> None:
        self.budget = budget
        self.place = place  # how a problem names where it is: "<place> <line>: …"
        self.line = 0
        self.revision = 0
        self.annotations: set[str] = set()
        self.batches: dict[str, list] = {}  # batch_id -> [event_seq, request_digest, where its record starts]
        self.items: set[str] = set()

    def corrupt(self, message: str) -> StoreCorrupt:
        return StoreCorrupt(f"{self.place} {self.line}: {message}", line=self.line)

    def check(self, record: dict, start: int) -> None:
        kind = record.get("type")
        if record.get("v") != 1 or kind not in _TYPES:
            raise self.corrupt(f"unknown record version or type ({record.get('v')!r}, {kind!r})")
        if kind == "annotation":
            note = record["annotation"]
            expected = f"ann-{len(self.annotations) + 1}"
            if note["id"] != expected:
                raise self.corrupt(f"annotation id {note['id']!r}, expected {expected!r} (save order)")
            self.annotations.add(note["id"])
            return
        bumps = 0 if kind == "checked" else 1
        if record["previous_revision"] != self.revision or record["revision"] != self.revision + bumps:
            raise self.corrupt(
                f"{kind} record with revision {record['previous_revision']!r} → {record['revision']!r}"
                f" after revision {self.revision}"
            )
        self.revision = record["revision"]
        batch_id = record["batch_id"]
        if batch_id in self.batches:
            raise self.corrupt(f"batch_id {batch_id!r} was already accepted at event_seq {self.batches[batch_id][0]}")
        self.batches[batch_id] = [record["event_seq"], record["request_digest"], start]
        for change in record["receipt"]["changes"]:
            if change["op"] == "created" and change["item"] in self.items:
                raise self.corrupt(f"creates {change['item']!r}, an id that already exists (ids are never reused)")
        for change in record["changes"]:
            missing = [name for name in ITEM_FIELDS if name not in change["item"]]
            if missing:
                raise self.corrupt(f"post-image of {change['item'].get('id')!r} lacks {', '.join(missing)}")
            self.items.add(change["item"]["id"])
        for ack in record["acks"]:
            if ack["annotation"] not in self.annotations:
                raise self.corrupt(f"acknowledges {ack['annotation']!r}, which was never saved")

    def check_budgets(self, state: State) -> None:
        for layer, members in state.active.items():
            used = sum(state.items[member]["share"] for member in members)
            if used > state.budget:
                name = "root" if layer is None else repr(layer)
                raise self.corrupt(f"after this record layer {name} uses {used} of budget {state.budget}")
