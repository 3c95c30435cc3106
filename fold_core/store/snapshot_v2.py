"""Reading a format-2 snapshot (the format before the flat-cost store, commit eff7271), so that old stores open.

Format 2 is one file, ``snapshot.json``, of three lines (one JSON object):

1. the *head*: positions, revision, the active items, the 200 most recent
   withdrawn/merged items, every item on an annotation's merge chain, every
   annotation, the active index and ``inactive_total``, ending ``,\\n``;
2. ``"archive": {...},`` — every other item;
3. ``"batches": {...}}`` — the batch index ``{batch_id: [event_seq, digest, offset]}``.

A state read parses only the head; the archive and the batch index are read
from the kept file when something asks for them. The next writer replaces
the snapshot with format 3 (``snapshot``): nothing writes format 2 any more.
"""

from __future__ import annotations

import heapq
import json
from typing import IO

from fold_core.state import State
from fold_core.table import Table
from fold_core.timefmt import instant_key
from fold_core.store.snapshot_parsed import FileIdentity, ItemSource, NoteSource, Snapshot, check_head

__all__ = ["LegacyArchive", "parse_v2"]

VERSION, RECENT = 2, 200


class LegacyArchive:
    """The archive and batch index lines of a format-2 snapshot, read from the kept file.

    The same interface as ``parts.Parts`` for reading: every annotation is in
    a format-2 head, so none is archived.
    """

    gen = None

    def __init__(self, source: IO[bytes], head_bytes: int, archive_bytes: int) -> None:
        self._source = source
        self._head_bytes, self._archive_bytes = head_bytes, archive_bytes
        self._items: dict | None = None
        self._line: bytes | None = None
        self._batches: dict | None = None

    def close(self) -> None:
        source = getattr(self, "_source", None)
        if source is not None:
            source.close()

    def __del__(self) -> None:
        self.close()

    def load(self) -> tuple[dict, dict]:
        if self._items is None:
            self._source.seek(self._head_bytes)
            raw = self._source.read(self._archive_bytes)
            if len(raw) != self._archive_bytes or raw[-2:] != b",\n":
                raise ValueError("archive line is cut short")
            value = json.loads(b"{" + raw[:-2] + b"}")["archive"]
            if type(value) is not dict:
                raise ValueError("archive is not an object")
            self._items = value
        return self._items, {}

    def item(self, item_id: str) -> dict | None:
        return self.load()[0].get(item_id)

    def note(self, note_id: str) -> dict | None:
        return None

    def notes_of(self, item_id: str) -> list[dict]:
        return []

    def cached_entry(self, item_id: str) -> dict | None:
        return None

    def _batch_line(self) -> bytes:
        if self._line is None:
            self._source.seek(self._head_bytes + self._archive_bytes)
            raw = self._source.read()
            if not raw.startswith(b'"batches":{') or raw[-3:] != b"}}\n":
                raise ValueError("batch index line is cut short")
            self._line = raw
        return self._line

    def batch(self, batch_id: str) -> tuple[int, int] | None:
        """``(event_seq, offset)`` of ``batch_id``, found in the raw line without parsing the rest.

        Batch ids are ``[A-Za-z0-9._:-]`` and need no JSON escaping, so the key
        ``"<id>":[`` right after ``{`` or ``,`` can only be that batch's entry.
        """
        if self._batches is not None:
            return self._batches.get(batch_id)
        line = self._batch_line()
        needle = b'"' + batch_id.encode("ascii", "backslashreplace") + b'":['
        at = line.find(needle)
        while at != -1:
            if line[at - 1:at] in (b"{", b","):
                start = at + len(needle) - 1
                entry = json.loads(line[start:line.index(b"]", start) + 1])
                if type(entry) is not list or len(entry) != 3:
                    raise ValueError(f"bad batch index entry for {batch_id}")
                return entry[0], entry[2]
            at = line.find(needle, at + 1)
        return None

    def all_batches(self) -> dict[str, tuple[int, int]]:
        if self._batches is None:
            value = json.loads(b"{" + self._batch_line())["batches"]
            if type(value) is not dict:
                raise ValueError("batch index is not an object")
            self._batches = {key: (entry[0], entry[2]) for key, entry in value.items()}
        return self._batches


def parse_v2(source: IO[bytes], budget: int, stat: FileIdentity | None) -> Snapshot:
    """The ``Snapshot`` of a format-2 file (opened ``rb``, kept open for the lazy lines)."""
    try:
        head = source.readline()
        if head[-2:] != b",\n":
            raise ValueError("not a three-line fold snapshot")
        doc = json.loads(head[:-2] + b"}")
        seq, offset, last_offset = check_head(doc, VERSION, budget, ("archive_bytes", "archive_count", "inactive_total"))
        items, notes = doc["items"], doc["annotations"]
    except BaseException:
        source.close()
        raise
    archive = LegacyArchive(source, len(head), doc["archive_bytes"])
    state = State(
        budget=budget,
        revision=doc["revision"],
        event_seq=seq,
        last_checked_at=doc["last_checked_at"],
        items=Table(items, size=len(items) + doc["archive_count"], source=ItemSource(archive)),
        annotations=Table(notes, size=len(notes), source=NoteSource(archive, 0)),
        active={layer: tuple(ids) for layer, ids in doc["active"]},
        inactive_total=doc["inactive_total"],
    )
    floor = None
    if doc["archive_count"]:  # the head holds exactly the RECENT most recent not-active items (and chains)
        key = lambda item: (instant_key(item["status_at"]), item["id"])  # noqa: E731
        recent = heapq.nlargest(RECENT, (item for item in items.values() if item["status"] != "active"), key=key)
        floor = [recent[-1]["status_at"], recent[-1]["id"]] if recent else ["", ""]  # "": above every instant
    return Snapshot(VERSION, state, offset, last_offset, floor, archive, stat)
