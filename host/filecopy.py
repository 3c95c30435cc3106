"""Copying a backup's files fast: in the kernel, hashed beside the copy, on disk before anyone is told.

``copy_files(jobs, directory)`` writes every job's file into ``directory``
at once and answers ``{name: sha256}``, each file fsynced as soon as it is
whole. Two kinds of job:

* ``Range`` — the first ``length`` bytes of an open file that does not
  change there while the copy runs (the log's lines up to an event, a
  snapshot file that is replaced, never rewritten, host.db's file while a
  reader pins it). One thread copies them with ``copy_file_range`` (the
  bytes never pass through Python, nor even user space on most file
  systems); another reads the same range from the page cache and hashes it
  (``hashlib`` lets go of the GIL on large buffers), so hashing, the CPU's
  part, overlaps the copy and the disk's part. Because the digest is taken
  from the source independently of the copy, a source that did change under
  the copy would make the backup fail its check at restore, never pass it.
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
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from fold_core.errors import StoreCorrupt

__all__ = ["Produced", "Range", "copy_files"]

READ = 1 << 20  # bytes hashed at a time: the buffer stays in the CPU's cache
STEP = 64 << 20  # bytes copied per system call when the kernel cannot copy (read and written through Python)
NO_KERNEL_COPY = {errno.EXDEV, errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP, errno.EBADF, errno.EPERM}


@dataclass(frozen=True)
class Range:
    """The first ``length`` bytes of the open file ``source`` (named ``origin`` in errors), as ``name``."""

    name: str
    source: int
    length: int
    origin: str


@dataclass(frozen=True)
class Produced:
    """A file ``write(path)`` creates whole, as ``name``."""

    name: str
    write: Callable[[str], None]


def copy_files(jobs: list[Range | Produced], directory: str) -> dict[str, str]:
    """Write every job's file into ``directory`` (new names), each fsynced; ``{name: sha256}``.

    The directory's own entries are not synced here: the caller does that once.
    """
    with ThreadPoolExecutor(max_workers=2 * len(jobs) or 1, thread_name_prefix="copy") as pool:
        running = []
        for job in jobs:
            path = os.path.join(directory, job.name)
            if isinstance(job, Range):
                running.append((job.name, pool.submit(_copy_range, job, path), pool.submit(_hash_range, job)))
            else:
                running.append((job.name, pool.submit(_produce, job, path), None))
        digests = {}
        for name, written, hashed in running:
            digest = written.result()
            digests[name] = digest if hashed is None else hashed.result()
    return digests


def _copy_range(job: Range, path: str) -> None:
    with open(path, "xb") as out:
        target, offset, kernel = out.fileno(), 0, True
        while offset < job.length:
            count = job.length - offset
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
        os.fsync(target)


def _hash_range(job: Range) -> str:
    digest, buffer, position = hashlib.sha256(), bytearray(READ), 0
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
