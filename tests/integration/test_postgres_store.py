"""What is PostgreSQL's own in the PostgreSQL store (contract §6, §7 on a database).

Against the private cluster of ``tests/support/postgres.py``: readers never
wait for a writer and keep their snapshot; a connection that fails is exit 3,
never "not found", and a long-lived recorder gets over a lost connection; the
password comes from ``password_env`` / ``password_file``; stores of one
database are separate; the schema is versioned (a newer one is refused, a
read never creates one); ``[store] url`` / ``name`` in plugins.toml; a state
object keeps answering for its own event_seq after others wrote; ``foldctl
state`` on a directory never imports psycopg.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from urllib.parse import quote

import psycopg
import pytest

from fold_core.store.location import parse_url
from fold_core.store.pg.recorder import PostgresRecorder, postgres_store
from tests.support.postgres import SECRET_PASSWORD, SECRET_ROLE
from tests.support.stores import foldctl

NOW = "2026-10-09T08:00:00+08:00"
LATER = "2026-10-10T08:00:00+08:00"


def batch(batch_id, *ids, weight="normal"):
    return {"batch_id": batch_id, "declarations": [
        {"id": item, "title": f"标题 {item}", "weight": weight, "kind": "fyi"} for item in ids]}


def commit(location, body, env=None, now=NOW):
    return foldctl(location, "commit", "--actor", "agent", "--now", now, stdin=json.dumps(body), env=env)


@pytest.fixture
def url(postgres_cluster, request):
    """A new store's URL (the store itself is created by the test)."""
    return postgres_cluster.url(store=f"pg-{os.getpid()}-{request.node.name}"[:64].replace("[", "-").replace("]", ""))


def test_init_on_a_url(url):
    code, doc, _ = foldctl(url, "init", "--budget", "32")
    assert code == 0 and doc["created"] is True and doc["budget"] == 32 and doc["store"] == url
    code, doc, _ = foldctl(url, "init")
    assert code == 0 and doc["created"] is False and doc["budget"] == 32
    code, doc, err = foldctl(url, "init", "--budget", "64")
    assert code == 2 and "budget is fixed" in err
    assert foldctl(url, "state", "--now", NOW)[1]["budget"] == 32


def test_readers_never_wait_for_a_writer_and_keep_their_snapshot(url):
    assert commit(url, batch("b1", "a"))[0] == 0
    writer = PostgresRecorder(url)
    with writer.session(write=True):  # a writer holds the store
        code, doc, _ = foldctl(url, "state", "--now", LATER, env={"FOLD_LOCK_TIMEOUT": "0.2"})
        assert code == 0 and doc["event_seq"] == 1
        assert foldctl(url, "history", "--batch", "b1", env={"FOLD_LOCK_TIMEOUT": "0.2"})[1]["found"] is True
    reader = postgres_store(url)
    with reader.recorder.session(write=False) as session:  # a reader holds its snapshot ...
        code, receipt, _ = commit(url, batch("b2", "b"), env={"FOLD_LOCK_TIMEOUT": "0.2"})
        assert code == 0 and receipt["event_seq"] == 2  # ... and the writer goes on
        assert session.state.event_seq == 1 and session.lookup("b2") is None
        assert [r["event_seq"] for r in session.records()] == [1]
    assert reader.state().event_seq == 2


def test_a_connection_that_fails_is_unavailable_never_not_found(postgres_cluster, url):
    assert commit(url, batch("b1", "a"))[0] == 0
    closed = f"postgresql://fold@127.0.0.1:{_closed_port()}/fold?store=x&connect_timeout=3"
    for args in (["state"], ["history", "--batch", "b1"], ["verify"], ["init"]):
        code, doc, err = foldctl(closed, *args)
        assert code == 3 and doc["errors"][0]["code"] == "store_unavailable", (args, doc, err)
    code, doc, err = commit(closed, batch("b2", "x"))
    assert code == 3 and "retry with the same batch_id" in err
    # A long-lived recorder whose connection the server ends gets a new one at its next session.
    store = postgres_store(url)
    assert store.history(batch="b1").document["found"] is True
    backend_pid = store.recorder.connection().info.backend_pid
    postgres_cluster.psql(f"SELECT pg_terminate_backend({backend_pid})")
    assert store.commit(batch("b2", "b"), actor="agent", now=NOW).document["event_seq"] == 2
    assert store.recorder.connection().info.backend_pid != backend_pid


def _closed_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_password_from_env_or_file(postgres_cluster, tmp_path):
    base = postgres_cluster.url(tcp=True, user=SECRET_ROLE, store="secret")
    code, doc, err = foldctl(base, "state")
    assert code == 3 and "password" in err  # libpq found none: unavailable, not empty
    with_env = base + "&password_env=FOLD_TEST_PG_PASSWORD"
    code, doc, err = foldctl(with_env, "init")
    assert code == 2 and "FOLD_TEST_PG_PASSWORD" in err  # named but not set: a configuration error
    code, doc, _ = foldctl(with_env, "init", env={"FOLD_TEST_PG_PASSWORD": SECRET_PASSWORD})
    assert code == 0 and doc["created"] is True
    assert SECRET_PASSWORD not in json.dumps(doc)
    secret = tmp_path / "pg-password"
    secret.write_text(SECRET_PASSWORD + "\n")
    with_file = base + f"&password_file={secret}"
    assert commit(with_file, batch("b1", "a"))[1]["event_seq"] == 1
    wrong = tmp_path / "wrong"
    wrong.write_text("nope\n")
    code, doc, err = foldctl(base + f"&password_file={wrong}", "history", "--batch", "b1")
    assert code == 3 and doc["errors"][0]["code"] == "store_unavailable" and SECRET_PASSWORD not in err
    in_url = base.replace(f"{SECRET_ROLE}@", f"{SECRET_ROLE}:{quote(SECRET_PASSWORD)}@")
    code, doc, err = foldctl(in_url, "init")
    assert code == 0 and quote(SECRET_PASSWORD) not in doc["store"] + err and "***" in doc["store"]


def test_stores_of_one_database_are_separate(postgres_cluster):
    alice, bob = postgres_cluster.url(store="sep-alice"), postgres_cluster.url(store="sep-bob")
    assert commit(alice, batch("b1", "a", weight="high"))[1]["event_seq"] == 1
    assert commit(bob, batch("b1", "z"))[1]["replayed"] is False  # same batch_id, another store
    assert commit(bob, batch("b2", "a"))[0] == 0  # same item id, another store
    assert [i["id"] for i in foldctl(alice, "state", "--now", LATER)[1]["root"]["items"]] == ["a"]
    assert [i["id"] for i in foldctl(bob, "state", "--now", LATER)[1]["root"]["items"]] == ["a", "z"]
    assert foldctl(alice, "verify")[1]["records"] == 1 and foldctl(bob, "verify")[1]["records"] == 2
    bare = postgres_cluster.url()  # a bare URL is the store "default"
    assert commit(bare, batch("b9", "d"))[0] == 0
    assert foldctl(postgres_cluster.url(store="default"), "history", "--batch", "b9")[1]["found"] is True


def test_schema_is_versioned_and_a_newer_one_is_refused(postgres_cluster):
    fresh = postgres_cluster.create_database("schema_check")
    code, doc, err = foldctl(fresh, "state")
    assert code == 3 and "no Fold store" in err  # a read never creates the tables
    assert postgres_cluster.psql("SELECT to_regclass('fold_stores') IS NULL", database="schema_check").strip() == "t"
    assert foldctl(fresh, "init")[0] == 0
    versions = postgres_cluster.psql("SELECT version, name FROM fold_schema_version ORDER BY version",
                                     database="schema_check")
    assert versions.strip() == "1|stores, records, cached state"
    postgres_cluster.psql("INSERT INTO fold_schema_version (version, name) VALUES (999, 'from the future')",
                          database="schema_check")
    for args in (["state"], ["init"]):
        code, doc, err = foldctl(fresh, *args)
        assert code == 3 and "upgrade Fold" in err
    code, _, err = commit(fresh, batch("b1", "a"))
    assert code == 3 and "upgrade Fold" in err


def test_store_url_in_plugins_toml(postgres_cluster, tmp_path, monkeypatch):
    url = postgres_cluster.url(tcp=True, user=SECRET_ROLE)
    config = tmp_path / "plugins.toml"
    config.write_text(f'[store]\nurl = "{url}"\nname = "from-config"\npassword_env = "FOLD_TEST_PG_PASSWORD"\n')
    env = {"FOLD_CONFIG": str(config), "FOLD_TEST_PG_PASSWORD": SECRET_PASSWORD}
    done = subprocess.run([sys.executable, "-m", "fold_core", "init", "--budget", "16"], capture_output=True,
                          env={**{k: v for k, v in os.environ.items() if not k.startswith("FOLD_")}, **env})
    assert done.returncode == 0, done.stderr.decode()
    assert json.loads(done.stdout)["store"] == url + "?store=from-config&password_env=FOLD_TEST_PG_PASSWORD"
    target = postgres_cluster.url(store="from-config")
    assert foldctl(target, "state", "--now", NOW)[1]["budget"] == 16
    from fold_core.config import load_config
    from fold_core.errors import ConfigError

    with pytest.raises(ConfigError, match="FOLD_TEST_PG_PASSWORD is not set"):
        load_config(str(config), builtins=())
    monkeypatch.setenv("FOLD_TEST_PG_PASSWORD", SECRET_PASSWORD)
    assert load_config(str(config), builtins=()).store is None  # not a directory
    both = tmp_path / "both.toml"
    both.write_text(f'[store]\npath = "store"\nurl = "{url}"\n')
    with pytest.raises(ConfigError, match="path or url"):
        load_config(str(both), builtins=())


def test_a_state_answers_for_its_own_event_seq(url):
    """A state kept after its session still gives its own images, also of items changed since."""
    store, other = postgres_store(url), postgres_store(url)
    store.commit(batch("b1", "a", "b"), actor="agent", now=NOW)
    store.annotate(item="b", text="看过了", author="user", now=NOW)
    kept = postgres_store(url).state()  # a fresh recorder: only the active items are in memory
    other.commit({"batch_id": "b2", "acknowledges": ["ann-1"], "declarations": [
        {"id": "a", "relation": "withdraw", "reason": "done"},
        {"id": "c", "title": "new", "weight": "low", "kind": "fyi"}]}, actor="agent", now=LATER)
    assert kept.event_seq == 2 and kept.items["a"]["status"] == "active"
    assert "c" not in kept.items and len(kept.items) == 2
    assert kept.annotations["ann-1"]["status"] == "saved"
    from fold_core.state import replay

    records = store.history().document["records"]
    assert kept == replay(records[:2], budget=64)
    assert store.state() == replay(records, budget=64)


def test_state_on_a_directory_never_imports_psycopg(tmp_path):
    script = textwrap.dedent(f'''
        import sys
        from fold_core.cli import main
        assert main(["--store", {str(tmp_path / "s")!r}, "init"]) == 0
        assert main(["--store", {str(tmp_path / "s")!r}, "state", "--now", "{NOW}"]) == 0
        print("psycopg" in sys.modules)
    ''')
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "False"


def test_the_host_commands_take_a_store_url(url, tmp_path):
    """A URL is a store for the host's commands too: never taken for a relative path, never "empty"."""
    environment = {key: value for key, value in os.environ.items() if not key.startswith("FOLD_")}

    def host_command(*args):
        return subprocess.run([sys.executable, "-m", "fold_host", *args, "--format", "json"], capture_output=True,
                              text=True, cwd=tmp_path, env={**environment, "FOLD_STORE": url}, timeout=120)

    for args in (["--store", url, "inbox"], ["inbox"]):
        done = host_command(*args)
        assert done.returncode == 3 and "create one with `foldctl init`" in done.stderr, done.stderr
    assert foldctl(url, "init")[0] == 0
    done = host_command("inbox")
    assert done.returncode == 0 and json.loads(done.stdout) == {"observations": []}, done.stderr
    assert os.listdir(tmp_path) == []


def test_url_parsing():
    location = parse_url("postgresql://u:pw@h1:5432,h2:5433/db?store=alice&sslmode=disable&password_env=PW")
    assert location.conninfo == "postgresql://u:pw@h1:5432,h2:5433/db?sslmode=disable"
    assert (location.name, location.password_env) == ("alice", "PW")
    assert location.display == "postgresql://u:***@h1:5432,h2:5433/db?store=alice&sslmode=disable&password_env=PW"
    assert parse_url("postgres:///fold?host=/run/pg").conninfo == "postgres:///fold?host=%2Frun%2Fpg"
    assert parse_url("postgresql://h/db").name == "default"
    from fold_core.errors import UsageError

    for bad in ("postgresql://h/db?store=bad/name", "postgresql://h/db?store=a&store=b",
                "postgresql://h/db?password_env=A&password_file=/x", "postgresql://h/db#alice"):
        with pytest.raises(UsageError):
            parse_url(bad)
    with pytest.raises(psycopg.ProgrammingError):
        psycopg.conninfo.conninfo_to_dict("postgresql://h/db?store=alice")  # why Fold strips its own


def test_first_writers_of_a_new_database_migrate_once(postgres_cluster):
    """Six processes write to a database without Fold tables at once: one migrates, all succeed."""
    for attempt in range(3):
        database = postgres_cluster.create_database(f"first_writers_{attempt}")
        environment = {key: value for key, value in os.environ.items() if not key.startswith("FOLD_")}
        started = [subprocess.Popen([sys.executable, "-m", "fold_core", "--store", f"{database}&store=s{n}", "init"],
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=environment)
                   for n in range(6)]
        results = [(process.wait(timeout=120), process.stderr.read().decode()) for process in started]
        assert [code for code, _ in results] == [0] * 6, results
        rows = postgres_cluster.psql("SELECT count(*) FROM fold_schema_version", database=f"first_writers_{attempt}")
        assert rows.strip() == "1"


def test_verify_finds_what_was_changed_behind_the_store(postgres_cluster, url):
    """A record row or a cached-state row changed by hand: ``verify`` exits 4 naming it; reads never skip it."""
    for n in (1, 2, 3):
        assert commit(url, batch(f"b{n}", f"i{n}"))[0] == 0
    assert foldctl(url, "annotate", "--item", "i1", "--text", "看过了", "--now", NOW)[0] == 0
    assert foldctl(url, "verify")[1]["records"] == 4
    name = parse_url(url).name
    store = f"(SELECT id FROM fold_stores WHERE name = '{name}')"
    original = postgres_cluster.psql(f"SELECT body FROM fold_records WHERE store = {store} AND event_seq = 2").strip()
    postgres_cluster.psql(f"UPDATE fold_records SET body = 'not json' WHERE store = {store} AND event_seq = 2")
    code, doc, _ = foldctl(url, "verify")
    assert code == 4 and doc["errors"][0]["line"] == 2 and doc["errors"][0]["code"] == "store_corrupt"
    for args in (["history"], ["history", "--batch", "b2"]):
        code, doc, _ = foldctl(url, *args)
        assert code == 4 and doc["errors"][0]["line"] == 2  # never "not found", never skipped
    postgres_cluster.psql(f"UPDATE fold_records SET body = $${original}$$ WHERE store = {store} AND event_seq = 2")
    assert foldctl(url, "verify")[0] == 0
    postgres_cluster.psql(f"UPDATE fold_items SET body = replace(body, '\"normal\"', '\"high\"')"
                          f" WHERE store = {store} AND id = 'i3'")
    code, doc, err = foldctl(url, "verify")
    assert code == 4 and "fold_items" in err and "i3" in err
    postgres_cluster.psql(f"UPDATE fold_items SET body = replace(body, '\"high\"', '\"normal\"')"
                          f" WHERE store = {store} AND id = 'i3'")
    postgres_cluster.psql(f"UPDATE fold_annotations SET status = 'acknowledged' WHERE store = {store}")
    code, doc, err = foldctl(url, "verify")
    assert code == 4 and "fold_annotations" in err
    postgres_cluster.psql(f"UPDATE fold_annotations SET status = 'saved' WHERE store = {store}")
    assert foldctl(url, "verify")[0] == 0
    postgres_cluster.psql(f"DELETE FROM fold_records WHERE store = {store} AND event_seq = 3")
    for args in (["verify"], ["history"], ["history", "--since", "1"]):
        code, doc, err = foldctl(url, *args)
        assert code == 4 and doc["errors"][0]["line"] == 3 and "missing" in err
