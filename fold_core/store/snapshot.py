"""The snapshot ``snapshot.json``: a rebuildable cache of the log (contract §6.2 step 5).

It holds the state after ``last_event_seq``, the byte ``offset`` of the log end
it reflects (and ``last_offset``, where that last record's line starts, so a
reader can check cheaply that the log really holds that record), the full item
and annotation tables, and the batch index ``{batch_id: [event_seq, digest,
offset]}`` that makes a replayed receipt an O(1) lookup.

Layout: one JSON object written on three physical lines. Compact JSON never
contains a raw newline, so each line can be parsed on its own:

1. the *head*: positions, revision, the active items, the ``RECENT`` most
   recent withdrawn/merged items, every item on an annotation's merge chain,
   the annotations, the active index and ``inactive_total``;
2. ``"archive": {...},`` — every other item (old withdrawn/merged ones);
3. ``"batches": {...}}`` — the batch index.

The not-active index and the batch index grow forever; the head does not. A
state read parses only the head (a *partial* state: enough for the state
document with the default ``not_active`` bound), and the archive and the
batch index stay bytes until a write, a lookup or a wider read needs them.

Writing: a temporary file in the same directory, fsync, ``os.replace``, fsync
of the directory. A failure is logged, never raised: the log is intact and the
next reader recovers from it. The snapshot is never trusted over the log: a
snapshot that does not parse, names another format, or is ahead of the log
is ignored and rebuilt.
"""

from __future__ import annotations

import heapq
import io
import json
import os

from fold_core.state import State
from fold_core.timefmt import instant_key
from fold_core.store.faults import crash_at, injected
from fold_core.store.log import fsync_dir

__all__ = ["FORMAT", "RECENT", "Snapshot", "batches_line", "encode_snapshot", "find_batch", "parse_snapshot",
           "remove_stale_temps", "split_items", "write_snapshot"]

FORMAT, VERSION = "fold-snapshot", 2
RECENT = 200  # the state document's default not_active bound (kernel.view.NOT_ACTIVE_DEFAULT)


class Snapshot:
    """A parsed snapshot head; the archive and batch index are read from the file when asked for.

    ``state`` holds the head's items only when ``partial`` is true; ``archive()``
    gives the rest. The snapshot keeps its file open (a later ``os.replace`` of
    ``snapshot.json`` does not change what it reads) and closes it when dropped.
    """

    __slots__ = ("state", "offset", "last_offset", "partial", "_source", "_head_bytes", "_archive_bytes")

    def __init__(self, state: State, offset: int, last_offset: int, partial: bool, source,
                 head_bytes: int, archive_bytes: int) -> None:
        self.state = state
        self.offset = offset
        self.last_offset = last_offset
        self.partial = partial
        self._source = source
        self._head_bytes = head_bytes
        self._archive_bytes = archive_bytes

    def __del__(self) -> None:
        self.close()

    def close(self) -> None:
        source = getattr(self, "_source", None)
        if source is not None:
            source.close()

    def matches(self, log) -> bool:
        """Whether ``log`` (opened ``rb``) holds this snapshot's last record where it says.

        One short read: catches a snapshot ahead of the log, or written for
        another log, without replaying anything.
        """
        log.seek(self.last_offset)
        length = self.offset - self.last_offset
        line = log.readline(length + 1)
        if len(line) != length or line[-1:] != b"\n":
            return False
        record = json.loads(line)
        return type(record) is dict and record.get("event_seq") == self.state.event_seq

    def archive(self) -> dict[str, dict]:
        """The items the head leaves out."""
        self._source.seek(self._head_bytes)
        raw = self._source.read(self._archive_bytes)
        if len(raw) != self._archive_bytes or raw[-2:] != b",\n":
            raise ValueError("archive line is cut short")
        value = json.loads(b"{" + raw[:-2] + b"}")["archive"]
        if type(value) is not dict:
            raise ValueError("archive is not an object")
        return value

    def full_state(self) -> State:
        """The snapshot's whole state (head and archive)."""
        if not self.partial:
            return self.state
        return self.state.replace(items={**self.archive(), **self.state.items})

    def batches_line(self) -> bytes:
        """The raw batch index line ``"batches":{...}}\\n``."""
        self._source.seek(self._head_bytes + self._archive_bytes)
        raw = self._source.read()
        if not raw.startswith(b'"batches":{') or raw[-3:] != b"}}\n":
            raise ValueError("batch index line is cut short")
        return raw

    def batches(self) -> dict[str, list]:
        """The batch index ``{batch_id: [event_seq, digest, offset]}``."""
        value = json.loads(b"{" + self.batches_line())["batches"]
        if type(value) is not dict:
            raise ValueError("batch index is not an object")
        return value


def find_batch(line: bytes, batch_id: str) -> list | None:
    """The entry of ``batch_id`` in a raw batch index line, without parsing the rest.

    Batch ids are ``[A-Za-z0-9._:-]`` and need no JSON escaping, so the key
    ``"<id>":[`` right after ``{`` or ``,`` can only be that batch's entry.
    """
    needle = b'"' + batch_id.encode("ascii") + b'":['
    at = line.find(needle)
    while at != -1:
        if line[at - 1:at] in (b"{", b","):
            start = at + len(needle) - 1
            end = line.index(b"]", start) + 1
            entry = json.loads(line[start:end])
            if type(entry) is not list or len(entry) != 3:
                raise ValueError(f"bad batch index entry for {batch_id}")
            return entry
        at = line.find(needle, at + 1)
    return None


def batches_line(batches: dict, base: bytes | None = None) -> bytes:
    """A batch index line: ``batches`` alone, or appended to the raw line ``base``.

    Entries never change once written, so a refresh appends the tail's
    entries to the previous snapshot's line instead of decoding and
    re-encoding the whole index (most of an old store's snapshot).
    """
    added = _dumps(batches)[1:-1].encode("ascii")
    if base is None:
        return b'"batches":{' + added + b"}}\n"
    if not added:
        return base
    body = base[:-3]
    return body + (b"," if body[-1:] != b"{" else b"") + added + b"}}\n"


_dumps = json.JSONEncoder(ensure_ascii=True, separators=(",", ":"), allow_nan=False).encode


def parse_snapshot(source, budget: int) -> Snapshot:
    """Parse a snapshot's head from bytes or a binary file (kept for the lazy sections).

    Raises ValueError (or KeyError/TypeError) when unusable; the caller keeps
    ownership of ``source`` in that case.
    """
    if isinstance(source, (bytes, bytearray)):
        source = io.BytesIO(source)
    head = source.readline()
    if head[-2:] != b",\n":
        raise ValueError("not a three-line fold snapshot")
    doc = json.loads(head[:-2] + b"}")
    if doc.get("format") != FORMAT or doc.get("version") != VERSION:
        raise ValueError(f"format {doc.get('format')!r} version {doc.get('version')!r}")
    if doc["budget"] != budget:
        raise ValueError(f"budget {doc['budget']} differs from meta.json's {budget}")
    seq, offset, last_offset = doc["last_event_seq"], doc["offset"], doc["last_offset"]
    sizes = (doc["archive_bytes"], doc["archive_count"], doc["inactive_total"])
    if not all(type(v) is int and v >= 0 for v in (seq, offset, last_offset) + sizes):
        raise ValueError("bad positions")
    if (seq == 0) != (offset == 0) or (seq > 0 and last_offset >= offset):
        raise ValueError("inconsistent positions")
    items, annotations = doc["items"], doc["annotations"]
    if type(items) is not dict or type(annotations) is not dict:
        raise ValueError("bad tables")
    active = {layer: tuple(ids) for layer, ids in doc["active"]}
    state = State(
        budget=budget,
        revision=doc["revision"],
        event_seq=seq,
        last_checked_at=doc["last_checked_at"],
        items=items,
        annotations=annotations,
        active=active,
        inactive_total=doc["inactive_total"],
    )
    return Snapshot(state, offset, last_offset, doc["archive_count"] > 0, source, len(head), doc["archive_bytes"])


def encode_snapshot(state: State, offset: int, last_offset: int, index_line: bytes) -> bytes:
    """The three-line snapshot bytes for ``state`` (a full state) at log ``offset``."""
    head_items, archive = split_items(state)
    # ASCII escapes keep every raw newline out of the text (also U+2028 and
    # lone surrogates), which the line layout relies on.
    dumps = _dumps
    archive_line = dumps({"archive": archive})[1:-1] + ",\n"
    head = {
        "format": FORMAT,
        "version": VERSION,
        "last_event_seq": state.event_seq,
        "offset": offset,
        "last_offset": last_offset,
        "budget": state.budget,
        "revision": state.revision,
        "last_checked_at": state.last_checked_at,
        "inactive_total": state.inactive_total,
        "archive_count": len(archive),
        "archive_bytes": len(archive_line),
        "items": head_items,
        "annotations": dict(state.annotations),
        "active": [[layer, list(ids)] for layer, ids in state.active.items()],
    }
    head_line = dumps(head)[:-1] + ",\n"
    return (head_line + archive_line).encode("ascii") + index_line


def split_items(state: State) -> tuple[dict, dict]:
    """(head items, archive items): what a state read needs, and the rest.

    The head keeps every active item, the ``RECENT`` most recent inactive ones
    by (``status_at`` instant, id) — so the default ``not_active`` list is
    complete — and every item on an annotation's ``merged_into`` chain, so that
    annotations resolve without the archive.
    """
    items = state.items
    inactive = [item for item in items.values() if item["status"] != "active"]
    if len(inactive) <= RECENT:
        return dict(items), {}
    key = lambda item: (instant_key(item["status_at"]), item["id"])  # noqa: E731
    keep = {item["id"] for item in heapq.nlargest(RECENT, inactive, key=key)}
    chained: set[str] = set()
    for note in state.annotations.values():
        item_id = note["item"]
        while item_id in items and item_id not in chained:  # the whole chain, once
            chained.add(item_id)
            item_id = items[item_id]["merged_into"]
    keep |= chained
    head = {item_id: item for item_id, item in items.items() if item["status"] == "active" or item_id in keep}
    archive = {item_id: item for item_id, item in items.items() if item_id not in head}
    return head, archive


def write_snapshot(directory: str, data: bytes, *, exclusive: bool, quiet: bool = False) -> bool:
    """Atomically replace ``snapshot.json``; False (and a logged warning) on failure.

    Readers may refresh under the shared lock (the log cannot change then, so
    every concurrent reader writes the same bytes); each uses its own
    temporary name. Only a holder of the exclusive lock removes temporary
    files left by killed processes. ``quiet`` (readers) skips the warning: a
    reader of a directory it may not write is normal.
    """
    target = os.path.join(directory, "snapshot.json")
    temp = os.path.join(directory, f"{_TEMP_PREFIX}{os.getpid()}")
    try:
        if exclusive:
            remove_stale_temps(directory)
        try:
            with open(temp, "wb") as file:
                error = injected("enospc_snapshot")
                if error is not None:
                    file.write(data[: len(data) // 2])
                    raise error
                file.write(data)
                file.flush()
                os.fsync(file.fileno())
            crash_at("mid_snapshot")
            os.replace(temp, target)
        except BaseException:
            _remove_quietly(temp)
            raise
        fsync_dir(directory)
        return True
    except OSError as error:
        if quiet:
            return False
        import logging  # only on this rare path: keeps the read path's imports light

        logging.getLogger("fold.store").warning(
            "fold: snapshot.json not refreshed in %s (%s); the log is intact and the next"
            " reader recovers from it",
            directory,
            error,
        )
        return False


_TEMP_PREFIX = ".snapshot.json.tmp-"


def remove_stale_temps(directory: str) -> None:
    """Remove temporary snapshots of killed processes (only under the exclusive lock)."""
    for name in os.listdir(directory):
        if name.startswith(_TEMP_PREFIX):
            _remove_quietly(os.path.join(directory, name))


def _remove_quietly(path: str) -> None:
    try:
        os.remove(path)
    except OSError:
        pass
