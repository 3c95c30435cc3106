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

Appending (§6.2 step 4) is in ``append``.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterator
from typing import IO, Any, Literal

from fold_core.errors import StoreCorrupt, StoreUnavailable
from fold_core.files import fsync_dir

__all__ = [
    "Scan",
    "Torn",
    "bulk_loads",
    "canonical_line",
    "encode_record",
    "fsync_dir",
    "line_start",
    "read_line_at",
    "read_records",
    "repair_tail",
    "scan",
    "unavailable",
]

# The C scanner json.loads uses: set on every JSONDecoder, though typeshed does not declare it.
_scan_once: Callable[[str, int], tuple[Any, int]] = getattr(json.JSONDecoder(), "scan_once")

Loads = Callable[[bytes], Any]  # one log line -> its JSON value (ValueError when it is none)


def _loads(line: bytes) -> Any:
    """``json.loads(line)`` for one log line: the same value or error, less overhead per line.

    The common case — a UTF-8 line holding one JSON value and its newline — goes
    straight to the C scanner; anything else takes ``json.loads`` itself.
    """
    try:
        text = line.decode("utf-8")
        value, end = _scan_once(text, 0)
    except (UnicodeDecodeError, StopIteration, ValueError, RecursionError):
        return json.loads(line)
    if end != len(text) - 1 or text[end] != "\n":
        return json.loads(line)
    return value


def bulk_loads() -> Loads:
    """The parser for a long replay (a cold recovery): ``orjson.loads`` when installed, else ``_loads``.

    orjson parses a record about twice as fast (docs/benchmarks.md).
    It reads every value a record can hold exactly as ``json`` does — the kernel
    records no number beyond 64 bits — and any line it refuses (NaN, a lone
    surrogate, bad JSON) goes to ``_loads``, which answers as ``json.loads``.
    Imported only here: a state read does not pay for it.
    """
    try:
        from orjson import loads as fast
    except ImportError:
        return _loads

    def loads(line: bytes) -> Any:
        try:
            return fast(line)
        except ValueError:  # orjson.JSONDecodeError
            return _loads(line)

    return loads


def encode_record(record: dict) -> bytes:
    """The record's line: compact JSON, UTF-8, one trailing newline (the canonical encoding).

    ``canonical_line`` defines the bytes. orjson, when installed, writes the
    same bytes about twenty times faster for every record the kernel makes:
    it escapes exactly what ``json`` escapes with ``ensure_ascii=False``
    (``\\" \\\\ \\b \\f \\n \\r \\t`` and ``\\u00XX`` for the other C0 controls) and keeps key
    order. What it refuses — a lone surrogate, an integer beyond 64 bits, a
    key that is not a string, nesting deeper than 255 — takes the canonical
    path. The two differ only on floats (``1e-05`` against ``0.00001``, NaN
    written as ``null``), and a record never holds one: the kernel refuses a
    float in every field (tests/unit/test_record_encoding.py holds the proof).
    """
    fast = _orjson_dumps()
    if fast:
        try:
            return fast(record, option=_APPEND_NEWLINE)
        except TypeError:  # orjson.JSONEncodeError
            pass
    return canonical_line(record)


def canonical_line(record: dict) -> bytes:
    """``json.dumps(record, ensure_ascii=False, separators=(",", ":"), allow_nan=False)`` as UTF-8, and a newline.

    A string holding a lone surrogate cannot be UTF-8; such a record is written
    with ASCII escapes instead, which reads back as exactly the same value.
    """
    text = _utf8_json(record)
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError:
        data = _ascii_json(record).encode("ascii")
    return data + b"\n"


_utf8_json = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode
_ascii_json = json.JSONEncoder(separators=(",", ":"), allow_nan=False).encode
_fast_dumps: Callable[..., bytes] | Literal[False] | None = None  # orjson.dumps once looked up; False: none
_APPEND_NEWLINE = 0


def _orjson_dumps() -> Callable[..., bytes] | Literal[False]:
    """orjson.dumps (imported on the first append: a read never pays for it), or False."""
    global _fast_dumps, _APPEND_NEWLINE
    if _fast_dumps is None:
        try:
            import orjson
        except ImportError:
            _fast_dumps = False
        else:
            _fast_dumps, _APPEND_NEWLINE = orjson.dumps, orjson.OPT_APPEND_NEWLINE
    return _fast_dumps


class Torn:
    """Bytes at the end of the log that are not a record.

    (Plain class: ``typing.NamedTuple`` or dataclasses would cost import time
    on the read path.)
    """

    __slots__ = ("offset", "size", "event_seq", "nul_line")

    def __init__(self, offset: int, size: int, event_seq: int, nul_line: bool) -> None:
        self.offset = offset  # where the torn bytes start (the end of the last complete record)
        self.size = size  # how many bytes
        self.event_seq = event_seq  # the event_seq the torn line would have had
        self.nul_line = nul_line  # a newline-terminated line with NUL bytes (moved aside on repair)


class Scan:
    """Walks the log from a known record boundary; see ``records``."""

    def __init__(self, file: IO[bytes], offset: int, event_seq: int, size: int) -> None:
        self._file = file
        self.offset = offset  # end of the last complete record yielded so far
        self.event_seq = event_seq  # event_seq of that record (its line number)
        self.size = size  # file size when the lock was taken
        self.torn: Torn | None = None

    def records(self, loads: Loads | None = None, only: bytes | None = None) -> Iterator[tuple[dict, int]]:
        """``(record, start offset)`` of each complete record, in order.

        Raises ``StoreCorrupt`` at the first complete line that does not parse
        (outside the torn tail rule) or breaks the event_seq order. ``loads``
        parses a line (default: exactly as ``json.loads``). With ``only``,
        a line without those bytes is counted and passed over unparsed.
        """
        loads = _loads if loads is None else loads
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
            if only is not None and only not in line:
                record = None  # counted, not parsed
            else:
                try:
                    record = loads(line)
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
            if record is not None:
                yield record, position  # that fails on this record finds its line here
            position, expected = end, expected + 1
            if end >= size:
                break


def scan(file: IO[bytes], offset: int, event_seq: int) -> Scan:
    """A scan of ``file`` (opened ``rb``) from ``offset``, just after record ``event_seq``."""
    return Scan(file, offset, event_seq, os.fstat(file.fileno()).st_size)


_SEQ = re.compile(rb'^\{"v":\s*1,\s*"event_seq":\s*(\d+)[,}]')


def line_start(path: str, event_seq: int, end: int) -> int | None:
    """Where the line of record ``event_seq`` starts, found by bisection over the bytes before ``end``.

    Line n holds record n, and every line begins ``{"v":1,"event_seq":n`` (the
    encoder's key order), so a reader after record n need not parse the n − 1
    records before it. None when a line does not begin that way: the caller
    then reads from the start, and ``scan`` checks the order of whatever it reads.
    """
    if event_seq <= 1:
        return 0
    with open(path, "rb") as file:

        def seq_at(offset: int) -> tuple[int, int] | None:
            """``(event_seq, line start)`` of the first line starting at or after ``offset``."""
            file.seek(offset)
            if offset:
                file.readline()  # the rest of the line ``offset`` falls in
            start = file.tell()
            if start >= end:
                return None
            found = _SEQ.match(file.read(48))
            return (int(found.group(1)), start) if found else None

        low, high = 0, end  # the line of ``event_seq`` starts in [low, high)
        while high - low > 1 << 16:
            middle = seq_at((low + high) // 2)
            if middle is None or middle[1] >= high:
                break
            seq, start = middle
            if seq == event_seq:
                return start
            if seq < event_seq:
                low = start
            else:
                high = start
        file.seek(low)
        if low:
            if _SEQ.match(file.read(48)) is None:
                return None
            file.seek(low)
        position = low
        for line in file:
            if position >= high:
                break
            found = _SEQ.match(line[:48])
            if found is None:
                return None
            if int(found.group(1)) == event_seq:
                return position
            position += len(line)
    return None


def read_line_at(path: str, offset: int) -> dict:
    """The record whose line starts at ``offset``."""
    with open(path, "rb") as file:
        file.seek(offset)
        return _loads(file.readline())


def read_records(path: str, start: int, start_seq: int, since: int, end: int,
                 only: bytes | None = None) -> Iterator[dict]:
    """Records with event_seq > ``since`` from the line at ``start`` (after ``start_seq``) up to ``end``.

    With ``only``, just the records whose lines hold those bytes.
    """
    with open(path, "rb") as log:
        walk = scan(log, start, start_seq)
        walk.size = end
        for record, _ in walk.records(only=only):
            if record["event_seq"] > since:
                yield record




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
    fsync_dir(os.path.dirname(log_path))  # the log may have been created by the writer that died


def unavailable(error: OSError, doing: str) -> StoreUnavailable:
    """``StoreUnavailable`` for an OSError, naming what was being done and the file."""
    where = f" ({error.filename})" if error.filename else ""
    return StoreUnavailable(f"{doing}: {error.strerror or error}{where}")
