"""One host per store: the lock of ``foldctl run`` and ``foldctl tick`` (contract §11.2).

``<store>/host.lock`` is held (``fcntl.flock``, exclusive, non-blocking) for
the whole life of a daemon and for the length of one ``tick``: two cycles
never work on the same inbox at once. The file holds the holder's pid and
command so that the refusal says who holds it. The kernel releases the lock
when its holder dies, even by SIGKILL.
"""

from __future__ import annotations

import fcntl
import os

from fold_core.errors import FoldError

__all__ = ["HostBusy", "HostLock", "host_running"]

FILE_NAME = "host.lock"


class HostBusy(FoldError):
    """Another host process (a daemon or a tick) works on this store (exit 3: the store is not available)."""

    exit_code = 3

    def to_error(self) -> dict:
        return {"code": "store_unavailable", "message": str(self)}


class HostLock:
    """The exclusive host lock of a store directory."""

    def __init__(self, store_dir: str, what: str) -> None:
        os.makedirs(store_dir, exist_ok=True)
        self.path = os.path.join(store_dir, FILE_NAME)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        self._fd: int | None = fd  # None once released
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = self.holder()
            os.close(fd)
            raise HostBusy(f"another Fold host works on the store {store_dir}: {holder or 'unknown process'}; "
                           "only one `foldctl run` (or one `foldctl tick` at a time) per store") from None
        os.ftruncate(fd, 0)
        os.write(fd, f"pid {os.getpid()}: foldctl {what}\n".encode())

    def holder(self) -> str:
        try:
            with open(self.path, encoding="utf-8", errors="replace") as file:
                return file.read().strip()
        except OSError:
            return ""

    def release(self) -> None:
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> "HostLock":
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def host_running(store_dir: str) -> str | None:
    """Who holds the host lock of ``store_dir`` now (None: nobody)."""
    path = os.path.join(store_dir, FILE_NAME)
    if not os.path.exists(path):
        return None
    fd = os.open(path, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        with open(path, encoding="utf-8", errors="replace") as file:
            return file.read().strip() or "a host process"
    finally:
        os.close(fd)
    return None
