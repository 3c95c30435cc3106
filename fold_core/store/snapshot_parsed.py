"""A parsed snapshot, whatever its format: the head's state and the archive behind it.

``snapshot`` parses format 3 (a head and ``parts``), ``snapshot_v2`` the
older one-file format 2; both give a ``Snapshot`` built from what is here,
so that neither needs the other. ``Archive`` is what a reader asks of the
part of a snapshot the head leaves out (``parts.Parts``, or the format-2
``LegacyArchive``).
"""

from __future__ import annotations

import json
from typing import IO, Protocol

from fold_core.state import State

__all__ = ["FORMAT", "Archive", "FileIdentity", "ItemSource", "NoteSource", "Snapshot", "check_head"]

FORMAT = "fold-snapshot"

FileIdentity = tuple[int, int, int, int]  # (inode, size, mtime_ns, ctime_ns): a replaced file has a new one


class Archive(Protocol):
    """The items (and annotations) a snapshot's head leaves out, and its batch index."""

    @property
    def gen(self) -> str | None: ...

    def load(self) -> tuple[dict, dict]: ...

    def item(self, item_id: str) -> dict | None: ...

    def note(self, note_id: str) -> dict | None: ...

    def notes_of(self, item_id: str) -> list[dict]: ...

    def cached_entry(self, item_id: str) -> dict | None: ...

    def batch(self, batch_id: str) -> tuple[int, int] | None: ...

    def all_batches(self) -> dict[str, tuple[int, int]]: ...


class ItemSource:
    """The archive's items, for ``Table``: one at a time, or all."""

    __slots__ = ("archive",)

    def __init__(self, archive: Archive) -> None:
        self.archive = archive

    def get(self, key: object) -> dict | None:
        return self.archive.item(key) if type(key) is str else None

    def load(self) -> dict:
        return self.archive.load()[0]


class NoteSource:
    """The archive's annotations, for ``Table``; ids above the head's count are never archived."""

    __slots__ = ("archive", "total")

    def __init__(self, archive: Archive, total: int) -> None:
        self.archive, self.total = archive, total

    def get(self, key: object) -> dict | None:
        if type(key) is not str or not key.startswith("ann-") or not key[4:].isdigit() \
                or int(key[4:]) > self.total:
            return None
        return self.archive.note(key)

    def load(self) -> dict:
        return self.archive.load()[1]


class Snapshot:
    """A parsed head and the archive behind it (``Parts``, or a format-2 archive)."""

    __slots__ = ("version", "state", "offset", "last_offset", "floor", "archive", "stat")

    def __init__(self, version: int, state: State, offset: int, last_offset: int, floor: list | None,
                 archive: Archive, stat: FileIdentity | None) -> None:
        self.version, self.state, self.offset, self.last_offset = version, state, offset, last_offset
        self.floor = floor  # [status_at, id] of the last not-active item the head keeps (None: it keeps all)
        self.archive = archive
        self.stat = stat  # identity of the snapshot.json this came from (to notice a newer one)

    def matches(self, log: IO[bytes]) -> bool:
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

    @property
    def generation(self) -> str | None:
        return self.archive.gen


def check_head(doc: dict, version: int, budget: int, counts: tuple[str, ...]) -> tuple[int, int, int]:
    """``(last_event_seq, offset, last_offset)`` of a parsed head of format ``version``; ValueError when unusable.

    ``counts`` name the head's other non-negative integers.
    """
    if doc.get("format") != FORMAT or doc.get("version") != version:
        raise ValueError(f"format {doc.get('format')!r} version {doc.get('version')!r}")
    if doc["budget"] != budget:
        raise ValueError(f"budget {doc['budget']} differs from meta.json's {budget}")
    seq, offset, last_offset = doc["last_event_seq"], doc["offset"], doc["last_offset"]
    if not all(type(v) is int and v >= 0 for v in (seq, offset, last_offset) + tuple(doc[n] for n in counts)):
        raise ValueError("bad positions or counts")
    if (seq == 0) != (offset == 0) or (seq > 0 and last_offset >= offset):
        raise ValueError("inconsistent positions")
    if type(doc["items"]) is not dict or type(doc["annotations"]) is not dict:
        raise ValueError("bad tables")
    return seq, offset, last_offset
