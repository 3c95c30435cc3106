"""A copy of host.db as it was at one moment, taken while others write (``foldctl backup``).

``PinnedView(path)`` opens a plain read connection; ``pin()`` starts a read
transaction, which in WAL mode keeps seeing the database as it was then,
whatever the daemon commits afterwards. How that view is copied depends on
what ``pin()`` managed:

* **The file itself** (``whole_file``), the usual case. Just before the read
  transaction starts, with a write transaction on a second connection
  keeping every other writer out for that moment, a passive checkpoint
  moves what the WAL holds into the database file. When it moved all of it,
  the read transaction reads every page from the file, and SQLite never
  writes a page of the file that a reader may still read (a checkpoint stops
  at the oldest reader's snapshot; here that is everything already in the
  file). Until the transaction ends, the file *is* the view, byte for byte:
  ``database_file()`` hands out a descriptor for the caller to copy in the
  kernel while the daemon keeps committing to the WAL.
* **SQLite's backup API** otherwise (``copy_to``): when another reader on an
  older snapshot holds the checkpoint back, or host.db cannot be written by
  this user. Slower (page by page through SQLite), from the same view.
"""

from __future__ import annotations

import os
import sqlite3

from fold_host.hostdb.schema import OPEN_TIMEOUT

__all__ = ["PinnedView", "copy_problem", "ready_for_backup"]


def ready_for_backup(path: str) -> bool:
    """Whether host.db at ``path`` is in WAL mode and has a schema, read without importing the host's models."""
    try:
        connection = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=OPEN_TIMEOUT)
        try:
            mode = connection.execute("PRAGMA journal_mode").fetchone()[0]
            version = connection.execute("PRAGMA user_version").fetchone()[0]
        finally:
            connection.close()
    except sqlite3.Error:
        return False  # opening it as the host does says what is wrong
    return mode == "wal" and version > 0


def copy_problem(path: str) -> str | None:
    """What SQLite's ``quick_check`` finds wrong in the copy of host.db at ``path``; None when it passes.

    Opened immutable and read-only: the check leaves no -wal or -shm file beside the copy and changes no byte.
    """
    from urllib.request import pathname2url

    try:
        connection = sqlite3.connect(f"file:{pathname2url(os.path.abspath(path))}?mode=ro&immutable=1", uri=True)
        try:
            found = [row[0] for row in connection.execute("PRAGMA quick_check(20)")]
        finally:
            connection.close()
    except sqlite3.Error as error:  # "file is not a database", "database disk image is malformed", …
        return str(error)
    return None if found == ["ok"] else "; ".join(" ".join(str(line).split()) for line in found)


class PinnedView:
    """One moment of host.db, copied later."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.connection = sqlite3.connect(path, timeout=OPEN_TIMEOUT, isolation_level=None,
                                          check_same_thread=False)
        self.whole_file = False
        self._file: int | None = None

    def pin(self) -> None:
        """From here on this connection sees host.db as it is now (and, when it can, so does the file)."""
        writers_out = sqlite3.connect(self.path, timeout=OPEN_TIMEOUT, isolation_level=None)
        try:
            try:
                writers_out.execute("BEGIN IMMEDIATE")
                _, frames, moved = self.connection.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
                self.whole_file = 0 <= frames == moved
            except sqlite3.Error:  # read-only for this user, or another checkpoint running: the backup API
                self.whole_file = False
            self.connection.execute("BEGIN")
            self.connection.execute("SELECT count(*) FROM host_meta").fetchone()
            if self.whole_file:
                self._file = os.open(self.path, os.O_RDONLY)
        finally:
            writers_out.close()  # its transaction ends unwritten: the daemon writes on, to the WAL

    def database_file(self) -> tuple[int, int]:
        """``(descriptor, length)`` of the database file, which is the pinned view (``whole_file`` only)."""
        assert self._file is not None, "the file is the view only when pin() moved the whole WAL into it"
        return self._file, os.fstat(self._file).st_size

    def copy_to(self, target: str) -> None:
        """Write the pinned view to the new file ``target`` through SQLite's backup API; the view is released."""
        copy = sqlite3.connect(target)
        try:
            # The copy is fsynced once, whole, by the caller: no journal, no syncs of its own.
            copy.execute("PRAGMA journal_mode=OFF")
            copy.execute("PRAGMA synchronous=OFF")
            self.connection.backup(copy)
        finally:
            copy.close()
            if self.connection.in_transaction:
                self.connection.execute("ROLLBACK")

    def close(self) -> None:
        """End the view (the file may change again from here on)."""
        if self._file is not None:
            os.close(self._file)
            self._file = None
        self.connection.close()
