"""The recorders the shared store tests run against: memory, file, PostgreSQL.

A ``Backend`` says how to make a new store location, open a recorder on it
(a second recorder on the same location stands for another process), run
``foldctl`` on it, and read its records exactly as stored. The protocol tests
(``tests/integration/test_store_protocol.py``) are written once against this
interface.

``COMMITTED`` is, per fault point of contract §6.3, whether a batch killed
there is committed: the file store keeps a written but unsynced line (the
operating system holds it), a PostgreSQL transaction is all or nothing until
its COMMIT returns.
"""

from __future__ import annotations

import itertools
import json
import os

from fold_core.store.base import Store
from tests.support.forked_cli import run_fold_core

__all__ = ["Backend", "FileBackend", "MemoryBackend", "PostgresBackend", "foldctl"]

_NAMES = itertools.count(1)


def foldctl(location, *args: str, stdin: str | None = None, env: dict | None = None, timeout: float = 120):
    """``python -m fold_core --store LOCATION ARGS`` (forked: tests/support/forked_cli.py): (exit code, parsed stdout or None, stderr)."""
    environment = {key: value for key, value in os.environ.items() if not key.startswith("FOLD_")}
    environment.update(env or {})
    code, stdout, stderr = run_fold_core(["--store", str(location), *args], stdin=(stdin or "").encode("utf-8"),
                                         env=environment, timeout=timeout)
    err = stderr.decode("utf-8", "replace")
    assert "Traceback" not in err, err
    out = stdout.decode("utf-8")
    return code, (json.loads(out) if out.strip() else None), err


class Backend:
    """How the shared tests reach one kind of store."""

    name = "?"
    durable = False  # survives its process: a second process (CLI, a crash) sees it
    COMMITTED: dict[str, bool] = {}

    def new_location(self, tmp_path) -> str:
        raise NotImplementedError

    def recorder(self, location: str, budget: int | None = None):
        raise NotImplementedError

    def store(self, location: str, budget: int | None = None) -> Store:
        return Store(self.recorder(location, budget))

    def create(self, location: str, budget: int = 64) -> None:
        """``foldctl init``."""
        raise NotImplementedError

    def raw_records(self, location: str) -> list[bytes]:
        """Every record as stored, one newline-terminated line each (the file store's bytes)."""
        raise NotImplementedError


class MemoryBackend(Backend):
    name = "memory"

    def __init__(self) -> None:
        self.recorders: dict[str, object] = {}

    def new_location(self, tmp_path) -> str:
        return f"memory-{next(_NAMES)}"

    def recorder(self, location: str, budget: int | None = None):
        from fold_core.store.memory import MemoryRecorder

        if location not in self.recorders:
            self.recorders[location] = MemoryRecorder(budget or 64)
        return self.recorders[location]  # "another process" is the same memory

    def create(self, location: str, budget: int = 64) -> None:
        self.recorder(location, budget)

    def raw_records(self, location: str) -> list[bytes]:
        from fold_core.store.log import encode_record

        return [encode_record(record) for record in self.recorders[location].log]


class FileBackend(Backend):
    name = "file"
    durable = True
    COMMITTED = {"before_append": False, "mid_append": False, "after_append": True, "after_fsync": True,
                 "mid_snapshot": True}

    def new_location(self, tmp_path) -> str:
        return str(tmp_path / f"store-{next(_NAMES)}")

    def recorder(self, location: str, budget: int | None = None):
        from fold_core.store.file import FileRecorder

        return FileRecorder(location, budget)

    def create(self, location: str, budget: int = 64) -> None:
        from fold_core.store.meta import create_store

        create_store(location, budget)

    def raw_records(self, location: str) -> list[bytes]:
        try:
            with open(os.path.join(location, "events.jsonl"), "rb") as log:
                return [line for line in log.read().splitlines(keepends=True) if line.endswith(b"\n")]
        except FileNotFoundError:
            return []


class PostgresBackend(Backend):
    name = "postgres"
    durable = True
    COMMITTED = {"before_append": False, "mid_append": False, "after_append": False, "after_fsync": True,
                 "mid_snapshot": True}

    def __init__(self, cluster) -> None:
        self.cluster = cluster

    def new_location(self, tmp_path) -> str:
        return self.cluster.url(store=f"t{os.getpid()}-{next(_NAMES)}")

    def recorder(self, location: str, budget: int | None = None):
        from fold_core.store.pg.recorder import PostgresRecorder

        return PostgresRecorder(location, budget)

    def create(self, location: str, budget: int = 64) -> None:
        from fold_core.store.pg.recorder import create_pg_store

        create_pg_store(location, budget)

    def raw_records(self, location: str) -> list[bytes]:
        import psycopg

        from fold_core.store.location import parse_url

        where = parse_url(location)
        with psycopg.connect(where.conninfo) as conn:
            if conn.execute("SELECT to_regclass('fold_records')").fetchone()[0] is None:
                return []
            rows = conn.execute("SELECT r.body FROM fold_records r JOIN fold_stores s ON s.id = r.store"
                                " WHERE s.name = %s ORDER BY r.event_seq", (where.name,)).fetchall()
        return [body.encode("utf-8") + b"\n" for (body,) in rows]
