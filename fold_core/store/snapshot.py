"""The snapshot: a rebuildable cache of the log (contract §6.2 step 5).

Format 3 is a *head*, ``snapshot.json`` — one line of UTF-8 JSON holding what
a state read needs and nothing that grows with the store's age — plus the
append-only *parts* of one generation (``parts``): the archive of every
other item (with the acknowledged annotations that resolve to it), its
index, and the batch index. The head holds:

* positions: ``last_event_seq``, the log ``offset`` it reflects and
  ``last_offset`` (where that last record's line starts, so a reader checks
  cheaply that the log really holds it); revision, ``last_checked_at``;
* ``item_total``, ``inactive_total``, ``annotation_total``; the active index;
* the items: every active item, the ``HEAD_RECENT`` most recent not-active
  ones by (``status_at`` instant, id) — ``recent_floor`` is the last of them:
  every not-active item above it is in the head — and every item on the
  merge chain of an annotation the head holds;
* the annotations: every saved (pending) one, and every one that resolves to
  an item of the head (they live with their item: in the head, or in the
  item's archive line);
* ``parts``: the generation and how many bytes of each part it covers.

Written through a temporary file in the same directory, fsync,
``os.replace``, fsync of the directory — after the parts it covers were
appended and fsynced. A failure is logged, never raised: the log is intact
and the next reader recovers from it. The snapshot is never trusted over the
log: one that does not parse, names another format, or is ahead of the log
is ignored and rebuilt. Format 2 (one file, see ``snapshot_v2``) is still
read; the next writer replaces it with format 3.
"""

from __future__ import annotations

import json
import os
import re

from fold_core.files import write_all
from fold_core.state import State
from fold_core.table import Table
from fold_core.timefmt import instant_key, instant_key_once
from fold_core.store.faults import crash_at, injected
from fold_core.store.log import fsync_dir
from fold_core.store.parts import KINDS, Parts, dumps_line
from fold_core.store.snapshot_parsed import FORMAT, FileIdentity, ItemSource, NoteSource, Snapshot, check_head
from fold_core.store.snapshot_v2 import parse_v2

__all__ = ["HEAD_RECENT", "INSTANTS", "RECENT", "VERSION", "encode_head", "encode_table", "encoded", "file_stat",
           "floor_key", "read_snapshot", "recent_key", "remove_stale_temps", "write_head"]

VERSION = 3
RECENT = 200  # the state document's default not_active bound (kernel.view.NOT_ACTIVE_DEFAULT)
HEAD_RECENT = 256  # not-active items a head keeps: RECENT, and room for restores between refreshes


def floor_key(value: list | None) -> tuple | None:
    """The sort key of a ``recent_floor`` (``[status_at, id]``), or None."""
    return None if value is None else (instant_key(value[0]), value[1])


INSTANTS: dict[str, float] = {}  # status_at text -> instant: a refresh sorts the same items again and again


def recent_key(item: dict) -> tuple:
    """The order of ``not_active``: ``status_at`` as an instant, then id."""
    text = item["status_at"]
    instant = INSTANTS.get(text)
    if instant is None:
        if len(INSTANTS) >= 65536:
            INSTANTS.clear()
        instant = INSTANTS[text] = instant_key_once(text)
    return instant, item["id"]


def file_stat(path: str) -> FileIdentity | None:
    """What identifies one version of a file (a replaced file has a new one)."""
    try:
        return _identity(os.stat(path))
    except FileNotFoundError:
        return None


def _identity(stat: os.stat_result) -> FileIdentity:
    return (stat.st_ino, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns)


def read_snapshot(directory: str, budget: int) -> Snapshot | None:
    """The snapshot of the store at ``directory`` (None: there is none).

    Raises ValueError (KeyError, TypeError, RecursionError, OSError) when it
    is unusable.
    """
    path = os.path.join(directory, "snapshot.json")
    try:
        file = open(path, "rb")
    except FileNotFoundError:
        return None
    with file:
        stat = _identity(os.fstat(file.fileno()))
        first = file.readline()
        if first[-2:] == b",\n":  # format 2: three lines, read lazily from the kept file
            file.seek(0)
            return parse_v2(os.fdopen(os.dup(file.fileno()), "rb"), budget, stat)
        if first[-1:] != b"\n" or file.read(1):
            raise ValueError("not a one-line fold snapshot head")
    return _parse_head(first, directory, budget, stat)


def _parse_head(data: bytes, directory: str, budget: int, stat: FileIdentity) -> Snapshot:
    doc = json.loads(data)
    seq, offset, last_offset = check_head(doc, VERSION, budget, ("item_total", "inactive_total", "annotation_total"))
    totals = (doc["item_total"], doc["inactive_total"], doc["annotation_total"])
    items, notes, parts = doc["items"], doc["annotations"], doc["parts"]
    if type(parts) is not dict:
        raise ValueError("bad parts")
    lengths = {kind: parts[kind] for kind in KINDS}
    if type(parts["generation"]) is not str or not all(type(v) is int and v > 0 for v in lengths.values()):
        raise ValueError("bad parts")
    floor = doc["recent_floor"]
    if floor is not None and (type(floor) is not list or len(floor) != 2):
        raise ValueError("bad recent_floor")
    archive = Parts(directory, parts["generation"], lengths)
    archive.check()
    state = State(
        budget=budget,
        revision=doc["revision"],
        event_seq=seq,
        last_checked_at=doc["last_checked_at"],
        items=Table(items, size=totals[0], source=ItemSource(archive)),
        annotations=Table(notes, size=totals[2], source=NoteSource(archive, totals[2])),
        active={layer: tuple(ids) for layer, ids in doc["active"]},
        inactive_total=totals[1],
    )
    return Snapshot(VERSION, state, offset, last_offset, floor, archive, stat)


def encode_head(state: State, *, offset: int, last_offset: int, items: bytes, notes: bytes, floor: list | None,
                gen: str, lengths: dict[str, int]) -> bytes:
    """The head line for ``state`` at log ``offset``; ``items`` and ``notes`` are its tables, encoded."""
    head = {
        "format": FORMAT,
        "version": VERSION,
        "parts": {"generation": gen, **lengths},
        "last_event_seq": state.event_seq,
        "offset": offset,
        "last_offset": last_offset,
        "budget": state.budget,
        "revision": state.revision,
        "last_checked_at": state.last_checked_at,
        "item_total": len(state.items),
        "inactive_total": state.inactive_total,
        "annotation_total": len(state.annotations),
        "recent_floor": floor,
        "active": [[layer, list(ids)] for layer, ids in state.active.items()],
    }
    return b"".join((dumps_line(head)[:-1], b',"items":', items, b',"annotations":', notes, b"}\n"))


_PLAIN_KEY = re.compile(r"[A-Za-z0-9._:-]+")  # ids as the kernel makes them: JSON needs no escape in them


def encode_table(table: dict, memo: dict) -> bytes:
    """``table`` as a JSON object, reusing ``memo``'s encoding of values seen before (by identity).

    Values are never changed in place (a change is a new dict), so an entry
    whose value is the very object encoded last time has the same bytes.
    ``memo`` maps a key to ``(value, b'"key":value', where value starts)``;
    keys that left the table are forgotten from time to time.
    """
    parts = [b"{"]
    append, recall = parts.append, memo.get
    for key, value in table.items():
        hit = recall(key)
        if hit is None or hit[0] is not value:
            prefix = b'"' + key.encode() + b'":' if type(key) is str and _PLAIN_KEY.fullmatch(key) else \
                dumps_line(key) + b":"
            hit = memo[key] = (value, prefix + dumps_line(value), len(prefix))
        append(hit[1])
        append(b",")
    if len(memo) > 2 * len(table) + 64:  # forget what left the table
        for key in [key for key in memo if key not in table]:
            del memo[key]
    parts[-1] = b"}"  # the last comma, or the opening brace's partner when the table is empty
    if len(parts) == 1:
        return b"{}"
    return b"".join(parts)


def encoded(value: dict, key: str, memo: dict) -> bytes:
    """``dumps_line(value)``, from ``memo`` (see ``encode_table``) when it holds this very object."""
    hit = memo.get(key)
    if hit is not None and hit[0] is value:
        return hit[1][hit[2]:]
    return dumps_line(value)


def write_head(directory: str, data: bytes, *, exclusive: bool, quiet: bool = False) -> FileIdentity | None:
    """Atomically replace ``snapshot.json``; the new file's stat, or None (and a logged warning).

    Readers may write a snapshot under the shared lock (only a new
    generation: the log cannot change then); each uses its own temporary
    name. Only a holder of the exclusive lock removes temporary files left by
    killed processes. ``quiet`` (readers) skips the warning: a reader of a
    directory it may not write is normal.
    """
    target = os.path.join(directory, "snapshot.json")
    temp = os.path.join(directory, f"{_TEMP_PREFIX}{os.getpid()}")
    try:
        if exclusive:
            remove_stale_temps(directory)
        try:
            fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
            try:
                error = injected("enospc_snapshot")
                if error is not None:
                    os.write(fd, data[: len(data) // 2])
                    raise error
                write_all(fd, data)
                os.fsync(fd)
            finally:
                os.close(fd)
            crash_at("mid_snapshot")
            os.replace(temp, target)
        except BaseException:
            _remove_quietly(temp)
            raise
        fsync_dir(directory)
        return file_stat(target)
    except OSError as error:
        if not quiet:
            warn_not_refreshed(directory, error)
        return None


def warn_not_refreshed(directory: str, error: Exception) -> None:
    import logging  # only on this rare path: keeps the read path's imports light

    logging.getLogger("fold.store").warning(
        "fold: snapshot.json not refreshed in %s (%s); the log is intact and the next reader recovers from it",
        directory,
        error,
    )


_TEMP_PREFIX = ".snapshot.json.tmp-"


def remove_stale_temps(directory: str) -> set[str]:
    """Remove temporary snapshots of killed processes (only under the exclusive lock).

    Returns the generations whose parts are in the directory (one listing for both).
    """
    generations = set()
    for name in os.listdir(directory):
        if name.startswith(_TEMP_PREFIX):
            _remove_quietly(os.path.join(directory, name))
        elif name.startswith("snapshot.") and name.count(".") == 2 and len(name) >= 22:
            generations.add(name.split(".")[1])
    return generations


def _remove_quietly(path: str) -> None:
    try:
        os.remove(path)
    except OSError:
        pass
