"""A long-lived recorder's shortcuts never answer from a stale picture (contract §6.2).

A ``FileRecorder`` kept by a daemon keeps the lock file and the log open and
``meta.json`` in memory between sessions, and reads neither the log nor
``meta.json`` again while their identity (inode, size, times) is unchanged.
Each shortcut here meets the change it must notice — the store removed and
created again at the same path, the log replaced by another of the same
size, a thread or a forked child using the same recorder — and the answer
must be the one a fresh recorder gives.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import threading

import pytest

from fold_core.errors import StoreUnavailable
from fold_core.store.base import Store
from fold_core.store.file import FileRecorder
from fold_core.store.meta import create_store
from fold_core.store.verify import verify_store

NOW = "2026-10-09T08:00:00+08:00"


def _item(batch_id: str, title: str = "长期") -> dict:
    return {"batch_id": batch_id, "declarations": [{"id": batch_id, "title": title, "weight": "trace", "kind": "fyi"}]}


def _ids(store: Store) -> list[str]:
    return sorted(view["id"] for view in store.state_document(now=NOW).document["root"]["items"])


def test_a_store_created_again_at_the_same_path_is_read_afresh(tmp_path):
    path = tmp_path / "store"
    create_store(str(path), 64)
    daemon = Store(FileRecorder(path))
    assert daemon.commit(_item("old"), actor="agent", now=NOW).exit_code == 0
    shutil.rmtree(path)
    create_store(str(path), 32)
    document = daemon.state_document(now=NOW).document
    assert document["budget"] == 32 and document["event_seq"] == 0 and document["root"]["items"] == []
    assert daemon.commit(_item("new"), actor="agent", now=NOW).exit_code == 0
    assert _ids(Store(FileRecorder(path))) == ["new"]


def test_records_another_process_appended_are_read(tmp_path):
    """The snapshot stays as it is (no refresh is due): only the log's size tells."""
    path = tmp_path / "store"
    setup = FileRecorder(path)
    Store(setup).commit(_item("a"), actor="agent", now=NOW)
    setup.close()
    daemon, other = Store(FileRecorder(path)), Store(FileRecorder(path))
    assert _ids(daemon) == ["a"]
    snapshot = os.stat(path / "snapshot.json")
    assert other.commit(_item("b"), actor="agent", now=NOW).exit_code == 0
    assert os.stat(path / "snapshot.json").st_mtime_ns == snapshot.st_mtime_ns
    assert _ids(daemon) == ["a", "b"]
    assert daemon.commit(_item("b"), actor="agent", now=NOW).document["replayed"] is True


def test_a_log_replaced_by_another_of_the_same_size_is_read_afresh(tmp_path, monkeypatch):
    """Same size, no snapshot before or after (every snapshot write fails): only the log's
    identity tells that it is another file."""
    monkeypatch.setenv("FOLD_INJECT", "enospc_snapshot")
    first, second = tmp_path / "first", tmp_path / "second"
    for path, title in ((first, "甲方案"), (second, "乙方案")):
        Store(FileRecorder(path)).commit(_item("x", title), actor="agent", now=NOW)
    assert os.path.getsize(first / "events.jsonl") == os.path.getsize(second / "events.jsonl")
    daemon = Store(FileRecorder(first))
    assert daemon.state_document(now=NOW).document["root"]["items"][0]["title"] == "甲方案"
    shutil.copyfile(second / "events.jsonl", first / "events.jsonl.new")
    os.replace(first / "events.jsonl.new", first / "events.jsonl")
    assert not [name for name in os.listdir(first) if name.startswith("snapshot")]
    assert daemon.state_document(now=NOW).document["root"]["items"][0]["title"] == "乙方案"


def test_appends_follow_the_log_at_the_path(tmp_path):
    """The log is replaced by a copy between two commits: the next record goes into the copy."""
    path = tmp_path / "store"
    daemon = Store(FileRecorder(path))
    assert daemon.commit(_item("a"), actor="agent", now=NOW).exit_code == 0
    shutil.copyfile(path / "events.jsonl", path / "copy")
    os.replace(path / "copy", path / "events.jsonl")
    assert daemon.commit(_item("b"), actor="agent", now=NOW).exit_code == 0
    assert _ids(Store(FileRecorder(path))) == ["a", "b"]
    assert verify_store(str(path))["records"] == 2


def test_the_lock_of_a_store_created_again_is_the_one_taken(tmp_path, monkeypatch):
    """Holding the new lock file keeps the daemon out; the file it once opened is no lock any more."""
    monkeypatch.setenv("FOLD_LOCK_TIMEOUT", "0.2")
    path = tmp_path / "store"
    daemon = Store(FileRecorder(path))
    assert daemon.commit(_item("a"), actor="agent", now=NOW).exit_code == 0
    shutil.rmtree(path)
    create_store(str(path), 64)
    fd = os.open(path / "lock", os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        with pytest.raises(StoreUnavailable, match="busy"):
            daemon.commit(_item("b"), actor="agent", now=NOW)
    finally:
        os.close(fd)
    assert daemon.commit(_item("b"), actor="agent", now=NOW).exit_code == 0
    assert _ids(Store(FileRecorder(path))) == ["b"]


def test_threads_sharing_a_recorder_take_turns(tmp_path):
    path = tmp_path / "store"
    shared = Store(FileRecorder(path))
    answers: list[int] = []

    def commit_many(prefix: str) -> None:
        for n in range(25):
            answers.append(shared.commit(_item(f"{prefix}{n}"), actor="agent", now=NOW).exit_code)

    threads = [threading.Thread(target=commit_many, args=(prefix,)) for prefix in ("t", "u")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert answers == [0] * 50
    report = verify_store(str(path))
    assert report["ok"] and report["records"] == 50
    assert len(_ids(Store(FileRecorder(path)))) == 50


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_does_not_share_its_parents_lock(tmp_path, monkeypatch):
    """A child forked from a recorder that holds the lock file open takes the lock on its own open
    file: while the child is inside a write session, the parent must wait like anyone else."""
    monkeypatch.setenv("FOLD_LOCK_TIMEOUT", "0.2")
    path = tmp_path / "store"
    recorder = FileRecorder(path)
    store = Store(recorder)
    assert store.commit(_item("a"), actor="agent", now=NOW).exit_code == 0
    inside_r, inside_w = os.pipe()
    done_r, done_w = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - the child process
        try:
            os.close(inside_r)
            os.close(done_w)
            with recorder.session(write=True):
                os.write(inside_w, b"in")
                os.read(done_r, 1)
        finally:
            os._exit(0)
    os.close(inside_w)
    os.close(done_r)
    try:
        assert os.read(inside_r, 2) == b"in"
        with pytest.raises(StoreUnavailable, match="busy"):
            store.commit(_item("b"), actor="agent", now=NOW)
    finally:
        os.write(done_w, b"x")
        os.close(done_w)
        os.close(inside_r)
        os.waitpid(child, 0)
    assert store.commit(_item("b"), actor="agent", now=NOW).exit_code == 0
    assert _ids(Store(FileRecorder(path))) == ["a", "b"]


def test_a_temporary_snapshot_left_by_another_process_goes_at_the_next_refresh(tmp_path, monkeypatch):
    path = tmp_path / "store"
    daemon = Store(FileRecorder(path))
    assert daemon.commit(_item("a"), actor="agent", now=NOW).exit_code == 0
    left = path / ".snapshot.json.tmp-999999"
    left.write_bytes(b'{"format": "fold-snap')
    monkeypatch.setenv("FOLD_SNAPSHOT_EVERY", "1")
    assert daemon.commit(_item("b"), actor="agent", now=NOW).exit_code == 0
    assert not left.exists()
    head = json.loads((path / "snapshot.json").read_bytes())
    assert head["last_event_seq"] == 2
