"""host.db guarded like the store: the daemon notices when it is removed, replaced or damaged.

A daemon that went on with a host.db made anew under it would read every
source again from its first run and offer again what the editor had settled;
one that went on with a damaged one would lose observations quietly. So:

* ``HostDBGuard`` belongs to one daemon. ``start`` opens host.db (creating
  it on a first run), runs SQLite's ``quick_check`` and notes the file's
  identity (device and inode); every later ``open`` first checks that the
  file is still there and still the same one (``HostDBLost`` otherwise) and
  never creates it; ``deep_check`` runs ``quick_check`` again
  (``HostDBCorrupt``). ``halt`` writes what went wrong to
  ``host.db.halted`` beside it, for the commands that ask.
* ``halted(store_dir)`` — what a daemon said when it stopped its cycles over
  host.db (None when none did); a daemon's ``start`` or a ``tick`` whose
  ``quick_check`` passes clears it (``clear_halt``).
* ``quick_check(db)`` — ``HostDBCorrupt`` unless SQLite's ``quick_check``
  passes (``foldctl tick`` runs it before each cycle);
* ``problem(store_dir, deep=False)`` — the health check for ``doctor`` and
  ``/healthz``: a daemon's halt, else (``deep``) a host.db that does not open
  or fails ``quick_check``; None when healthy (or not made yet).
"""

from __future__ import annotations

import json
import os
from datetime import datetime

from fold_core.errors import StoreError
from fold_host.hostdb.failures import REBUILD_HINT, HostDBCorrupt, HostDBLost
from fold_host.hostdb.opening import open_host_db
from fold_host.hostdb.protocol import HostDB
from fold_host.hostdb.schema import FILE_NAME

__all__ = ["HALT_FILE", "HostDBGuard", "clear_halt", "halted", "problem", "quick_check"]

HALT_FILE = "host.db.halted"


class HostDBGuard:
    """The daemon's watch over its host.db (see the module docstring)."""

    def __init__(self, store_dir: str) -> None:
        self.store_dir = store_dir
        self.path = os.path.join(store_dir, FILE_NAME)
        self.identity: tuple[int, int] | None = None

    def start(self) -> None:
        """Open (or create) host.db, check it, remember which file it is; clears an earlier halt."""
        clear_halt(self.store_dir)
        with open_host_db(self.store_dir) as db:
            quick_check(db)
        self.identity = _identity(self.path)

    def check(self) -> None:
        """``HostDBLost`` unless host.db is still the file ``start`` found."""
        found = _identity(self.path)
        if found is None:
            raise HostDBLost(f"{self.path} was removed while the daemon ran; the daemon stopped its cycles so that "
                             f"nothing is read again as new. {_restart()}")
        if found != self.identity:
            raise HostDBLost(f"{self.path} was replaced by another file while the daemon ran; the daemon stopped "
                             f"its cycles. {_restart()}")

    def open(self) -> HostDB:
        """The daemon's connection: checked first, never creating a new host.db."""
        self.check()
        return open_host_db(self.store_dir, create=False)

    def deep_check(self) -> None:
        """``quick_check`` on the guarded host.db (``HostDBCorrupt`` when it fails)."""
        with self.open() as db:
            quick_check(db)

    def halt(self, why: str) -> None:
        """Leave word beside host.db that the daemon stopped its cycles, and why (best effort)."""
        note = {"at": datetime.now().astimezone().isoformat(timespec="seconds"), "pid": os.getpid(), "problem": why}
        try:
            with open(os.path.join(self.store_dir, HALT_FILE), "w", encoding="utf-8") as file:
                json.dump(note, file, ensure_ascii=False)
        except OSError:
            pass


def clear_halt(store_dir: str) -> None:
    """Forget a daemon's halt: host.db was found sound again (a new daemon, a tick)."""
    try:
        os.remove(os.path.join(store_dir, HALT_FILE))
    except FileNotFoundError:
        pass


def halted(store_dir: str) -> str | None:
    """What the daemon said when it stopped its cycles over host.db, or None."""
    try:
        with open(os.path.join(store_dir, HALT_FILE), encoding="utf-8") as file:
            note = json.load(file)
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        return f"the daemon stopped its cycles over host.db (see {HALT_FILE} in {store_dir})"
    return (f"the daemon (pid {note.get('pid')}) stopped its cycles at {note.get('at')}: {note.get('problem')}")


def problem(store_dir: str, *, deep: bool = False) -> str | None:
    """Why host.db is not healthy (a daemon's halt; with ``deep``, opening and ``quick_check``), or None."""
    stopped = halted(store_dir)
    if stopped is not None or not deep or not os.path.exists(os.path.join(store_dir, FILE_NAME)):
        return stopped
    try:
        with open_host_db(store_dir, create=False) as db:
            quick_check(db)
    except StoreError as error:
        return str(error)
    return None


def quick_check(db: HostDB) -> None:
    """``HostDBCorrupt`` unless SQLite's ``quick_check`` of this connection's database says ok."""
    result = db.integrity()
    if result != "ok":
        raise HostDBCorrupt(f"{db.path}: SQLite's integrity check failed ({result[:300]}); {REBUILD_HINT}")


def _identity(path: str) -> tuple[int, int] | None:
    try:
        status = os.stat(path)
    except FileNotFoundError:
        return None
    return status.st_dev, status.st_ino


def _restart() -> str:
    return ("Restart the daemon to go on: it builds a new host.db if there is none, and nothing the store's "
            "records cite is offered again (docs/operating.md, \"Rebuilding host.db\")")
