"""host.db schema 4 upgrades a schema-3 database in place, keeping every observation and its disposition."""

from __future__ import annotations

import sqlite3

from fold_core.observation import Observation
from fold_host.hostdb import MIGRATIONS, open_host_db
from fold_host.hostdb.schema import statements

NOW = "2026-10-09T08:00:00+08:00"


def old_database(path) -> None:
    connection = sqlite3.connect(path, isolation_level=None)
    for number, script in enumerate(MIGRATIONS[:3]):
        for statement in statements(script):
            connection.execute(statement)
        connection.execute(f"PRAGMA user_version = {number + 1}")
    for n, (status, disposition) in enumerate([("processed", "used"), ("deferred", "deferred"), ("pending", None)]):
        body = Observation(id=f"mail:{n}", source="mail", channel="email", observed_at=NOW, title=f"签证 {n}",
                           text=f"银行流水 第{n}封").to_json()
        connection.execute("INSERT INTO observations (id, source, channel, observed_at, body, status, disposition, "
                           "why, related, batch_id, processed_at) VALUES (?, 'mail', 'email', ?, ?, ?, ?, ?, ?, ?, ?)",
                           (f"mail:{n}", NOW, body, status, disposition, "because" if disposition else None,
                            '["visa"]' if disposition else None, "b1" if disposition else None,
                            NOW if disposition else None))
    connection.execute("INSERT INTO agent_calls (batch_id, attempt, backend, at, outcome) "
                       "VALUES ('b1', 1, 'openai', ?, 'accepted')", (NOW,))
    connection.close()


def test_schema_3_becomes_4_with_deferral_dispositions_and_search(tmp_path):
    old_database(tmp_path / "host.db")
    with open_host_db(tmp_path) as db:
        assert db.schema_version == len(MIGRATIONS) >= 4
        assert db.status_counts() == {"processed": 1, "deferred": 1, "pending": 1}
        assert db.observation_detail("mail:1")["deferred"] == {"at": NOW, "times": 1}
        assert [d["disposition"] for d in db.observation_detail("mail:0")["dispositions"]] == ["used"]
        assert db.observation_detail("mail:2")["dispositions"] == []
        assert sorted(hit["id"] for hit in db.search_observations("银行流水", 10)) == ["mail:0", "mail:1", "mail:2"]
        [call] = db.calls()
        assert call["outcome"] == "accepted" and call["fallback"] == 0 and call["tools"] is None
        # New observations get the same treatment after the upgrade.
        db.add_observations([Observation(id="mail:9", source="mail", channel="email", observed_at=NOW,
                                         title="new", text="银行流水 新的")])
        assert len(db.search_observations("银行流水", 10)) == 4


def test_counters_started_by_the_upgrade_and_counted_since_are_one_series(tmp_path):
    """An editor call logged before the upgrade and one after: /metrics must see one series of 2, not two of 1."""
    old_database(tmp_path / "host.db")
    with open_host_db(tmp_path) as db:
        db.log_call(batch_id="b2", attempt=1, backend="openai", at=NOW, outcome="accepted")
        assert db.counters()["agent_calls"] == [(("openai", "accepted"), 2)]
