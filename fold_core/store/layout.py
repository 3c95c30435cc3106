"""What a snapshot head holds, and what moves to the archive (see ``snapshot``).

``plan_head`` decides, for a state, the head's items and annotations and
the archive lines a refresh must append. It works on what is in memory —
the previous head (the table's ``base``) and what changed since (``top``) —
plus a few look-ups, so its cost follows the changes, not the history:

* every active item stays in the head;
* the ``HEAD_RECENT`` most recent not-active items by (``status_at`` instant,
  id) stay; ``recent_floor`` marks the last one. Every not-active item above
  the previous floor is in memory, so they are found there — unless restores
  left fewer than ``RECENT`` of them: then the archive is read whole (rare);
* annotations live with the item they resolve to (``merged_into`` followed):
  in the head when that item is in the head, else in the item's archive
  line; a saved (pending) annotation always stays in the head, and so does
  every item on its merge chain. An item that comes back into the head from
  the archive (a restore) brings its annotations back;
* every item in memory that leaves the head gets a new archive line (with the
  annotations that resolve to it); an archived item whose annotations change
  gets one too. Ids the index cannot hold safely (not ``[a-z0-9-]{1,64}`` /
  ``ann-N``) stay in the head: only a foreign log has them.

With ``archive=None`` the state must be complete (everything in memory): the
plan is then a snapshot written from scratch.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Collection, Iterable, Mapping
from typing import TypeGuard

from fold_core.state import State
from fold_core.table import Table, in_memory
from fold_core.text import ANNOTATION_ID, ITEM_ID
from fold_core.store.parts import Parts
from fold_core.store.snapshot import HEAD_RECENT, INSTANTS, RECENT, floor_key, recent_key

__all__ = ["Plan", "plan_head"]


class Plan:
    """The head's items and annotations, its floor, and the archive lines to append."""

    __slots__ = ("items", "notes", "floor", "entries")

    def __init__(self, items: dict, notes: dict, floor: list | None, entries: list) -> None:
        self.items, self.notes, self.floor = items, notes, floor
        self.entries = entries  # [(item, [notes], [ids of the notes not yet indexed])] (or () for none)


_SAFE: dict[str, None] = {}  # ids seen to match ITEM_ID (a dict of atoms: the cyclic GC never walks it)


def _archivable(item_id: object) -> TypeGuard[str]:
    """Whether the index can hold ``item_id`` (the kernel's ids can; a foreign log's may not)."""
    if item_id in _SAFE:
        return True
    if type(item_id) is not str or ITEM_ID.fullmatch(item_id) is None:
        return False
    if len(_SAFE) >= 65536:
        _SAFE.clear()
    _SAFE[item_id] = None
    return True


_ITEM_IDS = re.compile(r"[a-z0-9-]{1,64}(?:\n[a-z0-9-]{1,64})*")  # ITEM_ID, one per line


def _all_archivable(ids: Collection[object]) -> bool:
    """Whether every id matches ITEM_ID, in one match over them all (only for many ids)."""
    if len(ids) < 4096:
        return False  # few: the cached check one by one is as quick
    keys = [key for key in ids if type(key) is str]
    if len(keys) != len(ids):
        return False
    joined = "\n".join(keys)
    return joined.count("\n") == len(keys) - 1 and _ITEM_IDS.fullmatch(joined) is not None


def plan_head(state: State, archive: Parts | None, floor: list | None) -> Plan:
    """The plan for ``state``, whose items beyond memory are in ``archive`` (see the module docstring)."""
    table = state.items if isinstance(state.items, Table) else Table(dict(state.items), size=len(state.items))
    memory = table.in_memory()
    base = table.base if archive is not None else {}
    head = {item_id: memory.get(item_id) or table[item_id] for members in state.active.values() for item_id in members}
    from_archive: set[str] = set()  # head items whose image came from the archive

    recent, new_floor = _recent(memory, archive, floor)
    for item in recent:
        head[item["id"]] = item
        if item["id"] not in memory:
            from_archive.add(item["id"])
    if not _all_archivable(memory):  # else nothing to keep in the head for want of a safe id (one check)
        safe = _SAFE
        head.update((item_id, item) for item_id, item in memory.items()
                    if item_id not in safe and not _archivable(item_id))

    notes_table = state.annotations
    pool = dict(in_memory(notes_table))
    queue = deque(pool.values())
    pulled: set[str] = set()

    def enter(item_id: str) -> None:
        """``item_id`` is in the head: the annotations archived with it come back."""
        if archive is None or item_id in base or item_id in pulled:
            return
        pulled.add(item_id)
        entry = archive.entry(item_id) if item_id in from_archive else archive.cached_entry(item_id)
        for note in entry["notes"] if entry is not None else ():
            if note["id"] not in pool:
                pool[note["id"]] = note
                queue.append(note)

    if archive is not None:
        for item_id in [item_id for item_id in head if item_id not in base]:
            enter(item_id)
    head_notes: dict[str, dict] = {}
    archived: dict[str, dict[str, dict]] = {}  # resolved item -> its archived annotations
    while queue:
        note = queue.popleft()
        if note["id"] in head_notes:
            continue
        resolved, chain = _chain(table, note["item"])
        if (note["status"] == "acknowledged" and resolved not in head and chain and _archivable(resolved)
                and type(note["id"]) is str and ANNOTATION_ID.fullmatch(note["id"]) is not None):
            archived.setdefault(resolved, {})[note["id"]] = note
            continue
        head_notes[note["id"]] = note
        for item_id in chain:
            if item_id not in head:
                head[item_id] = table[item_id]
                if item_id not in memory:
                    from_archive.add(item_id)
                enter(item_id)
        for item_id in [r for r in archived if r in head]:
            queue.extend(archived.pop(item_id).values())  # they resolve to a head item now

    entries = []
    leaving = [item_id for item_id in memory if item_id not in head]
    if archive is None:  # written from scratch: no old lines to merge with
        # Most leave with no annotation: they share one empty tuple (encoded as [] like a list).
        entries = [(memory[item_id], _in_order(archived[item_id]), list(archived[item_id])) if item_id in archived
                   else (memory[item_id], (), ()) for item_id in leaving]
        leaving = [item_id for item_id in archived if item_id not in memory]
    else:
        leaving += [item_id for item_id in archived if item_id not in memory]
    for item_id in leaving:
        old = None
        if archive is not None and item_id not in base:
            old = archive.entry(item_id) if item_id not in memory else archive.cached_entry(item_id)
        notes = {note["id"]: note for note in old["notes"]} if old is not None else {}
        fresh = archived.get(item_id, {})
        notes.update(fresh)
        entries.append((table[item_id], _in_order(notes), list(fresh)))
    return Plan(head, head_notes, new_floor, entries)


def _recent(memory: dict, archive: Parts | None, floor: list | None) -> tuple[list, list | None]:
    """The ``HEAD_RECENT`` most recent not-active items, most recent first, and the new floor.

    Every not-active item above the previous floor is in memory — unless
    restores left fewer than ``RECENT`` of them: then the archive is read whole.
    """
    threshold = floor_key(floor) if archive is not None else None
    keyed = _keyed(memory.values())
    if threshold is not None and archive is not None:
        keyed = [entry for entry in keyed if entry[:2] >= threshold]
        if len(keyed) < RECENT:  # restores used up the margin: read it all
            everything = {**archive.load()[0], **memory}
            keyed = _keyed(everything.values())
            threshold = None
    # Sorting the flat tuples beats a heap: the items come roughly in the order they left the
    # active set, which timsort takes in near-linear time (and every one of them would enter a heap).
    keyed.sort(reverse=True)
    recent = [entry[2] for entry in keyed[:HEAD_RECENT]]
    if threshold is None and len(keyed) <= len(recent):
        return recent, None
    return recent, [recent[-1]["status_at"], recent[-1]["id"]] if recent else floor


def _keyed(items: Iterable[dict]) -> list[tuple[float, str, dict]]:
    """``(*recent_key(item), item)`` for each not-active item: flat tuples sort fastest; ids never
    tie, so the items themselves are never compared."""
    instants = INSTANTS
    keyed: list[tuple[float, str, dict]] = []
    append = keyed.append
    for item in items:
        if item["status"] == "active":
            continue
        instant = instants.get(item["status_at"])
        if instant is None:
            instant = recent_key(item)[0]
        append((instant, item["id"], item))
    return keyed


def _in_order(notes: dict) -> list:
    """Annotations in save order (``ann-N`` by N)."""
    return sorted(notes.values(), key=lambda note: int(note["id"][4:])) if notes else []


def _chain(table: Mapping[str, dict], item_id: object) -> tuple[object, list]:
    """(the item ``item_id`` resolves to, the existing items on the way, itself included)."""
    chain: list = []
    seen: set = set()
    current = item_id
    while type(current) is str and current not in seen:
        item = table.get(current)
        if item is None:
            break
        seen.add(current)
        chain.append(current)
        following = item["merged_into"]
        if following is None:
            break
        current = following
    return current, chain
