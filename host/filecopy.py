"""Copying a backup's files fast: in the kernel, hashed as they land, on disk before anyone is told.

``copy_files(jobs, directory)`` writes every job's file into ``directory``
at once and answers ``{name: sha256}``. Each file has two threads: a writer
(``from_range``: ``copy_file_range`` from an open source in large steps, so
the bytes never pass through Python; or any function that writes the file,
such as SQLite's backup API) that ``fsync``s the file as soon as it is
complete, and a hasher that follows it, reading what was already written
back from the page cache. The digest is therefore the digest of the copy,
not of the source, and hashing (the CPU's part: ``hashlib`` lets go of the
GIL on large buffers) overlaps the copying and the disk's part (the fsync
of one file while the others are still copied or hashed).

A file system or kernel without ``copy_file_range`` between these files
(another mount before Linux 5.3, some network and FUSE file systems) gets a
plain read-and-write copy instead.
"""

from __future__ import annotations

import errno
import hashlib
import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from fold_core.errors import StoreCorrupt

__all__ = ["Job", "Progress", "copy_files", "from_range"]

STEP = 8 << 20  # bytes copied at a time: few system calls, and the hasher follows closely
READ = 1 << 20  # bytes hashed at a time: the buffer stays in the CPU's cache
NO_KERNEL_COPY = {errno.EXDEV, errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP, errno.EBADF, errno.EPERM}


class Progress:
    """How much of a file its writer has written; the hasher waits on it."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._written = 0
        self._final: int | None = None
        self._failed = False

    def wrote(self, upto: int) -> None:
        with self._changed:
            self._written = upto
            self._changed.notify_all()

    def finish(self, length: int | None) -> None:
        """The file is complete at ``length`` bytes (None: the writer failed)."""
        with self._changed:
            self._final, self._failed = length, length is None
            if length is not None:
                self._written = length
            self._changed.notify_all()

    def beyond(self, position: int) -> tuple[int, bool]:
        """``(bytes written, complete)`` once more than ``position`` bytes are written or the file is complete."""
        with self._changed:
            self._changed.wait_for(lambda: self._written > position or self._final is not None or self._failed)
            if self._failed:
                raise _WriterFailed
            return self._written, self._final is not None and self._written >= self._final


class _WriterFailed(Exception):
    """The writer's own error is the one reported."""


@dataclass(frozen=True)
class Job:
    """One file of the copy: its name, and what writes it (``write(path, progress)``)."""

    name: str
    write: Callable[[str, Progress], None]


def from_range(source_fd: int, length: int, *, origin: str) -> Callable[[str, Progress], None]:
    """A writer copying the first ``length`` bytes of the open file ``source_fd`` (named ``origin``)."""

    def write(path: str, progress: Progress) -> None:
        with open(path, "xb") as out:
            target = out.fileno()
            offset, kernel = 0, True
            while offset < length:
                count = min(STEP, length - offset)
                if kernel:
                    try:
                        done = os.copy_file_range(source_fd, target, count, offset)
                    except OSError as error:
                        if error.errno not in NO_KERNEL_COPY or offset:
                            raise
                        kernel = False
                        continue
                else:
                    done = os.write(target, os.pread(source_fd, count, offset))
                if done == 0:
                    raise StoreCorrupt(f"{origin} is shorter than it was a moment ago ({length} bytes)")
                offset += done
                progress.wrote(offset)

    return write


def copy_files(jobs: list[Job], directory: str) -> dict[str, str]:
    """Write every job's file into ``directory`` (new names), each fsynced; ``{name: sha256 of the copy}``.

    The directory's own entries are not synced here: the caller does that once.
    """
    with ThreadPoolExecutor(max_workers=2 * len(jobs) or 1, thread_name_prefix="copy") as pool:
        running = []
        for job in jobs:
            path, progress = os.path.join(directory, job.name), Progress()
            running.append((job.name, pool.submit(_write, job, path, progress), pool.submit(_hash, path, progress)))
        digests = {}
        for name, written, hashed in running:
            written.result()  # a writer's error first: it is the cause of its hasher's
            digests[name] = hashed.result()
    return digests


def _write(job: Job, path: str, progress: Progress) -> None:
    try:
        job.write(path, progress)
    except BaseException:
        progress.finish(None)
        raise
    with open(path, "rb") as file:  # a writer that wrote through its own handle (SQLite) is synced here
        length = os.fstat(file.fileno()).st_size
        os.fsync(file.fileno())
    progress.finish(length)


def _hash(path: str, progress: Progress) -> str | None:
    digest, buffer, position = hashlib.sha256(), bytearray(READ), 0
    view = memoryview(buffer)
    try:
        written, complete = progress.beyond(position)
        with open(path, "rb", buffering=0) as file:
            while True:
                while position < written:
                    count = file.readinto(view[:min(READ, written - position)])
                    if not count:
                        raise StoreCorrupt(f"{path} is shorter than what was written into it")
                    digest.update(view[:count])
                    position += count
                if complete:
                    return digest.hexdigest()
                written, complete = progress.beyond(position)
    except _WriterFailed:
        return None
