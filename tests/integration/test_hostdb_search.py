"""host.db's search index, with real SQLite: the text is kept once, and the index stays right.

The index reads each observation's title and text from its body, so it must
be told what it held whenever a body changes (triggers do it): retention, a
change made by other code, a move between databases, the upgrade from a
host.db that kept a second copy. After each, SQLite's own check of the index
against the bodies passes and a search answers what a user would expect.
"""

from __future__ import annotations

import sqlite3

from fold_core.observation import Observation
from fold_host.hostdb import MIGRATIONS, open_host_db
from fold_host.hostdb.schema import statements

NOW = "2026-10-09T08:00:00+08:00"
OLD = "2026-01-05T08:00:00+08:00"


def observation(n: int, observed_at: str = NOW) -> Observation:
    return Observation(id=f"mail:{n}", source="mail", channel="email", observed_at=observed_at,
                       title=f"第 {n} 封：季度预算", text=f"正文 {n} 银行流水 " + "周报内容 " * 150)


def index_is_right(path) -> None:
    with sqlite3.connect(path) as connection:  # raises "database disk image is malformed" when it is not
        connection.execute("INSERT INTO observation_text (observation_text, rank) VALUES ('integrity-check', 1)")


def found(db, query: str) -> list[str]:
    return sorted(hit["id"] for hit in db.search_observations(query, 100))


def schema_7(path) -> sqlite3.Connection:
    """A host.db as Fold left it before the index read the bodies (its FTS5 table kept its own copy)."""
    connection = sqlite3.connect(path, isolation_level=None)
    for number, script in enumerate(MIGRATIONS[:7]):
        for statement in statements(script):
            connection.execute(statement)
        connection.execute(f"PRAGMA user_version = {number + 1}")
    return connection


def add_to_schema_7(connection: sqlite3.Connection, observations) -> None:
    connection.execute("BEGIN")
    for item in observations:
        seq = connection.execute("INSERT INTO observations (id, source, channel, observed_at, body) "
                                 "VALUES (?, 'mail', 'email', ?, ?)", (item.id, NOW, item.to_json())).lastrowid
        connection.execute("INSERT INTO observation_text (rowid, title, text) VALUES (?, ?, ?)",
                           (seq, item.title, item.text))
    connection.execute("COMMIT")


def test_the_text_is_stored_once(tmp_path):
    items = [observation(n) for n in range(400)]
    with open_host_db(tmp_path) as db:
        db.add_observations(items)
        db.connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    before = schema_7(tmp_path / "before.db")
    add_to_schema_7(before, items)
    before.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    before.close()
    text = sum(len((item.title + item.text).encode()) for item in items)
    saved = (tmp_path / "before.db").stat().st_size - (tmp_path / "host.db").stat().st_size
    assert saved >= 0.8 * text, f"{saved:,} bytes smaller for {text:,} bytes of text"
    index_is_right(tmp_path / "host.db")


def test_retention_takes_the_dropped_text_out_of_the_index(tmp_path):
    with open_host_db(tmp_path) as db:
        db.add_observations([observation(1, OLD), observation(2, OLD), observation(3)])
        db.mark([{"event": f"mail:{n}", "disposition": "used", "why": "filed", "related": ["x"]} for n in (1, 2, 3)],
                batch_id="b1", now=NOW)
        assert found(db, "银行流水") == ["mail:1", "mail:2", "mail:3"]
        assert db.forget_text(before="2026-06-01T00:00:00+08:00", now=NOW) == (2, 0)
        assert found(db, "银行流水") == ["mail:3"]
        assert found(db, "正文 1") == []  # a short term (LIKE) does not see it either
        db.add_observations([observation(4)])
        assert found(db, "银行流水") == ["mail:3", "mail:4"]
    index_is_right(tmp_path / "host.db")


def test_a_host_db_that_kept_a_second_copy_is_upgraded_with_its_search(tmp_path):
    path = tmp_path / "host.db"
    connection = schema_7(path)
    add_to_schema_7(connection, [observation(n) for n in range(3)])
    connection.close()
    with open_host_db(tmp_path) as db:
        assert db.schema_version == len(MIGRATIONS)
        assert found(db, "银行流水") == ["mail:0", "mail:1", "mail:2"]
        assert found(db, "2 银") == ["mail:2"]
        tables = {row[0] for row in db.connection.execute("SELECT name FROM sqlite_master")}
        assert "observation_text_content" not in tables  # the second copy is gone
    index_is_right(path)


def test_any_change_of_a_body_by_any_code_keeps_the_index_right(tmp_path):
    with open_host_db(tmp_path) as db:
        db.add_observations([observation(n) for n in range(3)])
    with sqlite3.connect(tmp_path / "host.db") as connection:  # not through HostDB: what later code might do
        connection.execute("UPDATE observations SET body = json_set(body, '$.text', '改写后的正文内容') WHERE id = 'mail:1'")
        connection.execute("DELETE FROM observations WHERE id = 'mail:2'")
    index_is_right(tmp_path / "host.db")
    with open_host_db(tmp_path) as db:
        assert found(db, "银行流水") == ["mail:0"]
        assert found(db, "改写后") == ["mail:1"]


def test_retention_keeps_pending_and_deferred_observations_whole(tmp_path):
    """Older than the cutoff, a pending and a deferred observation keep text, title and sender: the editor
    has not finished with them; only the settled one loses them."""
    with open_host_db(tmp_path) as db:
        db.add_observations([observation(1, OLD), observation(2, OLD), observation(3, OLD)])
        db.mark([{"event": "mail:2", "disposition": "deferred", "why": "later", "related": []},
                 {"event": "mail:3", "disposition": "used", "why": "filed", "related": ["x"]}], batch_id="b1", now=NOW)
        whole = {o.id: o for o in db.observations_by_id(["mail:1", "mail:2"])}
        assert db.forget_text(before="2026-06-01T00:00:00+08:00", now=NOW) == (1, 0)
        after = {o.id: o for o in db.observations_by_id(["mail:1", "mail:2", "mail:3"])}
        for kept in ("mail:1", "mail:2"):
            assert after[kept] == whole[kept] and after[kept].text and after[kept].title
            assert "text_dropped_at" not in after[kept].meta
        assert after["mail:3"].text == "" and after["mail:3"].title is None
        assert found(db, "银行流水") == ["mail:1", "mail:2"]
