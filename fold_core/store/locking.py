"""The store lock (contract §6.2): ``fcntl.flock`` on ``<store>/lock`` with a bounded wait.

Writers take the lock exclusively, readers shared. The wait is bounded
(``FOLD_LOCK_TIMEOUT`` seconds, default 10): on timeout the caller gets
``StoreUnavailable`` — the outcome of a write is then unknown and a read must
not answer "not found". The lock is advisory and released when the file
descriptor is closed, also when the process is killed, so a crashed writer
never leaves the store locked.
"""

from __future__ import annotations

import errno
import fcntl
import os
import time

from fold_core.errors import StoreUnavailable

__all__ = ["DEFAULT_TIMEOUT", "StoreLock", "lock_timeout"]

DEFAULT_TIMEOUT = 10.0


def lock_timeout() -> float:
    """The bounded wait in seconds (``FOLD_LOCK_TIMEOUT`` overrides the default)."""
    text = os.environ.get("FOLD_LOCK_TIMEOUT")
    if text:
        try:
            value = float(text)
        except ValueError:
            return DEFAULT_TIMEOUT
        if value >= 0:
            return value
    return DEFAULT_TIMEOUT


class StoreLock:
    """One flock held on ``path`` until ``release``."""

    def __init__(self, path: str, *, exclusive: bool, create: bool, timeout: float | None = None) -> None:
        self.path = path
        self.exclusive = exclusive
        flags = os.O_RDWR | os.O_CREAT if create else os.O_RDONLY
        try:
            self._fd = os.open(path, flags | os.O_CLOEXEC, 0o644)
        except PermissionError:
            if not create:
                raise
            # A store in a directory we may only read: reading still works.
            self._fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        try:
            self._acquire(lock_timeout() if timeout is None else timeout)
        except BaseException:
            os.close(self._fd)
            raise

    def _acquire(self, timeout: float) -> None:
        operation = (fcntl.LOCK_EX if self.exclusive else fcntl.LOCK_SH) | fcntl.LOCK_NB
        deadline = time.monotonic() + timeout
        pause = 0.001
        while True:
            try:
                fcntl.flock(self._fd, operation)
                return
            except OSError as error:
                if error.errno not in (errno.EAGAIN, errno.EWOULDBLOCK, errno.EACCES):
                    raise StoreUnavailable(f"cannot lock {self.path}: {error.strerror}") from error
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise StoreUnavailable(
                    f"the store is busy: lock {self.path} not obtained within {timeout:g} s"
                )
            time.sleep(min(pause, remaining))
            pause = min(pause * 2, 0.02)

    def release(self) -> None:
        """Drop the lock (closing the descriptor releases the flock)."""
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
