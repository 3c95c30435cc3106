"""The PostgreSQL store's tables and their ordered migrations (contract §6 on PostgreSQL).

Every table is named ``fold_*`` and lives in the connection's current schema
(``search_path``: a DBA chooses it with ``options=-csearch_path=…`` in the
URL). ``fold_schema_version`` lists the migrations applied, one row each;
``MIGRATIONS`` is the ordered list of them. A writer (``init``, the first
commit) applies the missing ones in one transaction under a database-wide
advisory lock, so two processes never migrate at once and a failed
migration leaves nothing half done (PostgreSQL's DDL is transactional). A
reader never migrates: a database without the tables holds no store (exit 3,
never "empty"). A schema newer than this Fold knows is refused (exit 3): an
older program must not write into it.

Version 1:

* ``fold_stores`` — one row per store (``name``, the budget fixed at creation,
  ``created_at``) and the head of its cached state: ``event_seq``,
  ``revision``, ``last_checked_at``, the totals, and ``activations`` (a
  counter giving each item that becomes active its place in its layer's
  order, as replay gives it);
* ``fold_records`` — the truth: record n of a store is the row
  ``(store, n)``; ``body`` is the record exactly as the file store writes its
  log line (without the newline), so a record moves between the two
  byte for byte; ``batch_id`` is unique per store (the batch index);
* ``fold_items``, ``fold_annotations`` — the cached state: every item's and
  annotation's current image, written in the same transaction as the record,
  with the columns the reads select on. ``first_seq`` / ``last_seq`` (items)
  and ``created_seq`` / ``ack_seq`` (annotations) let a reader holding an
  older state still find an entry as it was at that state;
* ``fold_item_records`` — which records hold a post-image of an item (or an
  annotation on it): ``history --item`` and the look-up of an older image.

Ids and batch ids use the ``"C"`` collation: their order is code point order,
as in Python, whatever the database's locale.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from psycopg import Connection

__all__ = ["LATEST", "MIGRATIONS", "MIGRATION_LOCK", "SchemaTooNew", "migrate", "schema_version"]

MIGRATION_LOCK = 0x666F6C64  # "fold": the advisory lock key of schema changes

_V1 = """
CREATE TABLE IF NOT EXISTS fold_schema_version (
    version integer PRIMARY KEY,
    name text NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE fold_stores (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name text COLLATE "C" NOT NULL UNIQUE,
    budget integer NOT NULL CHECK (budget BETWEEN 8 AND 4096),
    created_at text NOT NULL,
    event_seq bigint NOT NULL DEFAULT 0,
    revision bigint NOT NULL DEFAULT 0,
    last_checked_at text,
    item_total bigint NOT NULL DEFAULT 0,
    inactive_total bigint NOT NULL DEFAULT 0,
    annotation_total bigint NOT NULL DEFAULT 0,
    activations bigint NOT NULL DEFAULT 0
);
CREATE TABLE fold_records (
    store bigint NOT NULL REFERENCES fold_stores (id),
    event_seq bigint NOT NULL CHECK (event_seq >= 1),
    type text NOT NULL,
    batch_id text COLLATE "C",
    request_digest text,
    body text NOT NULL,
    PRIMARY KEY (store, event_seq)
);
CREATE UNIQUE INDEX fold_records_batch ON fold_records (store, batch_id) WHERE batch_id IS NOT NULL;
CREATE TABLE fold_items (
    store bigint NOT NULL,
    id text COLLATE "C" NOT NULL,
    status text NOT NULL,
    parent text COLLATE "C",
    merged_into text COLLATE "C",
    status_key double precision NOT NULL,
    active_order bigint,
    first_seq bigint NOT NULL,
    last_seq bigint NOT NULL,
    body text NOT NULL,
    PRIMARY KEY (store, id)
);
CREATE INDEX fold_items_active ON fold_items (store, active_order) WHERE status = 'active';
CREATE INDEX fold_items_recent ON fold_items (store, status_key DESC, id DESC) WHERE status <> 'active';
CREATE TABLE fold_annotations (
    store bigint NOT NULL,
    id text COLLATE "C" NOT NULL,
    number bigint NOT NULL,
    item text COLLATE "C" NOT NULL,
    resolved text COLLATE "C" NOT NULL,
    status text NOT NULL,
    created_seq bigint NOT NULL,
    ack_seq bigint,
    body text NOT NULL,
    PRIMARY KEY (store, id)
);
CREATE UNIQUE INDEX fold_annotations_number ON fold_annotations (store, number);
CREATE INDEX fold_annotations_resolved ON fold_annotations (store, resolved);
CREATE INDEX fold_annotations_saved ON fold_annotations (store, number) WHERE status = 'saved';
CREATE TABLE fold_item_records (
    store bigint NOT NULL,
    item text COLLATE "C" NOT NULL,
    event_seq bigint NOT NULL,
    image boolean NOT NULL,
    PRIMARY KEY (store, item, event_seq)
);
"""

# (version, name, SQL): applied in order, each once; never edit one that has shipped — add the next.
MIGRATIONS: tuple[tuple[int, str, str], ...] = (
    (1, "stores, records, cached state", _V1),
)
LATEST = MIGRATIONS[-1][0]


class SchemaTooNew(Exception):
    """The database holds a schema version this Fold does not know."""


def schema_version(conn: Connection[tuple[Any, ...]]) -> int:
    """The highest migration applied (0: the tables do not exist). Runs in the caller's transaction."""
    row = conn.execute("SELECT to_regclass('fold_schema_version') IS NOT NULL").fetchone()
    if row is None or not row[0]:
        return 0
    row = conn.execute("SELECT coalesce(max(version), 0) FROM fold_schema_version").fetchone()
    return 0 if row is None else row[0]


def migrate(conn: Connection[tuple[Any, ...]]) -> int:
    """Apply the missing migrations in one transaction (``conn`` in autocommit mode); the version after.

    The lock is a session-level advisory lock taken *before* the transaction:
    a transaction begun after another process's migration committed sees its
    tables (a lock taken inside the transaction would leave it with the
    catalog as it was before the wait).
    """
    conn.execute("SELECT pg_advisory_lock(%s)", (MIGRATION_LOCK,))
    try:
        conn.execute("BEGIN")
        try:
            current = schema_version(conn)
            if current > LATEST:
                raise SchemaTooNew(f"the database's Fold schema is version {current}; this Fold knows up to"
                                   f" {LATEST}: upgrade Fold")
            for version, name, sql in MIGRATIONS:
                if version <= current:
                    continue
                conn.execute(sql)
                conn.execute("INSERT INTO fold_schema_version (version, name) VALUES (%s, %s)", (version, name))
                current = version
            conn.execute("COMMIT")
        except BaseException:
            if not conn.closed:
                conn.execute("ROLLBACK")
            raise
        return current
    finally:
        if not conn.closed and not conn.broken:
            conn.execute("SELECT pg_advisory_unlock(%s)", (MIGRATION_LOCK,))
