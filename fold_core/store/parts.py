"""The snapshot's append-only parts (contract §6.2 step 5).

A format-3 snapshot is a small head, ``snapshot.json`` (see ``snapshot``),
plus three part files of one *generation* (a random name, new each time a
snapshot is written from scratch):

* ``snapshot.<gen>.items`` — the archive: one JSON line per entry,
  ``{"item": {...}, "notes": [...]}`` — an item the head leaves out, with the
  acknowledged annotations that resolve to it. A later line for the same item
  replaces an earlier one.
* ``snapshot.<gen>.index`` — ``["i",<item id>,<offset>,<length>]`` for each
  archive line and ``["n",<annotation id>,<offset>,<length>]`` for each
  annotation in one; the last line for a key wins.
* ``snapshot.<gen>.batches`` — ``[<batch_id>,<event_seq>,<offset>]`` for each
  accepted batch (the batch index; the digest is read from the record).

Each file starts with a header line, so every entry follows a newline. The
files only grow: a refresh appends what changed, fsyncs, and only then
replaces the head, which records how many bytes of each file it covers.
Bytes beyond (left by an interrupted refresh) are never read by that head;
the next writer cuts a last line that lacks its newline and appends after
the rest. Every entry ever appended stays true (an item's line holds its
image at a later point of the same log than the heads that do not cover it,
and such an item is in every later head's log tail), so lines beyond a
head's lengths are harmless.

Lookups scan the index bytes for ``\\n["i","<id>",`` from the end (a few
milliseconds on a 100k-record store); a reader that keeps looking up (a
long-lived process) collects every key once, so that a miss — a new id, a
new batch — costs a set look-up. Writing is in ``parts_write``.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterator
from typing import Literal

__all__ = ["KINDS", "Parts", "dumps_block", "dumps_line", "dumps_lines", "header", "part_names"]

KINDS = ("items", "index", "batches")
SCANS_BEFORE_PARSE = 4  # look-ups by scanning before the whole index is parsed into a dict
_INDEX_LINE = re.compile(rb'\n\["([in])",("(?:[^"\\\n]|\\.)*"),(\d+),(\d+)\](?=\n)')
_INDEX_KEY = re.compile(rb'\n\["([in])","((?:[^"\\\n]|\\.)*)"')
_BATCH_LINE = re.compile(rb'\n\[("(?:[^"\\\n]|\\.)*"),(\d+),(\d+)\](?=\n)')
_BATCH_KEY = re.compile(rb'\n\["((?:[^"\\\n]|\\.)*)"')
_ascii = json.JSONEncoder(ensure_ascii=True, separators=(",", ":"), allow_nan=False).encode
_utf8 = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode


_fast_dumps: Callable[..., bytes] | Literal[False] | None = None  # orjson.dumps once looked up; False: none
_BREAKS = ((b"\xe2\x80\xa8", b"\\u2028"), (b"\xe2\x80\xa9", b"\\u2029"), (b"\xc2\x85", b"\\u0085"))


def dumps_line(value: object) -> bytes:
    """Compact JSON as UTF-8 with no raw line break of any kind (docs/decisions.md).

    JSON escapes the C0 controls; U+0085, U+2028 and U+2029 are escaped here
    too (readers that split lines on them exist). A string with a lone
    surrogate cannot be UTF-8: that value is written with ASCII escapes.
    orjson encodes when installed (a refresh encodes every changed item; it is
    about 15 times faster than json, imported on the write path only); what it
    refuses (a lone surrogate, an integer beyond 64 bits) goes through json.
    """
    global _fast_dumps
    if _fast_dumps is None:
        try:
            from orjson import dumps as _fast_dumps
        except ImportError:
            _fast_dumps = False
    if _fast_dumps:
        try:
            data = _fast_dumps(value)
        except TypeError:  # orjson.JSONEncodeError
            pass
        else:
            if b"\xe2\x80" in data or b"\xc2\x85" in data:
                for raw, escaped in _BREAKS:
                    data = data.replace(raw, escaped)
            return data
    text = _utf8(value)
    if "\u2028" in text or "\u2029" in text or "\x85" in text:
        text = text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029").replace("\x85", "\\u0085")
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return _ascii(value).encode("ascii")


def dumps_lines(values: list) -> list[bytes]:
    """``[dumps_line(value) for value in values]``, for many values at once (a snapshot written from scratch)."""
    return dumps_block(values)[0]


def dumps_block(values: list) -> tuple[list[bytes], bytes]:
    """``dumps_lines(values)`` and those lines joined by newlines (one copy of them all, not two).

    One orjson call per value and one search for raw line breaks over all of
    them instead of two per value; the bytes are the same.
    """
    if _fast_dumps is None:
        dumps_line({})  # looks orjson up
    fast = _fast_dumps
    lines = None
    if fast:
        try:
            lines = [fast(value) for value in values]
        except TypeError:  # a value orjson refuses: each goes its own way
            pass
    if lines is None:
        lines = [dumps_line(value) for value in values]
        return lines, b"\n".join(lines)
    blob = b"\n".join(lines)
    # A lead byte first: memchr finds a single byte far faster than a search for the sequences.
    if (b"\xe2" in blob and (b"\xe2\x80\xa8" in blob or b"\xe2\x80\xa9" in blob)) \
            or (b"\xc2" in blob and b"\xc2\x85" in blob):
        lines = [dumps_line(value) if any(raw in line for raw, _ in _BREAKS) else line
                 for value, line in zip(values, lines)]
        return lines, b"\n".join(lines)
    return lines, blob


def _key(quoted: bytes) -> str:
    """A JSON string of the index (ASCII, escapes only where needed) as a str."""
    return quoted[1:-1].decode("ascii") if b"\\" not in quoted else json.loads(quoted)


def part_names(gen: str) -> dict[str, str]:
    return {kind: f"snapshot.{gen}.{kind}" for kind in KINDS}


def header(gen: str, kind: str) -> bytes:
    """The first line of part ``kind`` of generation ``gen``."""
    return _ascii({"fold_snapshot_part": kind, "generation": gen}).encode("ascii") + b"\n"


class _Files:
    """The open part files of one generation, shared by every ``Parts`` view of it."""

    def __init__(self, directory: str, gen: str) -> None:
        self.fds: dict[str, int] = {}
        try:
            for kind, name in part_names(gen).items():
                self.fds[kind] = os.open(os.path.join(directory, name), os.O_RDONLY | os.O_CLOEXEC)
        except BaseException:
            self.close()
            raise

    def read(self, kind: str, offset: int, length: int) -> bytes:
        data = os.pread(self.fds[kind], length, offset)
        if len(data) != length:
            raise ValueError(f"snapshot part {kind} is shorter than its head says")
        return data

    def close(self) -> None:
        for fd in self.fds.values():
            os.close(fd)
        self.fds = {}

    def __del__(self) -> None:
        self.close()


class Parts:
    """A read view of one generation's parts, bounded by the lengths a head records.

    Raises ValueError (or OSError) when a part is unreadable; callers treat
    the snapshot as unusable then. Look-ups are cached; ``extended`` gives the
    view of a later head of the same generation and keeps the caches.
    """

    def __init__(self, directory: str, gen: str, lengths: dict[str, int], files: _Files | None = None) -> None:
        self.directory, self.gen, self.lengths = directory, gen, dict(lengths)
        self.files = files if files is not None else _Files(directory, gen)
        self.entries: dict[str, dict | None] = {}  # item id -> archive entry (None: not archived)
        self.notes: dict[str, dict | None] = {}
        self._bytes: dict[str, bytes] = {}
        self._scans = {"index": 0, "batches": 0}
        self._keys: dict[str, dict] | None = None  # index keys by tag ("i", "n", and "b" for batches)
        self._keys_upto: dict[str, int] | None = None  # where ``_keys`` ends, when short of ``lengths``
        self._index: dict[tuple[str, str], tuple[int, int]] | None = None  # the whole index (verify only)
        self._batches: dict[str, tuple[int, int]] | None = None
        self._all: tuple[dict, dict] | None = None

    def check(self) -> None:
        """Each part is at least as long as the head says and starts with this generation's header."""
        for kind in KINDS:
            first = header(self.gen, kind)
            if self.lengths[kind] < len(first) or self.files.read(kind, 0, len(first)) != first:
                raise ValueError(f"snapshot part {kind} does not belong to generation {self.gen}")
            if os.fstat(self.files.fds[kind]).st_size < self.lengths[kind]:
                raise ValueError(f"snapshot part {kind} is shorter than its head says")

    def extended(self, lengths: dict[str, int]) -> "Parts":
        later = Parts(self.directory, self.gen, lengths, self.files)
        later.entries, later.notes = self.entries, self.notes
        later._scans = self._scans
        if self._keys is not None:  # the keys of the appended lines are collected when next needed
            later._keys = self._keys
            later._keys_upto = self._keys_upto or self.lengths
        return later

    # -- raw bytes ------------------------------------------------------------

    def _part(self, kind: str) -> bytes:
        data = self._bytes.get(kind)
        if data is None:
            data = self._bytes[kind] = self.files.read(kind, 0, self.lengths[kind])
        return data

    def _tail(self, kind: str, start: int) -> bytes:
        """The bytes of part ``kind`` from the newline that ends at line boundary ``start``."""
        start = max(start - 1, 0)
        return self.files.read(kind, start, self.lengths[kind] - start)

    # -- the index ------------------------------------------------------------

    def _known(self, tag: str, quoted: bytes, kind: str) -> bool:
        """Whether ``quoted`` may be a key of ``tag``: False only when surely not (no scan needed).

        The first look-ups scan; a reader that keeps looking (a long-lived
        process) collects every key once, so that a miss costs a look-up. The
        keys are kept as dicts of bytes to None, not as sets: the cyclic GC
        never walks a dict of such atoms, but it would walk a set of a
        hundred thousand keys at every full collection (tens of milliseconds
        in whatever commit it lands).
        """
        if self._keys is None:
            self._scans[kind] += 1
            if self._scans[kind] <= SCANS_BEFORE_PARSE:
                return True
            self._keys = {"i": {}, "n": {}, "b": {}}
            self._add_keys(self._keys, {kind: 0 for kind in KINDS})
        elif self._keys_upto is not None:
            self._add_keys(self._keys, self._keys_upto)
            self._keys_upto = None
        return quoted[1:-1] in self._keys[tag]

    def _add_keys(self, keys: dict[str, dict], since: dict[str, int]) -> None:
        for tag, key in _INDEX_KEY.findall(self._tail("index", since["index"])):
            keys[tag.decode()][key] = None
        keys["b"].update(dict.fromkeys(_BATCH_KEY.findall(self._tail("batches", since["batches"]))))

    def _find(self, kind: str, tag: str, key: str, prefix: bytes) -> list | None:
        """The last line of part ``kind`` that starts ``prefix`` + ``key`` (None: there is none)."""
        quoted = _ascii(key).encode("ascii")
        if not self._known(tag, quoted, kind):
            return None
        data = self._part(kind)
        at = data.rfind(prefix + quoted + b",")
        if at < 0:
            return None
        return json.loads(data[at + 1:data.index(b"\n", at + 1)])

    def _locate(self, tag: str, key: str) -> tuple[int, int] | None:
        entry = self._find("index", tag, key, b'\n["' + tag.encode() + b'",')
        return None if entry is None else (entry[2], entry[3])

    def entry(self, item_id: str) -> dict | None:
        """The archive entry of ``item_id`` (None: not archived)."""
        if item_id in self.entries:
            return self.entries[item_id]
        where = self._locate("i", item_id)
        entry = None if where is None else self.read_entry(*where)
        if entry is not None and entry["item"]["id"] != item_id:
            raise ValueError(f"snapshot index points {item_id} at another item")
        self.entries[item_id] = entry
        return entry

    def read_entry(self, offset: int, length: int) -> dict:
        entry = json.loads(self.files.read("items", offset, length))
        if type(entry) is not dict or type(entry.get("item")) is not dict or type(entry.get("notes")) is not list:
            raise ValueError("a snapshot archive line is not an entry")
        for note in entry["notes"]:
            self.notes.setdefault(note["id"], note)
        return entry

    def item(self, item_id: str) -> dict | None:
        entry = self.entry(item_id)
        return None if entry is None else entry["item"]

    def note(self, note_id: str) -> dict | None:
        if note_id in self.notes:
            return self.notes[note_id]
        where = self._locate("n", note_id)
        if where is not None:
            self.read_entry(*where)
        return self.notes.setdefault(note_id, None)

    def notes_of(self, item_id: str) -> list[dict]:
        entry = self.entry(item_id)
        return [] if entry is None else entry["notes"]

    def cached_entry(self, item_id: str) -> dict | None:
        """The entry of ``item_id`` if a look-up already read it (never reads anything)."""
        return self.entries.get(item_id)

    def load(self) -> tuple[dict, dict]:
        """(every archived item, every archived annotation), the later lines winning."""
        if self._all is None:
            items: dict[str, dict] = {}
            notes: dict[str, dict] = {}
            data = self.files.read("items", 0, self.lengths["items"])
            for line in data.split(b"\n")[1:-1]:
                entry = json.loads(line)
                items[entry["item"]["id"]] = entry["item"]
                for note in entry["notes"]:
                    notes[note["id"]] = note
            self._all = (items, notes)
        return self._all

    def lines(self) -> Iterator[tuple[int, int, dict]]:
        """``(offset, length, entry)`` of every archive line, in file order (verify)."""
        data = self.files.read("items", 0, self.lengths["items"])
        position = data.index(b"\n") + 1
        while position < len(data):
            end = data.index(b"\n", position)
            yield position, end - position, json.loads(data[position:end])
            position = end + 1

    def index_map(self) -> dict:
        """``{(tag, key): (offset, length)}`` of the whole index, the last line for a key winning."""
        if self._index is None:
            index: dict[tuple[str, str], tuple[int, int]] = {}
            self._index = index
            for tag, key, offset, length in _INDEX_LINE.findall(self._tail("index", 0)):
                index[(tag.decode(), _key(key))] = (int(offset), int(length))
        return self._index

    # -- the batch index --------------------------------------------------------

    def batch(self, batch_id: str) -> tuple[int, int] | None:
        """``(event_seq, offset)`` of an accepted batch before the head's ``last_event_seq``."""
        if self._batches is not None:
            return self._batches.get(batch_id)
        entry = self._find("batches", "b", batch_id, b"\n[")
        return None if entry is None else (entry[1], entry[2])

    def all_batches(self) -> dict[str, tuple[int, int]]:
        """The whole batch index (verify, and a snapshot written from scratch)."""
        if self._batches is None:
            batches: dict[str, tuple[int, int]] = {}
            self._batches = batches
            for key, seq, offset in _BATCH_LINE.findall(self._tail("batches", 0)):
                batches[_key(key)] = (int(seq), int(offset))
        return self._batches
