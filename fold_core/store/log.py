"""The event log ``events.jsonl`` (contract §6.1, §6.2 "Recover", torn tail rule).

One record per line, compact JSON, UTF-8, ``ensure_ascii=False``. Line *n*
holds the record with ``event_seq`` *n*: the log is the truth, so a line that
does not parse, or does not carry the next event_seq, stops recovery with
``StoreCorrupt`` naming the 1-based line. The one exception is the torn tail
(as etcd's WAL repair): the last bytes of the file, when they are

* a fragment without a terminating newline — always a torn write; or
* a newline-terminated last line that does not parse **and** contains NUL
  bytes — a zero-filled block from an interrupted append;

are not records. ``scan`` reports them in ``Scan.torn`` and never yields them;
only a writer, holding the exclusive lock, repairs them (``repair_tail``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from typing import NamedTuple

from fold_core.errors import StoreCorrupt

__all__ = ["Scan", "Torn", "encode_record", "fsync_dir", "read_line_at", "repair_tail", "scan"]

_loads = json.loads


def encode_record(record: dict) -> bytes:
    """The record's line: compact JSON, UTF-8, one trailing newline.

    A string holding a lone surrogate cannot be UTF-8; such a record is written
    with ASCII escapes instead, which reads back as exactly the same value.
    """
    text = json.dumps(record, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError:
        data = json.dumps(record, separators=(",", ":"), allow_nan=False).encode("ascii")
    return data + b"\n"


class Torn(NamedTuple):
    """Bytes at the end of the log that are not a record."""

    offset: int  # where the torn bytes start (the end of the last complete record)
    size: int  # how many bytes
    event_seq: int  # the event_seq the torn line would have had
    nul_line: bool  # a newline-terminated line with NUL bytes (moved aside on repair)


class Scan:
    """Walks the log from a known record boundary; see ``records``."""

    def __init__(self, file, offset: int, event_seq: int, size: int) -> None:
        self._file = file
        self.offset = offset  # end of the last complete record yielded so far
        self.event_seq = event_seq  # event_seq of that record (its line number)
        self.size = size  # file size when the lock was taken
        self.torn: Torn | None = None

    def records(self) -> Iterator[tuple[dict, int]]:
        """``(record, start offset)`` of each complete record, in order.

        Raises ``StoreCorrupt`` at the first complete line that does not parse
        (outside the torn tail rule) or breaks the event_seq order.
        """
        file, size = self._file, self.size
        file.seek(self.offset)
        position, expected = self.offset, self.event_seq + 1
        for line in file:
            end = position + len(line)
            if end > size:  # bytes appended after we looked: not ours to read
                line = line[: size - position]
                end = size
                if not line:
                    break
            if line[-1:] != b"\n":
                self.torn = Torn(position, end - position, expected, False)
                return
            try:
                record = _loads(line)
            except (ValueError, RecursionError):
                if end == size and b"\0" in line:
                    self.torn = Torn(position, end - position, expected, True)
                    return
                raise StoreCorrupt(
                    f"events.jsonl line {expected}: a complete line that is not valid JSON"
                    " (the log is the truth: it is never skipped)",
                    line=expected,
                ) from None
            if type(record) is not dict or record.get("event_seq") != expected:
                found = record.get("event_seq") if type(record) is dict else type(record).__name__
                raise StoreCorrupt(
                    f"events.jsonl line {expected}: expected a record with event_seq {expected},"
                    f" found {found!r}",
                    line=expected,
                )
            self.offset, self.event_seq = end, expected  # before yielding: a consumer
            yield record, position  # that fails on this record finds its line here
            position, expected = end, expected + 1
            if end >= size:
                break


def scan(file, offset: int, event_seq: int) -> Scan:
    """A scan of ``file`` (opened ``rb``) from ``offset``, just after record ``event_seq``."""
    return Scan(file, offset, event_seq, os.fstat(file.fileno()).st_size)


def read_line_at(path: str, offset: int) -> dict:
    """The record whose line starts at ``offset``."""
    with open(path, "rb") as file:
        file.seek(offset)
        return _loads(file.readline())


def fsync_dir(path: str) -> None:
    """Make a directory's entries (a created or replaced file) durable."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def repair_tail(log_path: str, torn: Torn) -> None:
    """Remove a torn tail; a NUL line is first kept as ``events.jsonl.torn-<event_seq>``.

    Only under the exclusive lock. Truncation is fsynced before anything is
    appended after it.
    """
    fd = os.open(log_path, os.O_RDWR | os.O_CLOEXEC)
    try:
        if torn.nul_line:
            os.lseek(fd, torn.offset, os.SEEK_SET)
            data = os.read(fd, torn.size)
            aside = f"{log_path}.torn-{torn.event_seq}"
            with open(aside, "wb") as keep:
                keep.write(data)
                keep.flush()
                os.fsync(keep.fileno())
            fsync_dir(os.path.dirname(log_path))
        os.ftruncate(fd, torn.offset)
        os.fsync(fd)
    finally:
        os.close(fd)
