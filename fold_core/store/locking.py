"""The store lock (contract §6.2): ``fcntl.flock`` on ``<store>/lock`` with a bounded wait.

Writers take the lock exclusively, readers shared. The wait is bounded
(``FOLD_LOCK_TIMEOUT`` seconds, default 10): on timeout the caller gets
``StoreUnavailable`` — the outcome of a write is then unknown and a read must
not answer "not found". The lock is advisory and released when the file
descriptor is closed, also when the process is killed, so a crashed writer
never leaves the store locked.

``StoreLock`` opens the file for one hold. ``HeldLock`` keeps it open for a
long-lived recorder and takes and drops the flock on it per session (one
system call each way instead of an open and a close); after taking it, it
checks that ``<store>/lock`` is still the file it holds (a store removed and
created again at the same path has a new lock file, which it then locks
instead), and a forked child opens its own.
"""

from __future__ import annotations

import errno
import fcntl
import os
import time

from fold_core.errors import StoreUnavailable
from fold_core.store.faults import environ_value

__all__ = ["DEFAULT_TIMEOUT", "HeldLock", "StoreLock", "lock_timeout"]

DEFAULT_TIMEOUT = 10.0


def lock_timeout() -> float:
    """The bounded wait in seconds (``FOLD_LOCK_TIMEOUT`` overrides the default)."""
    text = environ_value("FOLD_LOCK_TIMEOUT")
    if text:
        try:
            value = float(text)
        except ValueError:
            return DEFAULT_TIMEOUT
        if value >= 0:
            return value
    return DEFAULT_TIMEOUT


def _open(path: str, create: bool) -> int:
    flags = os.O_RDWR | os.O_CREAT if create else os.O_RDONLY
    try:
        return os.open(path, flags | os.O_CLOEXEC, 0o644)
    except PermissionError:
        if not create:
            raise
        # A store in a directory we may only read: reading still works.
        return os.open(path, os.O_RDONLY | os.O_CLOEXEC)


def _flock(fd: int, path: str, exclusive: bool, timeout: float) -> None:
    """Take the flock on ``fd`` within ``timeout`` seconds, else ``StoreUnavailable``."""
    operation = (fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH) | fcntl.LOCK_NB
    deadline = None
    pause = 0.001
    while True:
        try:
            fcntl.flock(fd, operation)
            return
        except OSError as error:
            if error.errno not in (errno.EAGAIN, errno.EWOULDBLOCK, errno.EACCES):
                raise StoreUnavailable(f"cannot lock {path}: {error.strerror}") from error
        if deadline is None:
            deadline = time.monotonic() + timeout
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise StoreUnavailable(f"the store is busy: lock {path} not obtained within {timeout:g} s")
        time.sleep(min(pause, remaining))
        pause = min(pause * 2, 0.02)


class StoreLock:
    """One flock held on ``path`` until ``release``."""

    def __init__(self, path: str, *, exclusive: bool, create: bool, timeout: float | None = None) -> None:
        self.path = path
        self.exclusive = exclusive
        self._fd = _open(path, create)
        try:
            _flock(self._fd, path, exclusive, lock_timeout() if timeout is None else timeout)
        except BaseException:
            os.close(self._fd)
            raise

    def release(self) -> None:
        """Drop the lock (closing the descriptor releases the flock)."""
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


class HeldLock:
    """The lock file of one store, kept open between holds (see the module docstring)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._fd = -1
        self._pid = 0
        self._identity: tuple[int, int] | None = None

    def acquire(self, *, exclusive: bool, create: bool) -> None:
        """Take the flock (exclusive or shared); raises OSError when the file cannot be opened."""
        timeout = lock_timeout()
        for _attempt in range(8):
            if self._fd < 0 or self._pid != os.getpid():
                self._fd = -1  # a forked child never touches its parent's open file description
                fd = _open(self.path, create)
                stat = os.fstat(fd)
                self._fd, self._pid, self._identity = fd, os.getpid(), (stat.st_dev, stat.st_ino)
            _flock(self._fd, self.path, exclusive, timeout)
            try:
                stat = os.stat(self.path)
                if (stat.st_dev, stat.st_ino) == self._identity:
                    return
            except FileNotFoundError:
                if not create:
                    self.close()
                    raise
            self.close()  # the lock file was replaced: the store was created again here
        raise StoreUnavailable(f"cannot lock {self.path}: it keeps being replaced")

    def release(self) -> None:
        """Drop the flock; the file stays open for the next hold."""
        if self._fd >= 0 and self._pid == os.getpid():
            fcntl.flock(self._fd, fcntl.LOCK_UN)

    def close(self) -> None:
        if self._fd >= 0 and self._pid == os.getpid():
            os.close(self._fd)
        self._fd = -1

    def __del__(self) -> None:
        self.close()
