"""Refreshing the snapshot (contract §6.2 step 5).

Two ways, both ending with a new head written atomically over
``snapshot.json`` after the parts it covers are fsynced:

* ``append`` (a writer, holding the exclusive lock, whose snapshot is a
  usable format-3 one): the archive lines, index lines and batch-index lines
  of what changed since are appended to the current generation's parts, so
  the cost follows the changes, not the history;
* ``rewrite`` (no usable snapshot, or a format-2 one being upgraded): every
  part of a new generation is written from the whole state. A reader may do
  this too (under the shared lock the log cannot change, and each reader
  writes its own generation); only a writer removes the parts of other
  generations.

On success the cache's state is *rebased*: the same state, whose tables hold
the new head in memory and look everything else up in the new parts. On
failure nothing in the cache changes; the failure is logged (writers) and the
next refresh tries again.
"""

from __future__ import annotations

import gc
import json
import os
import re
from collections.abc import Mapping
from itertools import accumulate

from fold_core.state import State
from fold_core.table import Table
from fold_core.store.cache import SNAP_MISSING, SNAP_OK, Cache, snapshot_batches
from fold_core.store.layout import Plan, plan_head
from fold_core.store.parts import Parts, dumps_block, dumps_line, part_names
from fold_core.store.parts_write import PartsWriter, new_generation, remove_other_generations
from fold_core.store.snapshot import encode_head, encode_table, encoded, warn_not_refreshed, write_head
from fold_core.store.snapshot_parsed import FileIdentity, ItemSource, NoteSource, Snapshot

__all__ = ["append", "clean_generations", "rewrite", "write_snapshot"]

_ascii = json.JSONEncoder(ensure_ascii=True, separators=(",", ":"), allow_nan=False).encode
_GENERATION = re.compile(rb'"generation":"([0-9a-f]{12})"')
_PLAIN = re.compile(r"[A-Za-z0-9._:-]{1,128}")  # item, annotation and batch ids as the kernel makes them
_PLAIN_LINES = re.compile(r"[A-Za-z0-9._:-]+(?:\n[A-Za-z0-9._:-]+)*")  # keys joined by newlines, none to escape


def append(cache: Cache, directory: str, parts: Parts, floor: list | None) -> bool:
    """Append what changed to the current generation (``parts``, the head's ``floor``) and write a new head
    (writers only)."""
    try:
        plan = plan_head(cache.state, parts, floor)
        writer = PartsWriter(directory, parts.gen, parts.lengths)
        try:
            _write_plan(writer, plan, cache.tail_batches, cache.memo)
            lengths = writer.finish()
        finally:
            writer.close()
    except (OSError, ValueError) as error:
        warn_not_refreshed(directory, error)
        return False
    memo = cache.memo
    head = encode_head(cache.state, offset=cache.offset, last_offset=cache.last_offset,
                       items=encode_table(plan.items, memo[0]), notes=encode_table(plan.notes, memo[1]),
                       floor=plan.floor, gen=parts.gen, lengths=lengths)
    stat = write_head(directory, head, exclusive=True)
    if stat is None:
        return False
    later = parts.extended(lengths)
    for item, notes, _fresh in plan.entries:
        later.entries[item["id"]] = {"item": item, "notes": notes}
        for note in notes:
            later.notes[note["id"]] = note
    _rebase(cache, plan, later, stat)
    return True


def rewrite(cache: Cache, directory: str, log_path: str, *, exclusive: bool) -> bool:
    """Write a new generation from the whole state, and its head; False when that failed.

    The cyclic GC is paused meanwhile: encoding every item of a long history
    allocates enough to start full collections, each of which walks every
    item in memory again (JSON values hold no cycles).
    """
    paused = gc.isenabled()
    if paused:
        gc.disable()
    try:
        return _rewrite(cache, directory, log_path, exclusive=exclusive)
    finally:
        if paused:
            gc.enable()


def _rewrite(cache: Cache, directory: str, log_path: str, *, exclusive: bool) -> bool:
    state = cache.state
    try:
        batches = snapshot_batches(cache, log_path)  # {batch_id: (event_seq, offset)}
        if batches:
            batches = {**batches, **cache.tail_batches}
        else:
            batches = cache.tail_batches  # (event_seq, digest, offset): _write_plan takes the first and the last
        whole = state.replace(items=Table(_every(state.items)), annotations=Table(_every(state.annotations)))
    except (OSError, ValueError, KeyError, TypeError, RecursionError) as error:
        if exclusive:
            warn_not_refreshed(directory, error)
        return False
    plan = plan_head(whole, None, None)
    gen = new_generation()
    try:
        writer = PartsWriter(directory, gen, None)
        try:
            _write_plan(writer, plan, batches, ({}, {}))
            lengths = writer.finish()
        finally:
            writer.close()
        head = encode_head(state, offset=cache.offset, last_offset=cache.last_offset,
                           items=encode_table(plan.items, cache.memo[0]), notes=encode_table(plan.notes, cache.memo[1]),
                           floor=plan.floor, gen=gen, lengths=lengths)
        stat = write_head(directory, head, exclusive=exclusive, quiet=not exclusive)
        parts = Parts(directory, gen, lengths) if stat is not None else None
    except OSError as error:
        if exclusive:
            warn_not_refreshed(directory, error)
        stat = None
    if stat is None or parts is None:  # (parts are read whenever the head was written)
        for name in part_names(gen).values():
            try:
                os.remove(os.path.join(directory, name))
            except OSError:
                pass
        return False
    _rebase(cache, plan, parts, stat)
    if exclusive:
        clean_generations(directory, gen)
    return True


def write_snapshot(directory: str, state: State, *, offset: int, last_offset: int, batches: dict) -> bool:
    """Write a snapshot of ``state`` (a complete one, at log ``offset``) from scratch.

    ``batches`` is the batch index ``{batch_id: [event_seq, digest, offset]}``.
    For tools that build a store without committing record by record (the
    benchmarks); the caller holds the exclusive lock or owns the directory.
    """
    cache = Cache(state, offset, last_offset, None, SNAP_MISSING, None)
    cache.tail_batches = batches
    return rewrite(cache, directory, os.path.join(directory, "events.jsonl"), exclusive=True)


def _write_plan(writer: PartsWriter, plan: Plan, batches: dict, memo: tuple[dict, dict]) -> None:
    item_memo, note_memo = memo
    entries = plan.entries
    if item_memo or note_memo:  # a refresh: items that leave the head were encoded for it before
        lines = [_entry(item, notes, item_memo, note_memo) for item, notes, _fresh in entries]
        block = b"\n".join(lines)
    else:  # written from scratch: each entry in one call (the same bytes)
        lines, block = dumps_block([{"item": item, "notes": notes} for item, notes, _fresh in entries])
    index = _index_lines(entries, lines, writer.sizes["items"])
    if lines:
        writer.write("items", block)
        writer.write("items", b"\n")
    if index:
        writer.write("index", ("\n".join(index) + "\n").encode("ascii"))
    if batches:
        if _all_plain(list(batches)):  # the usual case: no key needs escaping
            text = "\n".join([f'["{key}",{entry[0]},{entry[-1]}]' for key, entry in batches.items()])
        else:
            text = "\n".join(f"[{_quoted(key)},{entry[0]},{entry[-1]}]" for key, entry in batches.items())
        writer.write("batches", (text + "\n").encode("ascii"))


def _index_lines(entries: list, lines: list[bytes], offset: int) -> list[str]:
    """Per archive line from ``offset`` on: its item's index line, then one per annotation first indexed there.

    Built whole-list at a time (a snapshot written from scratch has one entry per archived item).
    """
    ids = [item["id"] for item, _notes, _fresh in entries]
    sizes = [len(line) for line in lines]
    starts = list(accumulate([size + 1 for size in sizes], initial=offset))
    keys = [f'"{item_id}"' for item_id in ids] if _all_plain(ids) else [_quoted(item_id) for item_id in ids]
    index = [f'["i",{key},{start},{size}]' for key, start, size in zip(keys, starts, sizes)]
    for at in [at for at, entry in enumerate(entries) if entry[2]]:
        start, size = starts[at], sizes[at]
        notes = "\n".join(f'["n",{_quoted(note_id)},{start},{size}]' for note_id in entries[at][2])
        index[at] = index[at] + "\n" + notes
    return index


def _every(table: Mapping[str, dict]) -> dict:
    """Every entry of ``table`` as a dict (shared, not copied, when it is already one: nothing here changes it)."""
    return table.whole() if isinstance(table, Table) else dict(table)


def _entry(item: dict, notes: list, item_memo: dict, note_memo: dict) -> bytes:
    """An archive line ``{"item": ..., "notes": [...]}``, reusing the head's encodings."""
    if item["id"] in item_memo or (notes and note_memo):
        note_bytes = b",".join(encoded(note, note["id"], note_memo) for note in notes)
        return b'{"item":' + encoded(item, item["id"], item_memo) + b',"notes":[' + note_bytes + b"]}"
    return dumps_line({"item": item, "notes": notes})


def _all_plain(keys: list) -> bool:
    """Whether no key needs escaping (one match over them all instead of one per key)."""
    joined = "\n".join(keys) if all(type(key) is str for key in keys) else None
    return joined is not None and joined.count("\n") == len(keys) - 1 and _PLAIN_LINES.fullmatch(joined) is not None


def _quoted(key: str) -> str:
    """``key`` as a JSON string in ASCII (ids made by the kernel need no escaping)."""
    return f'"{key}"' if _PLAIN.fullmatch(key) else _ascii(key)


def _rebase(cache: Cache, plan: Plan, parts: Parts, stat: FileIdentity) -> None:
    """The same state, with the new head in memory and the new parts behind it."""
    state = cache.state
    total_notes = len(state.annotations)
    rebased = State(
        budget=state.budget, revision=state.revision, event_seq=state.event_seq,
        last_checked_at=state.last_checked_at,
        items=Table(plan.items, size=len(state.items), source=ItemSource(parts)),
        annotations=Table(plan.notes, size=total_notes, source=NoteSource(parts, total_notes)),
        active=state.active, inactive_total=state.inactive_total,
    )
    cache.state = rebased
    cache.snapshot = Snapshot(3, rebased, cache.offset, cache.last_offset, plan.floor, parts, stat)
    cache.snap_seq, cache.snap_offset, cache.snap, cache.snap_stat = state.event_seq, cache.offset, SNAP_OK, stat
    cache.tail_batches, cache.log_batches = {}, None


def clean_generations(directory: str, current: str | None) -> None:
    """Remove the parts no head names: keep ``current``, and those of ``snapshot.json(.bad)``."""
    keep = {current} if current else set()
    for name in ("snapshot.json", "snapshot.json.bad"):
        try:
            with open(os.path.join(directory, name), "rb") as head:
                match = _GENERATION.search(head.read(4096))
        except OSError:
            continue
        if match:
            keep.add(match.group(1).decode())
    remove_other_generations(directory, keep)
