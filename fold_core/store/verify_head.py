"""``foldctl verify`` for a format-3 snapshot: what its head promises.

A state read trusts the head to hold every active item, every not-active
item above ``recent_floor``, every pending annotation, every annotation that
resolves to an item of the head and every item on such an annotation's
merge chain; a look-up trusts the index to point at the last archive line of
each archived item and at a line holding each archived annotation. These
checks run after the head and archive were found equal to a replay of the
log.
"""

from __future__ import annotations

from fold_core.store.parts import Parts
from fold_core.store.snapshot import floor_key, recent_key
from fold_core.store.snapshot_parsed import Snapshot
from fold_core.table import in_memory, whole

__all__ = ["head_problem"]


def head_problem(snapshot: Snapshot, items: dict) -> str | None:
    """What the head or the index gets wrong (None: nothing); ``items`` is every item."""
    state = snapshot.state
    head_items, head_notes = in_memory(state.items), in_memory(state.annotations)
    for members in state.active.values():
        for item_id in members:
            if item_id not in head_items:
                return f"its head lacks the active item {item_id}"
    threshold = floor_key(snapshot.floor)
    for item in items.values():
        if item["status"] != "active" and item["id"] not in head_items and (
                threshold is None or recent_key(item) >= threshold):
            return f"its head lacks {item['id']}, a not-active item above its recent_floor"
    for note in whole(state.annotations).values():
        resolved, chain = note["item"], []
        while resolved in items and resolved not in chain:
            chain.append(resolved)
            if items[resolved]["merged_into"] is None:
                break
            resolved = items[resolved]["merged_into"]
        belongs = note["status"] != "acknowledged" or resolved in head_items
        if belongs and note["id"] not in head_notes:
            return f"its head lacks the annotation {note['id']}"
        if note["id"] in head_notes and any(item_id not in head_items for item_id in chain):
            return f"its head lacks an item on the merge chain of {note['id']}"
    archive = snapshot.archive
    return _index_problem(archive, head_items, head_notes) if isinstance(archive, Parts) else None


def _index_problem(archive: Parts, head_items: dict, head_notes: dict) -> str | None:
    index = archive.index_map()
    last: dict[str, tuple[int, int]] = {}
    notes: dict[str, dict] = {}
    for offset, length, entry in archive.lines():
        last[entry["item"]["id"]] = (offset, length)
        for note in entry["notes"]:
            notes[note["id"]] = note
    for item_id, where in last.items():
        if item_id not in head_items and index.get(("i", item_id)) != where:
            return f"its index does not point at the last archive line of {item_id}"
    for note_id, note in notes.items():
        if note_id in head_notes:
            continue
        found = index.get(("n", note_id))
        if found is None or note not in archive.read_entry(*found)["notes"]:
            return f"its index does not point at a line holding {note_id}"
    return None
