"""Who works on a store: one host per directory, several on PostgreSQL (contract §11.2).

``presence(location, what, lease)`` is held for a daemon's life or one
``tick``. On a store directory it is the host lock (``hostlock``): a second
host is refused. On a store in PostgreSQL any number of hosts may work at
once; each is a row of the ``hosts`` table with an id of its own (host name,
pid and a random suffix), and a **heartbeat** thread renews, every third of
the lease, the row and everything the host holds (source leases, windows).
A host that dies stops renewing: after at most ``lease`` seconds another host
takes its work over. A host that stops cleanly gives its leases up and lets
its windows go at once.
"""

from __future__ import annotations

import os
import secrets
import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from fold_core.errors import FoldError
from fold_core.store.location import is_url
from fold_host.daemon.hostlock import HostLock

if TYPE_CHECKING:
    from fold_host.hostdb.pg.database import PgHostDB

__all__ = ["HostPresence", "presence"]


@contextmanager
def presence(location: str, what: str, lease: float, log: Callable[..., None] | None = None) -> Iterator[str | None]:
    """Hold the right to work on the store at ``location``; yields this host's id (None on a directory)."""
    if not is_url(location):
        with HostLock(location, what):
            yield None
        return
    with HostPresence(location, what, lease, log) as present:
        yield present.id


class HostPresence:
    """This host's row in ``hosts`` and the heartbeat thread that keeps its claims alive."""

    def __init__(self, location: str, what: str, lease: float, log: Callable[..., None] | None = None) -> None:
        self.location, self.what, self.lease = location, what, lease
        self.id = f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(3)}"
        self.log = log or (lambda event, **fields: None)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._db: PgHostDB | None = None

    def __enter__(self) -> "HostPresence":
        self._db = self._open()
        self._db.register_host(hostname=socket.gethostname(), pid=os.getpid(), command=f"foldctl {self.what}")
        self._thread = threading.Thread(target=self._beat, name="fold-heartbeat", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5)
        try:
            db = self._db if self._db is not None and self._db.connection.usable else self._open()
            db.host_stopped()
        except FoldError as error:  # the claims expire by themselves
            self.log("error", job="heartbeat", error=f"stopping: {error}")
        finally:
            if self._db is not None:
                self._db.close()

    def _open(self) -> PgHostDB:
        # lazy: psycopg loads only for a store in PostgreSQL
        from fold_host.hostdb.pg.database import open_pg_host_db

        return open_pg_host_db(self.location, holder=self.id, lease=self.lease)

    def _beat(self) -> None:
        """Renew every third of the lease; a failed renewal is logged and tried again (reconnecting)."""
        while not self._stop.wait(self.lease / 3):
            try:
                if self._db is None or not self._db.connection.usable:
                    if self._db is not None:
                        self._db.close()
                    self._db = None
                    self._db = self._open()
                self._db.heartbeat()
            except FoldError as error:
                self.log("error", job="heartbeat", error=f"{type(error).__name__}: {error}")
