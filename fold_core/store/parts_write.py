"""Writing the snapshot's parts (see ``parts``): append, or create a new generation.

Only a holder of the lock that allows it writes here: the exclusive lock to
append to the current generation or to remove other generations; a reader
under the shared lock only ever creates a generation of its own.
"""

from __future__ import annotations

import os
import re

from fold_core.files import write_all
from fold_core.store.log import fsync_dir
from fold_core.store.parts import header, part_names

__all__ = ["PartsWriter", "new_generation", "remove_other_generations"]

_NAME = re.compile(r"snapshot\.([0-9a-f]{12})\.(items|index|batches)")


def new_generation() -> str:
    return os.urandom(6).hex()


class PartsWriter:
    """Appends to (or creates) one generation's parts; the caller holds the lock that allows it.

    ``write`` gives the offset where the appended bytes begin; they are
    gathered in memory and written in large pieces (a snapshot written from
    scratch appends one line per archived item). ``finish`` writes what is
    left, fsyncs every part written to and returns the new lengths, which a
    new head may then record.
    """

    FLUSH_AT = 1 << 20

    def __init__(self, directory: str, gen: str, lengths: dict[str, int] | None) -> None:
        self.directory, self.gen = directory, gen
        self.created = lengths is None
        self.fds: dict[str, int] = {}
        self.sizes: dict[str, int] = {}
        self.pending: dict[str, list[bytes]] = {}  # bytes not yet written, by part
        self.flushed: dict[str, int] = {}  # how far each part is written
        self.touched: set[str] = set()  # parts written to (only they need an fsync)
        try:
            for kind, name in part_names(gen).items():
                path = os.path.join(directory, name)
                if lengths is None:  # created
                    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
                    self.fds[kind] = fd
                    header_line = header(gen, kind)
                    write_all(fd, header_line)
                    self.sizes[kind] = len(header_line)
                else:
                    fd = self.fds[kind] = os.open(path, os.O_RDWR | os.O_CLOEXEC)
                    self.sizes[kind] = _cut_partial_line(fd, lengths[kind])
                    if self.sizes[kind] > lengths[kind]:  # lines of an interrupted refresh, maybe never synced
                        self.touched.add(kind)
        except BaseException:
            self.close()
            raise

    def write(self, kind: str, data: bytes) -> int:
        """Append ``data`` to part ``kind``; the offset it starts at."""
        start = self.sizes[kind]
        if data:
            pending = self.pending.setdefault(kind, [])
            pending.append(data)
            self.sizes[kind] = start + len(data)
            if self.sizes[kind] - self.flushed.get(kind, start) >= self.FLUSH_AT:
                self._flush(kind)
        return start

    def _flush(self, kind: str) -> None:
        pending = self.pending.pop(kind, None)
        if not pending:
            return
        data = b"".join(pending)
        start = self.sizes[kind] - len(data)
        fd = self.fds[kind]
        os.lseek(fd, start, os.SEEK_SET)
        write_all(fd, data)
        self.flushed[kind] = self.sizes[kind]
        self.touched.add(kind)

    def finish(self) -> dict[str, int]:
        for kind in list(self.pending):
            self._flush(kind)
        for kind, fd in self.fds.items():
            if self.created or kind in self.touched:  # a part nothing was appended to is as durable as before
                os.fsync(fd)
        if self.created:
            fsync_dir(self.directory)
        return dict(self.sizes)

    def close(self) -> None:
        for fd in self.fds.values():
            os.close(fd)
        self.fds = {}


def _cut_partial_line(fd: int, covered: int) -> int:
    """Cut bytes after the last newline (an interrupted append); never below ``covered``. The size."""
    size = os.fstat(fd).st_size
    if size < covered:
        raise ValueError("a snapshot part is shorter than its head says")
    end = size
    while end > covered:
        chunk = os.pread(fd, min(65536, end - covered), max(end - 65536, covered))
        newline = chunk.rfind(b"\n")
        if newline >= 0:
            end = end - len(chunk) + newline + 1
            break
        end -= len(chunk)
    if end != size:
        os.ftruncate(fd, end)
    return end


def remove_other_generations(directory: str, keep: set[str]) -> None:
    """Remove part files of generations no head names (only under the exclusive lock)."""
    for name in os.listdir(directory):
        match = _NAME.fullmatch(name)
        if match is not None and match.group(1) not in keep:
            try:
                os.remove(os.path.join(directory, name))
            except OSError:
                pass
