"""``foldctl`` as a user runs it (contract §7, §8): real subprocesses on temporary stores.

Every answer is checked for what a caller relies on: the exit code, exactly
one JSON document on stdout (or the text view), explanations on stderr, and
never a traceback — also for bad input.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from fold_core.cli.textview import width

NOW = "2026-10-09T08:00:00+08:00"
LATER = "2026-10-10T08:00:00+08:00"


def foldctl(*args, stdin=None, env=None, cwd=None, store=None):
    """Run ``python -m fold_core``; (exit code, stdout text, stderr text)."""
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("FOLD_", "XDG_"))}
    environment.update(env or {})
    prefix = ["--store", str(store)] if store is not None else []
    done = subprocess.run(
        [sys.executable, "-m", "fold_core", *prefix, *args],
        input=stdin.encode() if isinstance(stdin, str) else stdin,
        capture_output=True, env=environment, cwd=cwd, timeout=60,
    )
    out, err = done.stdout.decode(), done.stderr.decode()
    assert "Traceback" not in err, err
    return done.returncode, out, err


def answer(*args, **kwargs):
    """Like ``foldctl`` but stdout must be exactly one JSON document."""
    code, out, err = foldctl(*args, **kwargs)
    return code, json.loads(out), err


VISA = {"id": "visa", "title": "签证材料缺银行流水", "summary": "签证材料缺银行流水，12日截止",
        "weight": "critical", "kind": "needs-you", "due_at": "2026-10-12T00:00:00+08:00"}
READING = {"id": "reading", "title": "Read the paper", "weight": "normal", "kind": "fyi"}
TRIP = {"id": "trip", "title": "出差安排", "summary": "两个子项", "weight": "high", "kind": "in-progress",
        "children": [{"id": "hotel", "title": "订酒店", "weight": "normal", "kind": "needs-you"}]}


@pytest.fixture
def store(tmp_path):
    path = tmp_path / "store"
    code, doc, _ = answer("init", store=path)
    assert code == 0 and doc["created"] is True and doc["budget"] == 64
    body = {"batch_id": "b1", "declarations": [VISA, READING, TRIP]}
    code, receipt, _ = answer("commit", "--actor", "agent", "--now", NOW, stdin=json.dumps(body), store=path)
    assert code == 0 and receipt["type"] == "commit"
    return path


def log_bytes(path):
    log = path / "events.jsonl"
    return log.read_bytes() if log.exists() else None


# -- commands and their documents ----------------------------------------------------------


def test_help_and_console_script(tmp_path):
    code, out, _ = foldctl("--help")
    assert code == 0 and "commit" in out and "exit codes" in out
    script = shutil.which("foldctl", path=os.path.dirname(sys.executable))
    if script is None:
        pytest.skip("the foldctl console script is not installed in this environment")
    done = subprocess.run([script, "--store", str(tmp_path / "s"), "init"], capture_output=True)
    assert done.returncode == 0 and json.loads(done.stdout)["created"] is True


def test_init_is_idempotent_and_keeps_its_budget(tmp_path):
    path = tmp_path / "store"
    assert answer("init", "--budget", "100", store=path)[1]["budget"] == 100
    code, doc, _ = answer("init", store=path)
    assert code == 0 and doc["created"] is False and doc["budget"] == 100
    code, doc, err = answer("init", "--budget", "64", store=path)
    assert code == 2 and "fixed at creation" in err
    for bad in ("7", "4097", "x"):
        assert answer("init", "--budget", bad, store=tmp_path / "other")[0] == 2
    assert not (tmp_path / "other").exists()


def test_state_json_document(store):
    code, doc, _ = answer("state", "--now", LATER, store=store)
    assert code == 0 and doc["schema"] == "fold.state/1" and doc["now"] == LATER
    assert [item["id"] for item in doc["root"]["items"]] == ["visa", "trip", "reading"]
    assert doc["root"]["items"][0]["until_due"] == "1d16h"
    assert doc["root"]["items"][1]["children"]["items"][0]["id"] == "hotel"
    code, doc, _ = answer("state", "--now", LATER, "--depth", "0", store=store)
    assert doc["root"] == {"budget": 64, "used": 42, "free": 22, "count": 3}
    code, doc, _ = answer("state", "--now", LATER, "--item", "trip", store=store)
    assert code == 0 and doc["item"]["id"] == "trip" and "root" not in doc
    code, doc, _ = answer("state", "--item", "nope", store=store)
    assert code == 1 and doc["errors"][0]["code"] == "item_not_found" and "batch_id" not in doc


def test_state_not_active_bound(store):
    body = {"batch_id": "b2", "declarations": [
        {"id": "reading", "relation": "withdraw", "reason": "读完了"}]}
    assert answer("commit", "--actor", "agent", "--now", LATER, stdin=json.dumps(body), store=store)[0] == 0
    code, doc, _ = answer("state", "--not-active", "0", store=store)
    assert doc["not_active"] == [] and doc["not_active_total"] == 1
    code, doc, _ = answer("state", "--not-active", "all", store=store)
    assert [entry["id"] for entry in doc["not_active"]] == ["reading"]
    assert answer("state", "--not-active", "some", store=store)[0] == 2


def test_state_text_is_readable_and_aligned(store):
    code, out, err = foldctl("state", "--now", LATER, "--format", "text", store=store)
    assert code == 0 and err == ""
    assert "revision 1" in out and "签证材料缺银行流水，12日截止" in out and "due in 1d16h" in out
    root_rows = [line for line in out.splitlines() if line[:1].isdigit()]
    assert [row.split()[0] for row in root_rows] == ["1.", "2.", "3."]
    # The id column starts at the same display column although titles mix CJK and ASCII.
    assert len({width(row[: row.index("[")]) for row in root_rows}) == 1
    assert "children of trip" in out and "[hotel]" in out


def test_history_documents(store):
    assert answer("annotate", "--item", "visa", "--text", "流水已补", "--now", LATER, store=store)[0] == 0
    code, doc, _ = answer("history", store=store)
    assert [r["event_seq"] for r in doc["records"]] == [1, 2] and doc["last_event_seq"] == 2
    code, doc, _ = answer("history", "--since", "1", store=store)
    assert [r["type"] for r in doc["records"]] == ["annotation"]
    code, doc, _ = answer("history", "--limit", "1", "--item", "visa", store=store)
    assert [r["event_seq"] for r in doc["records"]] == [1]
    code, doc, _ = answer("history", "--batch", "b1", store=store)
    assert code == 0 and doc["found"] is True and doc["record"]["batch_id"] == "b1"
    code, doc, _ = answer("history", "--batch", "b9", store=store)
    assert code == 0 and doc == {"found": False, "record": None}
    assert answer("history", "--batch", "b1", "--limit", "1", store=store)[0] == 2
    code, out, _ = foldctl("history", "--format", "text", store=store)
    assert "#1 commit b1 by agent" in out and "created visa" in out and "#2 annotation ann-1 on visa" in out


def test_commit_from_file_with_flags(store, tmp_path):
    body = tmp_path / "batch.json"
    body.write_text(json.dumps({"declarations": [
        {"id": "reading", "relation": "supersedes:reading", "title": "Read it", "weight": "normal",
         "kind": "fyi"}]}))
    args = ("commit", "--actor", "agent", "--now", LATER, "--batch-id", "b2")
    code, doc, _ = answer(*args, "--base-revision", "0", str(body), store=store)
    assert code == 1 and doc["errors"][0]["code"] == "stale_revision" and doc["batch_id"] == "b2"
    code, doc, _ = answer(*args, "--base-revision", "1", str(body), store=store)
    assert code == 0 and doc["revision"] == 2 and doc["changes"][0]["op"] == "updated"
    code, doc, _ = answer(*args, "--base-revision", "1", str(body), store=store)
    assert code == 0 and doc["replayed"] is True
    body.write_text(json.dumps({"batch_id": "b3", "base_revision": 2, "declarations": []}))
    code, doc, err = answer("commit", "--actor", "agent", "--base-revision", "1", str(body), store=store)
    assert code == 2 and "--base-revision" in err


def test_commit_text_format(store):
    body = json.dumps({"batch_id": "b1", "declarations": [VISA, READING, TRIP]})
    code, out, _ = foldctl("commit", "--actor", "agent", "--format", "text", stdin=body, store=store)
    assert code == 0 and "replayed" in out and "created visa share 24" in out


def test_annotate(store):
    code, doc, _ = answer("annotate", "--item", "visa", "--text=-看这个", "--now", LATER, store=store)
    assert code == 0 and doc == {"ok": True, "annotation": "ann-1", "event_seq": 2}
    code, doc, _ = answer("annotate", "--item", "ghost", "--text", "x", store=store)
    assert code == 1 and doc["errors"][0]["code"] == "item_not_found"
    code, doc, _ = answer("annotate", "--item", "visa", "--text", "", store=store)
    assert code == 1 and doc["errors"][0]["code"] == "invalid_field"
    assert answer("annotate", "--item", "visa", "--text", "x", "--now", "2026-10-09T08:00", store=store)[0] == 2


def test_verify(store):
    code, doc, _ = answer("verify", store=store)
    assert code == 0 and doc["ok"] is True and doc["records"] == 1


# -- where the store is ------------------------------------------------------------------------


def test_store_location_precedence(tmp_path):
    def created_at(**kwargs):
        code, doc, _ = answer("init", **kwargs)
        assert code == 0, doc
        return doc["store"]

    xdg = tmp_path / "xdg"
    # (cwd: the repository's own top-level plugins.toml, an example, would otherwise be the one in use)
    assert created_at(env={"XDG_DATA_HOME": str(xdg)}, cwd=tmp_path) == str(xdg / "fold" / "store")
    config_dir = tmp_path / "conf"
    config_dir.mkdir()
    (config_dir / "plugins.toml").write_text('[store]\npath = "from-toml"\n')
    env = {"XDG_DATA_HOME": str(xdg)}
    assert created_at(env=env, cwd=config_dir) == str(config_dir / "from-toml")
    assert created_at(env={**env, "FOLD_CONFIG": str(config_dir / "plugins.toml")}, cwd=tmp_path) == str(
        config_dir / "from-toml")
    assert created_at(env={**env, "FOLD_STORE": str(tmp_path / "env")}, cwd=config_dir) == str(tmp_path / "env")
    flag = str(tmp_path / "flag")
    assert created_at(env={**env, "FOLD_STORE": str(tmp_path / "env")}, store=flag, cwd=config_dir) == flag
    code, doc, _ = answer("init", "--store", str(tmp_path / "after"), env=env)  # after the command name too
    assert doc["store"] == str(tmp_path / "after")
    other = tmp_path / "other.toml"
    other.write_text('[store]\npath = "from-flag-toml"\n')
    for position in ("before", "after"):  # --config beats $FOLD_CONFIG and ./plugins.toml
        args = ["--config", str(other), "init"] if position == "before" else ["init", "--config", str(other)]
        code, doc, _ = answer(*args, env={**env, "FOLD_CONFIG": str(config_dir / "plugins.toml")}, cwd=config_dir)
        assert code == 0 and doc["store"] == str(tmp_path / "from-flag-toml")
    (xdg / "fold").mkdir(parents=True, exist_ok=True)
    (xdg / "fold" / "plugins.toml").write_text('[store]\npath = "from-xdg-config"\n')
    assert created_at(env={"XDG_CONFIG_HOME": str(xdg)}, cwd=tmp_path) == str(xdg / "fold" / "from-xdg-config")


def test_bad_config_is_a_usage_error(tmp_path):
    (tmp_path / "plugins.toml").write_text("[store\npath = 1")
    code, doc, err = answer("state", cwd=tmp_path, env={"XDG_DATA_HOME": str(tmp_path)})
    assert code == 2 and "plugins.toml" in err
    code, doc, err = answer("state", env={"FOLD_CONFIG": str(tmp_path / "none.toml")})
    assert code == 2 and "FOLD_CONFIG" in err


# -- bad input: the documented exit code, a clear message, nothing written ---------------------


BAD_BATCHES = {
    "not json": b'{"batch_id": "x", ',
    "array": b"[1, 2]",
    "null": b"null",
    "nan": b'{"batch_id": "x", "base_revision": NaN}',
    "huge number": b'{"batch_id": "x", "base_revision": 1e999}',
    "deep": b"[" * 100_000,
    "not utf-8": b'{"batch_id": "\xff"}',
    "empty": b"",
    "too large": b" " * (50 * 1024 * 1024),
}


@pytest.mark.parametrize("name", BAD_BATCHES)
def test_bad_batch_is_an_invalid_json_rejection(store, name):
    before = log_bytes(store)
    code, doc, err = answer("commit", "--actor", "agent", "--batch-id", "bad", stdin=BAD_BATCHES[name], store=store)
    assert code == 1 and doc["ok"] is False and doc["revision"] == 1 and doc["batch_id"] == "bad"
    assert [e["code"] for e in doc["errors"]] == ["invalid_json"]
    assert doc["errors"][0]["message"]
    assert "rejected" in err
    assert log_bytes(store) == before


def test_rejected_first_commit_creates_no_store(tmp_path):
    path = tmp_path / "store"
    code, doc, _ = answer("commit", "--actor", "agent", stdin="[]", store=path)
    assert code == 1 and doc["revision"] == 0
    assert not (path / "meta.json").exists() and log_bytes(path) is None
    assert answer("state", store=path)[0] == 3


@pytest.mark.parametrize("args", [
    ("commit", "--actor", "agent", "--bogus"),
    ("commit",),  # --actor is required
    ("frobnicate",),
    (),
    ("state", "--now", "tomorrow"),
    ("state", "--now", "2026-10-09T08:00:00"),  # naive: no offset
    ("state", "--depth", "-1"),
    ("state", "--format", "xml"),
    ("history", "--since", "x"),
    ("commit", "--actor", "agent", "/no/such/file.json"),
])
def test_usage_errors(store, args):
    before = log_bytes(store)
    code, doc, err = answer(*args, store=store)
    assert code == 2 and doc["ok"] is False and doc["errors"][0]["code"] == "usage"
    assert err.strip() and len(err.splitlines()) <= 3
    assert log_bytes(store) == before


def test_text_mode_errors_go_to_stderr_only(tmp_path):
    code, out, err = foldctl("state", "--format", "text", store=tmp_path / "none")
    assert code == 3 and out == "" and "no store" in err
