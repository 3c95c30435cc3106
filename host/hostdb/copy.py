"""A copy of host.db as it was at one moment, taken while others write (``foldctl backup``).

``PinnedView(path)`` opens a plain read connection; ``pin()`` starts a read
transaction, which in WAL mode keeps seeing the database as it was then,
whatever the daemon commits afterwards; ``copy_to(target)`` writes that view
to a new file through SQLite's online backup API (in one step, inside the
pinned transaction) and ends the transaction.
"""

from __future__ import annotations

import sqlite3

from fold_host.hostdb.schema import OPEN_TIMEOUT

__all__ = ["PinnedView"]


class PinnedView:
    """One moment of host.db, copied later."""

    def __init__(self, path: str) -> None:
        self.connection = sqlite3.connect(path, timeout=OPEN_TIMEOUT, isolation_level=None,
                                          check_same_thread=False)

    def pin(self) -> None:
        """From here on this connection sees host.db as it is now."""
        self.connection.execute("BEGIN")
        self.connection.execute("SELECT count(*) FROM host_meta").fetchone()

    def copy_to(self, target: str) -> None:
        """Write the pinned view to the new file ``target``; the view is released."""
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
        self.connection.close()
