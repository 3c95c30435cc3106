"""``foldctl migrate``: move a store and its host state between a directory and a PostgreSQL database.

Either way (and directory to directory, database to database): the store
with ``fold_core.store.migrate.migrate_store`` — the records byte for byte,
then ``verify`` and the state compared — and then every row of the host's
tables (``hostdb.move``: observations and dispositions, cursors, polls,
sources, reminders, consumers and their memory, the call log, the host's
facts, the open window), compared row by row afterwards. The report says
what moved and that both checks passed; any difference is ``StoreCorrupt``
(exit 4) naming it.

Nothing may work on the source meanwhile: a host running on it (the host
lock of a directory, a live heartbeat in a database) is refused (exit 3).
The target must be new: a directory or store name that holds no records and
no host state. A move that fails half way leaves the target to be removed
(``rm -r DIR``, or the store name dropped) before trying again; the source
is only read.
"""

from __future__ import annotations

import os

from fold_core.errors import UsageError
from fold_core.store.location import compose, is_url
from fold_core.store.migrate import migrate_store
from fold_host.daemon.hostlock import HostBusy, host_running
from fold_host.hostdb import host_db_exists, open_host_db
from fold_host.hostdb.move import compare_host_state, copy_host_state, host_state_empty

__all__ = ["move", "with_name"]


def with_name(source: str, target: str, name: str | None) -> tuple[str, str]:
    """``--name N`` given to the URL side (with two URLs, to the target)."""
    if name is None:
        return source, target
    if is_url(target):
        return source, compose(target, name=name)
    if is_url(source):
        return compose(source, name=name), target
    raise UsageError("--name names a store in a PostgreSQL database: --from or --to must be a postgresql:// URL")


def move(source: str, target: str) -> dict:
    """Move the store at ``source`` and its host state to ``target``; the report (see the module doc)."""
    _no_host_running(source)
    carried = host_db_exists(source)
    if carried and host_db_exists(target):
        with open_host_db(target) as db:
            if not host_state_empty(db):
                raise UsageError(f"{db.path}: the target already holds host state: move into a new store")
    report = migrate_store(source, target)
    report["host"] = _move_host_state(source, target) if carried else None
    return report


def _move_host_state(source: str, target: str) -> dict:
    with open_host_db(source) as old, open_host_db(target) as new:
        copied = copy_host_state(old, new)
        compare_host_state(old, new)
    return {**copied, "verified": True}


def _no_host_running(source: str) -> None:
    if not is_url(source):
        holder = host_running(source) if os.path.isdir(source) else None
        if holder:
            raise HostBusy(f"a host works on {source} ({holder}): stop it before moving the store")
        return
    if not host_db_exists(source):
        return
    with open_host_db(source) as db:
        running = [host["id"] for host in db.hosts() if host["alive"]]
    if running:
        raise HostBusy(f"{len(running)} host(s) work on the source ({', '.join(running)}): stop them before "
                       "moving the store")
