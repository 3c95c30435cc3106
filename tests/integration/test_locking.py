"""The store lock, deterministically (contract §6.2, §7 exit 3).

The test process itself holds ``<store>/lock`` with ``fcntl.flock`` — shared
or exclusive — for the whole life of a real ``foldctl`` subprocess, so the
outcome does not depend on timing: a writer must wait for the exclusive lock
and give up with exit 3 (``store_unavailable``, outcome unknown) after
``FOLD_LOCK_TIMEOUT`` seconds while anyone holds a shared lock; a reader must
do the same while someone holds the exclusive lock, and must not wait behind
another reader. Nothing here sleeps; the only clock check is a lower bound
(the process cannot give up before its timeout).
"""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import pytest

NOW = "2026-10-09T08:00:00+08:00"
TIMEOUT = 0.3  # FOLD_LOCK_TIMEOUT for the processes that must give up


def foldctl(store: Path, *args: str, stdin: str = "", timeout: float = TIMEOUT):
    environment = {k: v for k, v in os.environ.items() if not k.startswith("FOLD_")}
    environment["FOLD_LOCK_TIMEOUT"] = str(timeout)
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "fold_core", "--store", str(store), *args],
                          input=stdin.encode(), capture_output=True, env=environment, timeout=120)
    elapsed = time.monotonic() - started
    err = done.stderr.decode("utf-8", "replace")
    assert "Traceback" not in err, err
    out = done.stdout.decode()
    return done.returncode, (json.loads(out) if out.strip() else None), elapsed


@contextmanager
def held(store: Path, *, exclusive: bool):
    """This process holds the store lock (the contract's ``<store>/lock``) until the block ends."""
    fd = os.open(store / "lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, (fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH) | fcntl.LOCK_NB)
        yield
    finally:
        os.close(fd)


def batch(batch_id: str) -> str:
    return json.dumps({"batch_id": batch_id, "declarations": [
        {"id": batch_id, "title": "锁测试", "weight": "low", "kind": "fyi"}]})


@pytest.fixture
def store(tmp_path):
    path = tmp_path / "store"
    code, doc, _ = foldctl(path, "init", "--budget", "64")
    assert code == 0 and doc["created"] is True
    code, doc, _ = foldctl(path, "commit", "--actor", "agent", "--now", NOW, stdin=batch("first"))
    assert code == 0, doc
    return path


def assert_unavailable(code: int, doc: dict | None, elapsed: float) -> None:
    assert code == 3, doc
    assert doc["ok"] is False and [e["code"] for e in doc["errors"]] == ["store_unavailable"], doc
    assert elapsed >= TIMEOUT, f"gave up after {elapsed:.3f} s, before its {TIMEOUT} s timeout"


def test_a_commit_waits_for_a_shared_lock_and_gives_up_with_exit_3(store):
    with held(store, exclusive=False):
        code, doc, elapsed = foldctl(store, "commit", "--actor", "agent", "--now", NOW, stdin=batch("second"))
        assert_unavailable(code, doc, elapsed)
        # a reader shares the lock with the holder: it answers at once, and "second" was not written
        code, found, _ = foldctl(store, "history", "--batch", "second")
        assert code == 0 and found == {"found": False, "record": None}
    code, receipt, _ = foldctl(store, "commit", "--actor", "agent", "--now", NOW, stdin=batch("second"))
    assert code == 0 and receipt["event_seq"] == 2 and receipt["replayed"] is False


def test_an_annotation_waits_for_a_shared_lock_too(store):
    with held(store, exclusive=False):
        code, doc, elapsed = foldctl(store, "annotate", "--item", "first", "--text", "稍后", "--now", NOW)
        assert_unavailable(code, doc, elapsed)
    code, doc, _ = foldctl(store, "annotate", "--item", "first", "--text", "稍后", "--now", NOW)
    assert code == 0 and doc["annotation"] == "ann-1"


@pytest.mark.parametrize("read", [("state", "--now", NOW), ("history", "--batch", "first"), ("history",)])
def test_a_reader_waits_for_the_exclusive_lock_and_never_says_not_found(store, read):
    with held(store, exclusive=True):
        code, doc, elapsed = foldctl(store, *read)
        assert_unavailable(code, doc, elapsed)
    code, doc, _ = foldctl(store, *read)
    assert code == 0
    if read[:2] == ("history", "--batch"):
        assert doc["found"] is True

