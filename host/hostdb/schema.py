"""host.db's schema: the ordered migrations (never edited once released: add a new one).

The schema version is SQLite's ``PRAGMA user_version``; migration N brings a
database from version N-1 to N.
"""

from __future__ import annotations

import sqlite3

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
    # 4: the editor's loop. Deferred observations come back until they expire (a new status,
    # so the table is rebuilt: SQLite cannot change a CHECK), every disposition is kept
    # (``dispositions``), titles and texts are searchable (FTS5, trigram: substrings in any
    # language), and a call records its model, skill digest, tool calls and fallback.
    """
    CREATE TABLE observations_4 (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        id TEXT NOT NULL UNIQUE,
        source TEXT NOT NULL,
        channel TEXT NOT NULL,
        at TEXT,
        observed_at TEXT NOT NULL,
        body TEXT NOT NULL,
        status TEXT NOT NULL DEFAULT 'pending'
            CHECK (status IN ('pending', 'processed', 'deferred', 'expired')),
        disposition TEXT,
        why TEXT,
        related TEXT,
        batch_id TEXT,
        processed_at TEXT,
        failed_windows INTEGER NOT NULL DEFAULT 0,
        thread TEXT,
        failed_at TEXT,
        deferred_at TEXT,
        deferred_times INTEGER NOT NULL DEFAULT 0
    );
    INSERT INTO observations_4 (seq, id, source, channel, at, observed_at, body, status, disposition, why, related,
                                batch_id, processed_at, failed_windows, thread, failed_at, deferred_at, deferred_times)
        SELECT seq, id, source, channel, at, observed_at, body, status, disposition, why, related, batch_id,
               processed_at, failed_windows, thread, failed_at,
               CASE WHEN status = 'deferred' THEN processed_at END,
               CASE WHEN status = 'deferred' THEN 1 ELSE 0 END
        FROM observations;
    DROP TABLE observations;
    ALTER TABLE observations_4 RENAME TO observations;
    CREATE INDEX observations_by_status ON observations (status, seq);
    CREATE INDEX observations_by_source ON observations (source, seq);
    CREATE INDEX observations_by_thread ON observations (thread) WHERE thread IS NOT NULL;
    CREATE TABLE dispositions (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        observation TEXT NOT NULL,
        at TEXT NOT NULL,
        batch_id TEXT,
        disposition TEXT NOT NULL,
        why TEXT,
        related TEXT
    );
    CREATE INDEX dispositions_by_observation ON dispositions (observation, seq);
    INSERT INTO dispositions (observation, at, batch_id, disposition, why, related)
        SELECT id, coalesce(processed_at, observed_at), batch_id, disposition, why, related FROM observations
        WHERE disposition IS NOT NULL ORDER BY seq;
    CREATE VIRTUAL TABLE observation_text USING fts5(title, text, tokenize = 'trigram');
    INSERT INTO observation_text (rowid, title, text)
        SELECT seq, coalesce(json_extract(body, '$.title'), ''), coalesce(json_extract(body, '$.text'), '')
        FROM observations;
    ALTER TABLE agent_calls ADD COLUMN model TEXT;
    ALTER TABLE agent_calls ADD COLUMN skill TEXT;
    ALTER TABLE agent_calls ADD COLUMN tools TEXT;
    ALTER TABLE agent_calls ADD COLUMN fallback INTEGER NOT NULL DEFAULT 0;
    CREATE INDEX agent_calls_by_batch ON agent_calls (batch_id, seq);
    """,
    # 5: what the user's feedback teaches (contract §9 ``user.learned``): one row per feedback and
    # per sender or thread of the item it was about; ``at`` in UTC so that text order is time order.
    """
    CREATE TABLE feedback_learning (
        feedback TEXT NOT NULL,
        at TEXT NOT NULL,
        item TEXT NOT NULL,
        meaning TEXT NOT NULL,
        by TEXT NOT NULL CHECK (by IN ('sender', 'thread')),
        key TEXT NOT NULL,
        PRIMARY KEY (feedback, by, key)
    );
    CREATE INDEX feedback_learning_by_key ON feedback_learning (by, key);
    CREATE INDEX feedback_learning_by_at ON feedback_learning (at);
    """,
    # 6: monitoring counters that survive restarts and pruning (polls, windows, editor calls and
    # tokens, deliveries), started from what the older tables hold.
    """
    CREATE TABLE counters (
        name TEXT NOT NULL,
        labels TEXT NOT NULL,
        value INTEGER NOT NULL DEFAULT 0,
        PRIMARY KEY (name, labels)
    ) WITHOUT ROWID;
    INSERT INTO counters (name, labels, value)
        SELECT 'polls', json_array(source, status), count(*) FROM polls GROUP BY source, status;
    INSERT INTO counters (name, labels, value)
        SELECT 'agent_calls', json_array(coalesce(backend, ''), coalesce(outcome, '')), count(*) FROM agent_calls
        GROUP BY coalesce(backend, ''), coalesce(outcome, '');
    INSERT INTO counters (name, labels, value)
        SELECT 'agent_tokens', json_array('input'), coalesce(sum(input_tokens), 0) FROM agent_calls;
    INSERT INTO counters (name, labels, value)
        SELECT 'agent_tokens', json_array('output'), coalesce(sum(output_tokens), 0) FROM agent_calls;
    """,
    # 7: the observations the store's records cite (``event:<id>`` sources), read up to ``cited_through``:
    # a new or rebuilt host.db never offers them again as new.
    """
    CREATE TABLE cited (event TEXT NOT NULL, item TEXT NOT NULL, PRIMARY KEY (event, item)) WITHOUT ROWID;
    """,
    # 8: the search index reads the observations' own title and text (an external-content FTS5 table over a
    # view of their bodies) instead of keeping a second copy of both; the old table's pages are reused.
    # Triggers keep it in step with every insert, change of body and delete: such an index must be told
    # the exact values it held, which only the old row knows.
    """
    DROP TABLE observation_text;
    CREATE VIEW observation_fields AS
        SELECT seq, coalesce(json_extract(body, '$.title'), '') AS title,
               coalesce(json_extract(body, '$.text'), '') AS text
        FROM observations;
    CREATE VIRTUAL TABLE observation_text USING fts5(title, text, tokenize = 'trigram',
        content = 'observation_fields', content_rowid = 'seq');
    INSERT INTO observation_text (observation_text) VALUES ('rebuild');
    CREATE TRIGGER observation_indexed AFTER INSERT ON observations BEGIN
        INSERT INTO observation_text (rowid, title, text) VALUES (new.seq,
            coalesce(json_extract(new.body, '$.title'), ''), coalesce(json_extract(new.body, '$.text'), ''));
    END;
    CREATE TRIGGER observation_unindexed AFTER DELETE ON observations BEGIN
        INSERT INTO observation_text (observation_text, rowid, title, text) VALUES ('delete', old.seq,
            coalesce(json_extract(old.body, '$.title'), ''), coalesce(json_extract(old.body, '$.text'), ''));
    END;
    CREATE TRIGGER observation_reindexed AFTER UPDATE OF body ON observations BEGIN
        INSERT INTO observation_text (observation_text, rowid, title, text) VALUES ('delete', old.seq,
            coalesce(json_extract(old.body, '$.title'), ''), coalesce(json_extract(old.body, '$.text'), ''));
        INSERT INTO observation_text (rowid, title, text) VALUES (new.seq,
            coalesce(json_extract(new.body, '$.title'), ''), coalesce(json_extract(new.body, '$.text'), ''));
    END;
    """,
    # 9: what an editor call cost: the prompt tokens the backend read from (or wrote to) its prompt cache,
    # and the cost under ``[agent] prices`` when set (contract §11.1).
    """
    ALTER TABLE agent_calls ADD COLUMN cached_tokens INTEGER;
    ALTER TABLE agent_calls ADD COLUMN cost REAL;
    """,
)


def statements(script: str) -> list[str]:
    """The statements of one migration script; a trigger, whose body holds semicolons of its own, stays whole."""
    pieces, pending = [], ""
    for part in script.split(";"):
        pending += part + ";"
        if sqlite3.complete_statement(pending):
            pieces.append(pending)
            pending = ""
    pieces.append(pending)  # an unfinished statement fails when it runs, it never vanishes
    return [text for text in (piece.strip().removesuffix(";").strip() for piece in pieces) if text]
