"""The durable file store: write protocol, recovery, faults (contract §6).

Real ``python -m fold_core`` subprocesses on temporary stores: what is the
file store's own (the log's lines, torn tails, the snapshot, injected I/O
errors, the lock file, permissions). What every recorder shares — receipts,
replays, conflicts, a process killed at every §6.3 fault point, concurrent
writers — is the protocol test class of ``test_store_protocol``, run against
the in-memory, file and PostgreSQL recorders.
"""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys

import pytest

from fold_core.store.file import FileRecorder, file_store

NOW = "2026-10-09T08:00:00+08:00"
LATER = "2026-10-10T08:00:00+08:00"


def run(store, *args, stdin=None, env=None):
    """``foldctl --store STORE ARGS``; returns (exit code, parsed stdout or None, stderr)."""
    environment = {k: v for k, v in os.environ.items() if not k.startswith("FOLD_")}
    environment.update(env or {})
    done = subprocess.run(
        [sys.executable, "-m", "fold_core", "--store", str(store), *args],
        input=stdin.encode() if isinstance(stdin, str) else stdin,
        capture_output=True, env=environment, timeout=60,
    )
    assert b"Traceback" not in done.stderr, done.stderr.decode()
    out = done.stdout.decode()
    return done.returncode, (json.loads(out) if out.strip() else None), done.stderr.decode()


def batch(batch_id, *ids, weight="normal"):
    return {"batch_id": batch_id, "declarations": [
        {"id": item, "title": f"标题 {item}", "weight": weight, "kind": "fyi"} for item in ids]}


def commit(store, body, env=None, **flags):
    args = ["commit", "--actor", "agent", "--now", flags.pop("now", NOW)]
    for name, value in flags.items():
        args += [f"--{name.replace('_', '-')}", str(value)]
    return run(store, *args, stdin=json.dumps(body), env=env)


def log_lines(store):
    with open(os.path.join(store, "events.jsonl"), "rb") as file:
        return file.read().splitlines(keepends=True)


def state_doc(store, env=None):
    code, doc, err = run(store, "state", "--now", LATER, "--not-active", "all", env=env)
    assert code == 0, (doc, err)
    return doc


@pytest.fixture
def store(tmp_path):
    path = tmp_path / "store"
    assert run(path, "init")[0] == 0
    return path


# -- the write protocol on disk ----------------------------------------------------------


def test_record_line_is_the_kernel_record(store):
    code, receipt, _ = commit(store, batch("b1", "visa"))
    assert code == 0 and receipt["replayed"] is False
    [line] = log_lines(store)
    record = json.loads(line)
    assert line == json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"
    assert record["event_seq"] == 1 and record["receipt"] == receipt
    assert "标题" in line.decode()  # ensure_ascii=False


def test_replay_returns_original_receipt_and_keeps_log(store):
    _, first, _ = commit(store, batch("b1", "a"))
    before = log_lines(store)
    code, again, _ = commit(store, batch("b1", "a"), now=LATER)
    assert code == 0 and again == {**first, "replayed": True} and again["at"] == NOW
    assert log_lines(store) == before


def test_first_commit_creates_the_store(tmp_path):
    path = tmp_path / "new" / "store"
    code, receipt, _ = commit(path, batch("b1", "a"))
    assert code == 0 and receipt["event_seq"] == 1
    assert json.load(open(path / "meta.json"))["budget"] == 64


def test_snapshot_refreshed_only_when_the_tail_reaches_the_bound(store):
    env = {"FOLD_SNAPSHOT_EVERY": "3"}
    for n in range(1, 6):
        assert commit(store, batch(f"b{n}", f"i{n}"), env=env)[0] == 0
    # created by the 2nd commit's recovery (no snapshot yet), refreshed 3 records later
    assert snapshot_seq(store) == 5
    for n in range(6, 8):
        assert commit(store, batch(f"b{n}", f"i{n}"), env=env)[0] == 0
    assert snapshot_seq(store) == 5
    assert state_doc(store)["event_seq"] == 7


def test_snapshot_failure_is_logged_not_reported(store):
    env = {"FOLD_SNAPSHOT_EVERY": "1", "FOLD_INJECT": "enospc_snapshot"}
    code, receipt, err = commit(store, batch("b1", "a"), env=env)
    assert code == 0 and receipt["ok"] is True
    assert "snapshot.json not refreshed" in err
    assert not (store / "snapshot.json").exists()
    assert [n for n in os.listdir(store) if n.startswith(".snapshot")] == []
    assert state_doc(store)["event_seq"] == 1


# -- recovery --------------------------------------------------------------------------------


def populate(store, count=3, every=None):
    """Commit ``count`` batches in this process (the same code path as the CLI, faster)."""
    with pytest.MonkeyPatch.context() as patch:
        if every is not None:
            patch.setenv("FOLD_SNAPSHOT_EVERY", str(every))
        target = file_store(store)
        for n in range(1, count + 1):
            assert target.commit(batch(f"b{n}", f"i{n}"), actor="agent", now=NOW).exit_code == 0


def snapshot_seq(store):
    head = open(store / "snapshot.json", "rb").readline()
    return json.loads(head[:-2] + b"}")["last_event_seq"]


def test_torn_fragment_is_ignored_by_reads_and_truncated_by_the_next_write(store):
    populate(store, 2)
    with open(store / "events.jsonl", "ab") as log:
        log.write(b'{"v": 1, "event_seq": 3, "type": "comm')
    assert state_doc(store)["event_seq"] == 2
    assert run(store, "verify")[1]["torn_tail"]["bytes"] == 38
    code, receipt, _ = commit(store, batch("b3", "i3"))
    assert code == 0 and receipt["event_seq"] == 3
    assert [json.loads(line)["event_seq"] for line in log_lines(store)] == [1, 2, 3]
    assert run(store, "verify")[0] == 0


def test_nul_tail_is_moved_aside(store):
    populate(store, 2)
    with open(store / "events.jsonl", "ab") as log:
        log.write(b"\0" * 100 + b"\n")
    assert state_doc(store)["event_seq"] == 2
    assert commit(store, batch("b3", "i3"))[0] == 0
    assert open(store / "events.jsonl.torn-3", "rb").read() == b"\0" * 100 + b"\n"
    assert len(log_lines(store)) == 3 and run(store, "verify")[0] == 0


@pytest.mark.parametrize("garbage", [b"not json\n", b'{"v": 1, "event_seq": 7}\n'])
def test_bad_last_line_without_nul_is_corrupt(store, garbage):
    populate(store, 2)
    with open(store / "events.jsonl", "ab") as log:
        log.write(garbage)
    code, doc, err = commit(store, batch("b3", "i3"))
    assert code == 4 and doc["errors"][0] == {**doc["errors"][0], "code": "store_corrupt", "line": 3}
    assert "line 3" in err
    assert run(store, "state")[0] == 4
    assert run(store, "history", "--batch", "b1")[0] == 4


def test_corrupt_middle_line(store):
    populate(store, 4, every=1)
    lines = log_lines(store)
    lines[1] = b"#### garbage ####\n"
    (store / "events.jsonl").write_bytes(b"".join(lines))
    code, doc, _ = run(store, "verify")
    assert code == 4 and doc["errors"][0]["line"] == 2
    # Ordinary reads replay only the tail after the snapshot; without it, the bad line is found.
    os.remove(store / "snapshot.json")
    code, doc, _ = run(store, "state")
    assert code == 4 and doc["errors"][0]["line"] == 2
    code, doc, _ = commit(store, batch("b9", "i9"))
    assert code == 4 and b"#### garbage" in log_lines(store)[1]


def test_wrong_event_seq_is_corrupt(store):
    populate(store, 2)
    lines = log_lines(store)
    record = json.loads(lines[1])
    record["event_seq"] = 5
    lines[1] = json.dumps(record).encode() + b"\n"
    (store / "events.jsonl").write_bytes(b"".join(lines))
    (store / "snapshot.json").unlink(missing_ok=True)
    code, doc, _ = run(store, "state")
    assert code == 4 and doc["errors"][0]["line"] == 2


def test_deleted_snapshot_is_rebuilt(store):
    populate(store, 3)
    before = state_doc(store)
    os.remove(store / "snapshot.json")
    assert state_doc(store) == before
    assert (store / "snapshot.json").exists()
    assert run(store, "verify")[1]["snapshot"]["last_event_seq"] == 3


@pytest.mark.parametrize("damage", ["ahead", "garbage", "other_budget"])
def test_unusable_snapshot_is_rebuilt(store, damage):
    populate(store, 4, every=1)
    snapshot = store / "snapshot.json"
    if damage == "ahead":  # the log lost its last records: the cache is ahead of the truth
        (store / "events.jsonl").write_bytes(b"".join(log_lines(store)[:2]))
    elif damage == "garbage":
        snapshot.write_bytes(b'{"format": "fold-snapshot", "versi')
    else:
        snapshot.write_bytes(snapshot.read_bytes().replace(b'"budget":64', b'"budget":65'))
    damaged = snapshot.read_bytes()
    doc = state_doc(store)
    assert doc["event_seq"] == (2 if damage == "ahead" else 4)
    assert doc["revision"] == doc["event_seq"]
    assert snapshot.read_bytes() == damaged  # a reader never destroys the evidence
    assert run(store, "verify")[0] == 4
    assert commit(store, batch("b1", "i1"))[1]["replayed"] is True
    assert (store / "snapshot.json.bad").read_bytes() == damaged  # the writer keeps it aside
    assert run(store, "verify")[0] == 0


def test_verify_reports_a_snapshot_that_disagrees_with_the_log(store):
    populate(store, 2, every=1)
    snapshot = store / "snapshot.json"
    snapshot.write_bytes(snapshot.read_bytes().replace("标题 i1".encode(), b"forged"))  # UTF-8
    code, doc, err = run(store, "verify")
    assert code == 4 and "snapshot.json" in doc["errors"][0]["message"]


# -- injected I/O errors ----------------------------------------------------------------------


def test_enospc_on_append_is_unavailable_and_leaves_nothing(store):
    populate(store, 1)
    before = (store / "events.jsonl").read_bytes()
    code, doc, err = commit(store, batch("b2", "x"), env={"FOLD_INJECT": "enospc_append"})
    assert code == 3 and doc == {"ok": False, "errors": [doc["errors"][0]]}
    assert doc["errors"][0]["code"] == "store_unavailable"
    assert "retry with the same batch_id" in err
    assert (store / "events.jsonl").read_bytes() == before
    code, receipt, _ = commit(store, batch("b2", "x"))
    assert code == 0 and receipt["replayed"] is False and receipt["event_seq"] == 2


def test_eio_on_fsync_is_unavailable_and_the_retry_is_idempotent(store):
    populate(store, 1)
    code, doc, _ = commit(store, batch("b2", "x"), env={"FOLD_INJECT": "eio_fsync"})
    assert code == 3 and doc["errors"][0]["code"] == "store_unavailable"
    assert all(line.endswith(b"\n") for line in log_lines(store))  # nothing partial
    code, receipt, _ = commit(store, batch("b2", "x"))
    assert code == 0 and receipt["event_seq"] == 2
    assert len(log_lines(store)) == 2 and run(store, "verify")[0] == 0


# -- locking, permissions, missing stores --------------------------------------------------------


def test_lock_timeout_is_unavailable_never_not_found(store):
    populate(store, 1)
    fd = os.open(store / "lock", os.O_RDWR)
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        env = {"FOLD_LOCK_TIMEOUT": "0.2"}
        code, doc, err = run(store, "history", "--batch", "b1", env=env)
        assert code == 3 and doc["errors"][0]["code"] == "store_unavailable" and "busy" in err
        assert commit(store, batch("b2", "x"), env=env)[0] == 3
    finally:
        os.close(fd)
    assert run(store, "history", "--batch", "b2")[1]["found"] is False


def test_missing_store_reads_are_unavailable(tmp_path):
    for args in (["state"], ["history"], ["history", "--batch", "b1"], ["verify"]):
        code, doc, err = run(tmp_path / "nowhere", *args)
        assert code == 3 and doc["errors"][0]["code"] == "store_unavailable" and "no store" in err
    assert not (tmp_path / "nowhere").exists()


@pytest.fixture
def readonly_store(tmp_path):
    """A store whose directory and files may be read but not written.

    Root ignores permission bits, so as root the files and the directory are
    made immutable (``chattr +i``) instead of ``chmod``-ed.
    """
    path = tmp_path / "store"
    populate(path, 1)
    names = [str(path / name) for name in os.listdir(path)] + [str(path)]
    if os.geteuid() == 0:
        if subprocess.run(["chattr", "+i", *names], capture_output=True).returncode != 0:
            pytest.skip("running as root and chattr +i is not available here")
        undo = ["chattr", "-i", *names]
    else:
        for name in names:
            os.chmod(name, 0o555 if name == str(path) else 0o444)
        undo = ["chmod", "-R", "u+w", str(path)]
    yield path
    subprocess.run(undo, check=True)


def test_readonly_store(readonly_store):
    path = readonly_store
    before = sorted(os.listdir(path)), open(os.path.join(path, "events.jsonl"), "rb").read()
    code, doc, err = run(path, "commit", "--actor", "agent", "--now", NOW,
                         stdin=json.dumps(batch("b2", "x")))
    assert code == 3 and doc["errors"][0]["code"] == "store_unavailable", err
    assert "not permitted" in err or "Permission denied" in err
    code, doc, err = run(path, "annotate", "--item", "i1", "--text", "t")
    assert code == 3
    assert (sorted(os.listdir(path)), open(os.path.join(path, "events.jsonl"), "rb").read()) == before
    code, doc, _ = run(path, "state", "--now", LATER)
    assert code == 0 and doc["event_seq"] == 1
    code, doc, _ = run(os.path.join(path, "sub"), "commit", "--actor", "agent",
                       stdin=json.dumps(batch("b2", "x")))
    assert code == 3


# -- in-process recorder details ------------------------------------------------------------------


def test_close_refreshes_the_snapshot(tmp_path):
    path = tmp_path / "store"
    recorder = FileRecorder(path)
    from fold_core.store.base import Store

    store = Store(recorder)
    for n in range(1, 4):
        store.commit(batch(f"b{n}", f"i{n}"), actor="agent", now=NOW)
    recorder.close()
    assert snapshot_seq(path) == 3
    assert run(path, "verify")[0] == 0
