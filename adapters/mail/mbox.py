"""An mbox file read by byte offsets, for the ``mbox`` adapter (``fold_adapters.mail.mailbox``).

The format has one rule: a line that begins with ``From `` begins a message
(the rule the standard library's ``mailbox.mbox`` follows; such lines inside
a message are written as ``>From ``, and one ``>`` is taken off when read).
The file is memory-mapped read-only and searched from the cursor's offset,
so a poll costs what was appended, not the size of the archive. Nothing is
written; the writer's locks are only looked at.
"""

from __future__ import annotations

import hashlib
import mmap
import os
import re
import time
from dataclasses import dataclass
from datetime import datetime, timezone

from fold_adapters.mail.source import SEEN_LIMIT, FirstRun, SeenCache, fingerprint

__all__ = ["MboxFile", "Span"]

_ESCAPED_FROM = re.compile(rb"(?m)^>(>*From )")
HEADER_BYTES = 64 * 1024


@dataclass(frozen=True)
class Span:
    """One message: ``[start, end)`` in the file, envelope line included."""

    start: int
    end: int

    @property
    def size(self) -> int:
        return self.end - self.start


class MboxFile:
    """The file as it is at this poll (its size is fixed when it is opened)."""

    def __init__(self, file, path: str) -> None:
        status = os.fstat(file.fileno())
        self.file, self.path, self.size = file, path, status.st_size
        self.mtime = datetime.fromtimestamp(status.st_mtime, tz=timezone.utc)
        self.map = mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ) if self.size else b""
        self.waiting = False  # the last message is still being written

    def close(self) -> None:
        if isinstance(self.map, mmap.mmap):
            self.map.close()

    def tail(self, offset: int) -> str:
        return hashlib.sha256(self.map[max(0, offset - 256):offset]).hexdigest()[:32]

    def continues(self, offset: int, tail: str) -> bool:
        """True when the file still holds, up to ``offset``, what the last poll read."""
        return 0 <= offset <= self.size and self.tail(offset) == tail

    def messages(self, start: int) -> list[Span]:
        """The complete messages from ``start`` on (the last one only when no writer is at work)."""
        found = self._starts(start)
        spans = [Span(a, b) for a, b in zip(found, found[1:])]
        if found and found[-1] < self.size:
            if self.map[self.size - 1:self.size] == b"\n" and not self._locked():
                spans.append(Span(found[-1], self.size))
                self.waiting = False
            else:
                self.waiting = True
        return spans

    def _starts(self, start: int) -> list[int]:
        found: list[int] = []
        if start < self.size and self.map[start:start + 5] == b"From ":
            found.append(start)
        position = start
        while True:
            index = self.map.find(b"\nFrom ", position)
            if index < 0:
                return found
            found.append(index + 1)
            position = index + 1

    def _locked(self) -> bool:
        """A writer holds a lock (fcntl or flock) or a dot-lock: the end of the file may be partial."""
        import fcntl

        if os.path.exists(self.path + ".lock"):
            return True
        for lock, unlock in ((fcntl.lockf, fcntl.lockf), (fcntl.flock, fcntl.flock)):
            try:
                lock(self.file.fileno(), fcntl.LOCK_SH | fcntl.LOCK_NB)
            except OSError:
                return True
            unlock(self.file.fileno(), fcntl.LOCK_UN)
        return False

    def message(self, span: Span, limit: int) -> tuple[bytes, datetime | None, int]:
        """The message's bytes (envelope line removed, ``>From `` unescaped, at most ``limit``), its
        envelope date and its whole size."""
        data = self.map[span.start:min(span.end, span.start + limit + 4096)]
        newline = data.find(b"\n")
        envelope, body = (data, b"") if newline < 0 else (data[:newline], data[newline + 1:])
        whole = span.size - len(envelope) - 1
        if span.size <= limit + 4096:  # the blank line that separates messages is not theirs
            if body.endswith(b"\r\n\r\n"):
                body = body[:-2]
            elif body.endswith(b"\n\n"):
                body = body[:-1]
            whole = len(body)
        body = _ESCAPED_FROM.sub(rb"\1", body)
        return body[:limit], envelope_date(envelope), max(whole, len(body))

    def first_run(self, policy: FirstRun, notes: list[str], where: str) -> int:
        """The offset a first run starts from."""
        spans = self.messages(0)
        end = spans[-1].end if spans else 0
        if policy.kind == "new":
            start = end
        elif policy.kind == "last":
            start = spans[-policy.last].start if policy.last and len(spans) >= policy.last else (
                spans[0].start if spans and policy.last else end)
        else:
            since = policy.since_instant
            start = next((s.start for s in spans if (envelope_date(self._envelope(s)) or since) >= since), end)
        notes.append(policy.describe(where, len(spans), sum(1 for s in spans if s.start >= start)))
        return start

    def after_seen(self, seen: SeenCache) -> int | None:
        """The end of the newest message the cache knows (None when it knows none of the last ones)."""
        spans = self.messages(0)
        for span in reversed(spans[-2 * SEEN_LIMIT:]):
            raw = self.message(span, HEADER_BYTES)[0]
            if fingerprint(raw) in seen:
                return span.end
        return None

    def _envelope(self, span: Span) -> bytes:
        line = self.map[span.start:min(span.end, span.start + 1024)]
        return line.split(b"\n", 1)[0]


def envelope_date(line: bytes) -> datetime | None:
    """The delivery time on an ``From sender Thu Oct  8 09:12:01 2026`` line (local time of this machine)."""
    words = line.decode("ascii", "replace").split()
    if len(words) < 7:
        return None
    try:
        moment = time.strptime(" ".join(words[2:7]), "%a %b %d %H:%M:%S %Y")
        return datetime.fromtimestamp(time.mktime(moment)).astimezone()
    except (ValueError, OverflowError, OSError):
        return None
