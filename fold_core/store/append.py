"""Appending a record to ``events.jsonl`` (contract §6.2 step 4).

``LogAppender`` writes the whole line and fsyncs the file (and the directory
when the log was just created). A failed write is cut back so nothing
partial stays; a failed fsync is never retried. Both raise
``StoreUnavailable``. The §6.3 fault points ``mid_append``, ``after_append``
and ``after_fsync`` and the injections ``enospc_append`` and ``eio_fsync``
sit here.
"""

from __future__ import annotations

import os

from fold_core.errors import StoreUnavailable
from fold_core.store.faults import crash_at, fault_is, injected
from fold_core.store.log import fsync_dir, unavailable

__all__ = ["LogAppender"]


class LogAppender:
    """Appends record lines durably to ``events.jsonl``, keeping the file open between appends.

    A long-lived recorder appends through one descriptor; it is opened again
    when the log at the path is another file than the one it holds (another
    process created the store again), in a forked child, and after a failure.
    """

    def __init__(self, log_path: str) -> None:
        self.log_path = log_path
        self._fd = -1
        self._pid = 0
        self._identity: tuple[int, int] | None = None

    def append(self, data: bytes, start: int, expected: tuple[int, int] | None) -> tuple[int, int]:
        """Append one record line at ``start`` (the log's size); ``(st_dev, st_ino)`` of the log.

        ``expected`` is the identity of the log recovery read (None: there was
        no log, so it is created here and its directory entry fsynced too).
        On return the record is committed.
        """
        created = expected is None
        if self._fd < 0 or self._identity != expected or self._pid != os.getpid():
            self.close()
            try:
                fd = os.open(self.log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644)
            except OSError as error:
                raise unavailable(error, "cannot open events.jsonl; nothing was written") from error
            self._fd, self._pid = fd, os.getpid()
        try:
            stat = os.fstat(self._fd)
            self._identity = (stat.st_dev, stat.st_ino)
            if stat.st_size != start or not (created or self._identity == expected):
                raise StoreUnavailable("events.jsonl changed outside the lock; nothing was written")
            _write_all(self._fd, data, start)
            crash_at("after_append")
            try:
                failure = injected("eio_fsync")
                if failure is not None:
                    raise failure
                os.fsync(self._fd)
                if created:  # make the new file's name durable too
                    fsync_dir(os.path.dirname(self.log_path))
            except OSError as error:
                raise unavailable(
                    error, "fsync of events.jsonl failed: the outcome is unknown, retry with the same batch_id"
                ) from error
            crash_at("after_fsync")
            return self._identity
        except BaseException:
            self.close()  # a failed append leaves nothing open that a later one could trust
            raise

    def close(self) -> None:
        if self._fd >= 0 and self._pid == os.getpid():
            os.close(self._fd)
        self._fd, self._identity = -1, None

    def __del__(self) -> None:
        self.close()


def _write_all(fd: int, data: bytes, start: int) -> None:
    """Write the whole line; on any failure cut the file back to ``start``."""
    try:
        error = injected("enospc_append")
        if error is not None or fault_is("mid_append"):
            os.write(fd, data[: len(data) // 2])
            crash_at("mid_append")  # the process ends here unless the failure is only injected
            if error is not None:
                raise error
        view = memoryview(data)
        while view:
            written = os.write(fd, view)
            view = view[written:]
    except OSError as error:
        try:
            os.ftruncate(fd, start)
        except OSError:
            pass  # the next writer repairs the torn fragment
        raise unavailable(error, "cannot append to events.jsonl (retry with the same batch_id)") from error
