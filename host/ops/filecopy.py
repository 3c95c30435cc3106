"""Copying a backup's files fast: in the kernel, hashed beside the copy, on disk before anyone is told.

``copy_files(jobs, directory)`` writes every job's file into ``directory``
at once and answers ``{name: sha256}``, each file fsynced as soon as it is
whole. Two kinds of job:

* ``Range`` — the first ``length`` bytes of an open file that does not
  change there while the copy runs (the log's lines up to an event, a
  snapshot file that is replaced, never rewritten, host.db's file while a
  reader pins it). One thread copies them with ``copy_file_range`` (the
  bytes never pass through Python, nor even user space on most file
  systems) and asks the disk to start writing each 8 MiB as soon as it is
  copied, so the writing overlaps the copy instead of all waiting for the
  final ``fsync``; another thread reads the same range from the page cache
  and hashes it (``hashlib`` lets go of the GIL on large buffers), so
  hashing, the CPU's part, overlaps the copy and the disk's part. Because
  the digest is taken from the source independently of the copy, a source
  that did change under the copy would make the backup fail its check at
  restore, never pass it. Small files are copied and hashed one after the
  other on the calling thread while the large ones run: a thread costs more
  than they do.
* ``Produced`` — a file some other code writes whole (SQLite's backup API);
  it is hashed once written.

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
from typing import Any, NamedTuple

from fold_core.errors import StoreCorrupt

__all__ = ["Produced", "Range", "copy_files"]

READ = 1 << 20  # bytes hashed at a time: the buffer stays in the CPU's cache
STEP = 64 << 20  # bytes copied per system call when the kernel cannot copy (read and written through Python)
WRITE_BACK = 8 << 20  # bytes copied before the disk is asked to start writing them
SMALL = 4 << 20  # a file up to this size is copied and hashed on the calling thread
NO_KERNEL_COPY = {errno.EXDEV, errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP, errno.EBADF, errno.EPERM}


class Range(NamedTuple):
    """The first ``length`` bytes of the open file ``source`` (named ``origin`` in errors), as ``name``."""

    name: str
    source: int
    length: int
    origin: str


class Produced(NamedTuple):
    """A file ``write(path)`` creates whole, as ``name``."""

    name: str
    write: Callable[[str], None]


def copy_files(jobs: list[Range | Produced], directory: str) -> dict[str, str]:
    """Write every job's file into ``directory`` (new names), each fsynced; ``{name: sha256}``.

    The directory's own entries are not synced here: the caller does that once.
    The largest files start first: they decide when the copy ends.
    """
    running: list[tuple[str, _Started, _Started | None]] = []
    small: list[tuple[Range, str]] = []
    try:
        for job in sorted(jobs, key=_weight, reverse=True):
            path = os.path.join(directory, job.name)
            if isinstance(job, Produced):
                running.append((job.name, _Started(_produce, job, path), None))
            elif job.length > SMALL:
                running.append((job.name, _Started(_copy_range, job, path), _Started(_hash_range, job)))
            else:
                small.append((job, path))
        digests = {}
        for job, path in small:
            _copy_range(job, path)
            digests[job.name] = _hash_range(job)
    finally:
        for _, *started in running:  # every thread ends before anyone sees an error: none writes on behind it
            for task in started:
                if task is not None:
                    task.join()
    for name, written, hashed in running:
        digest = written.result()
        digests[name] = digest if hashed is None else hashed.result()
    return digests


def _weight(job: Range | Produced) -> int:
    return job.length if isinstance(job, Range) else 1 << 62  # SQLite's copy of host.db: the longest


class _Started(threading.Thread):
    """``work(*args)`` on its own thread, started at once; ``result()`` waits for it and answers or raises."""

    def __init__(self, work: Callable, *args) -> None:
        super().__init__(name="copy", daemon=True)
        self.work, self.args = work, args
        self.value: Any = None
        self.error: BaseException | None = None
        self.start()

    def run(self) -> None:
        try:
            self.value = self.work(*self.args)
        except BaseException as error:  # handed to the caller by result()
            self.error = error

    def result(self) -> Any:
        self.join()
        if self.error is not None:
            raise self.error
        return self.value


def _copy_range(job: Range, path: str) -> None:
    with open(path, "xb") as out:
        target, offset, kernel, flushed = out.fileno(), 0, True, 0
        while offset < job.length:
            count = min(job.length - offset, WRITE_BACK)
            if kernel:
                try:
                    done = os.copy_file_range(job.source, target, count, offset)
                except OSError as error:
                    if error.errno not in NO_KERNEL_COPY or offset:
                        raise
                    kernel = False
                    continue
            else:
                done = os.write(target, os.pread(job.source, min(STEP, count), offset))
            if done == 0:
                raise StoreCorrupt(f"{job.origin} is shorter than it was a moment ago ({job.length} bytes)")
            offset += done
            if offset - flushed >= WRITE_BACK:
                _start_write_back(target, flushed, offset - flushed)
                flushed = offset
        os.fsync(target)


def _start_write_back(target: int, offset: int, length: int) -> None:
    """Have the kernel start writing this range to disk now, without waiting for it (Linux; elsewhere nothing).

    ``POSIX_FADV_DONTNEED`` starts the write-back of dirty pages and drops only
    clean ones: the copy's pages leave the cache once on disk, which a backup
    wants anyway.
    """
    if hasattr(os, "posix_fadvise"):
        os.posix_fadvise(target, offset, length, os.POSIX_FADV_DONTNEED)


def _hash_range(job: Range) -> str:
    digest, buffer, position = hashlib.sha256(), bytearray(min(READ, job.length) or 1), 0
    view = memoryview(buffer)
    while position < job.length:
        count = os.preadv(job.source, [view[:min(READ, job.length - position)]], position)
        if count == 0:
            raise StoreCorrupt(f"{job.origin} is shorter than it was a moment ago ({job.length} bytes)")
        digest.update(view[:count])
        position += count
    return digest.hexdigest()


def _produce(job: Produced, path: str) -> str:
    job.write(path)
    digest, buffer = hashlib.sha256(), bytearray(READ)
    view = memoryview(buffer)
    with open(path, "rb", buffering=0) as file:
        while count := file.readinto(buffer):
            digest.update(view[:count])
        os.fsync(file.fileno())
    return digest.hexdigest()
