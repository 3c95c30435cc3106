"""host.db's schema: the ordered migrations (never edited once released: add a new one).

The schema version is SQLite's ``PRAGMA user_version``; migration N brings a
database from version N-1 to N.
"""

from __future__ import annotations

__all__ = ["FILE_NAME", "MIGRATIONS", "OPEN_TIMEOUT", "statements"]

FILE_NAME = "host.db"
OPEN_TIMEOUT = 30.0  # seconds a connection waits for another one (busy timeout, switching to WAL)

MIGRATIONS: tuple[str, ...] = (
    # 1: the first schema
    """
    CREATE TABLE observations (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        id TEXT NOT NULL UNIQUE,
        source TEXT NOT NULL,
        channel TEXT NOT NULL,
        at TEXT,
        observed_at TEXT NOT NULL,
        body TEXT NOT NULL,
        status TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'processed', 'deferred')),
        disposition TEXT,
        why TEXT,
        related TEXT,
        batch_id TEXT,
        processed_at TEXT,
        failed_windows INTEGER NOT NULL DEFAULT 0
    );
    CREATE INDEX observations_by_status ON observations (status, seq);
    CREATE INDEX observations_by_source ON observations (source, seq);
    CREATE TABLE cursors (source TEXT PRIMARY KEY, cursor TEXT, updated_at TEXT NOT NULL);
    CREATE TABLE polls (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        source TEXT NOT NULL,
        at TEXT NOT NULL,
        status TEXT NOT NULL,
        error_class TEXT,
        message TEXT,
        observations INTEGER NOT NULL DEFAULT 0,
        notes TEXT
    );
    CREATE INDEX polls_by_source ON polls (source, seq);
    CREATE TABLE sources (
        source TEXT PRIMARY KEY,
        failures INTEGER NOT NULL DEFAULT 0,
        last_poll_at TEXT,
        last_ok_at TEXT,
        next_poll_at TEXT,
        last_error TEXT,
        disabled INTEGER NOT NULL DEFAULT 0,
        min_interval REAL
    );
    CREATE TABLE reminders (
        id TEXT PRIMARY KEY,
        target TEXT NOT NULL,
        feedback TEXT NOT NULL,
        due_at TEXT NOT NULL,
        requested_at TEXT NOT NULL,
        fired_at TEXT
    );
    CREATE TABLE consumers (
        name TEXT PRIMARY KEY,
        event_seq INTEGER NOT NULL,
        failures INTEGER NOT NULL DEFAULT 0,
        next_try_at TEXT,
        last_error TEXT,
        last_error_at TEXT,
        updated_at TEXT
    );
    CREATE TABLE consumer_memory (
        consumer TEXT NOT NULL,
        key TEXT NOT NULL,
        value TEXT NOT NULL,
        PRIMARY KEY (consumer, key)
    );
    CREATE TABLE agent_calls (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        batch_id TEXT,
        attempt INTEGER,
        backend TEXT,
        at TEXT,
        latency_ms REAL,
        request TEXT,
        response TEXT,
        stderr TEXT,
        input_tokens INTEGER,
        output_tokens INTEGER,
        outcome TEXT,
        error TEXT
    );
    CREATE TABLE host_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
    """,
    # 2: the host cycle: a thread index (referenced not-active items, §9 context) and
    # the settings fingerprint of a source (a changed configuration lifts "disabled").
    """
    ALTER TABLE observations ADD COLUMN thread TEXT;
    UPDATE observations SET thread = json_extract(body, '$.thread');
    CREATE INDEX observations_by_thread ON observations (thread) WHERE thread IS NOT NULL;
    ALTER TABLE sources ADD COLUMN settings_digest TEXT;
    """,
    # 3: when an observation's last failed window ended (its retry pause counts from there).
    """
    ALTER TABLE observations ADD COLUMN failed_at TEXT;
    """,
    # 4: the observations the store's records cite (``event:<id>`` sources), read up to ``cited_through``:
    # a new or rebuilt host.db never offers them again as new.
    """
    CREATE TABLE cited (event TEXT NOT NULL, item TEXT NOT NULL, PRIMARY KEY (event, item)) WITHOUT ROWID;
    """,
)


def statements(script: str) -> list[str]:
    """The statements of one migration script."""
    return [part.strip() for part in script.split(";") if part.strip()]
