"""A store whose snapshot is format 2 (written before the flat-cost store, commit eff7271) opens, reads as before, and is upgraded.

``tests/fixtures/store-v2`` was written by the code of commit eff7271
(``tests/fixtures/make_v2_store.py``): an archive, annotations on active,
withdrawn and merged items, a restore, and three records after the snapshot.
``store-v2.expected.json`` holds the documents that code answered.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from fold_core.store.base import Store
from fold_core.store.file import FileRecorder
from fold_core.store.verify import verify_store

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def _with_decisions(value: object) -> object:
    """The v1.3 state document shows ``decision`` on every item view; the old store's items have none."""
    if isinstance(value, dict):
        out = {key: _with_decisions(item) for key, item in value.items()}
        if "since_seen" in value and "annotations" in value:  # an ItemView
            out["decision"] = None
        return out
    if isinstance(value, list):
        return [_with_decisions(item) for item in value]
    return value


EXPECTED = _with_decisions(json.loads((FIXTURES / "store-v2.expected.json").read_text(encoding="utf-8")))
NOW = EXPECTED["now"]


@pytest.fixture
def old_store(tmp_path):
    path = tmp_path / "store"
    shutil.copytree(FIXTURES / "store-v2", path)
    return path


def _version(path) -> int:
    data = (path / "snapshot.json").read_bytes()
    first = data.split(b"\n", 1)[0]
    return json.loads(first[:-1] + b"}")["version"] if first.endswith(b",") else json.loads(data)["version"]


def _documents(store: Store) -> dict:
    return {
        "state": store.state_document(now=NOW).document,
        "state_all": store.state_document(now=NOW, not_active=None).document,
        "history_p4_m": store.history(item="p4-m").document,
        "batch_merge_1": store.history(batch="merge-1").document,
    }


def _from_the_log(path, tmp_path) -> Store:
    """A store over a copy with no snapshot: everything replayed from the log."""
    copy = tmp_path / "from-log"
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(path, copy)
    for name in os.listdir(copy):
        if name.startswith("snapshot"):
            os.remove(copy / name)
    return Store(FileRecorder(copy))


def test_the_fixture_is_a_version_2_store():
    assert _version(FIXTURES / "store-v2") == 2
    assert len((FIXTURES / "store-v2" / "snapshot.json").read_bytes().splitlines()) == 3


def test_a_version_2_store_answers_as_the_code_that_wrote_it(old_store):
    reader = Store(FileRecorder(old_store))
    assert _documents(reader) == {key: value for key, value in EXPECTED.items() if key != "now"}
    assert _version(old_store) == 2, "a reader does not rewrite a readable snapshot"
    report = verify_store(str(old_store))
    assert report["ok"] and report["snapshot"] == {"last_event_seq": 14, "consistent": True}


def test_foldctl_state_on_a_version_2_store(old_store):
    done = subprocess.run([sys.executable, "-m", "fold_core", "state", "--store", str(old_store), "--now", NOW,
                           "--format", "json"], capture_output=True)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == EXPECTED["state"]


def test_the_next_writer_upgrades_it_to_version_3(old_store, tmp_path):
    writer = Store(FileRecorder(old_store))
    replayed = writer.commit({"batch_id": "merge-1", "declarations": [
        {"id": "p4-m", "relation": "merges:[p4-c01, p4-c02]", "title": "合并的子任务", "weight": "trace",
         "kind": "fyi"}]}, actor="agent", now=NOW)
    assert replayed.document["replayed"] is True, "an old batch is found through the old batch index"
    answer = writer.commit({"batch_id": "after-upgrade", "declarations": [
        {"id": "p2-c07", "relation": "supersedes:p2-c07", "weight": "trace", "kind": "fyi"},  # withdrawn parent
        {"id": "new-one", "title": "升级之后", "weight": "low", "kind": "fyi"}]}, actor="agent", now=NOW)
    assert answer.exit_code == 1 and answer.document["errors"][0]["code"] == "inactive_parent"
    answer = writer.commit({"batch_id": "after-upgrade", "declarations": [
        {"id": "new-one", "title": "升级之后", "weight": "low", "kind": "fyi"}],
        "acknowledges": ["ann-4", "ann-5", "ann-1"]}, actor="agent", now=NOW)
    assert answer.exit_code == 0, answer.document
    assert answer.document["already_acknowledged"] == ["ann-4", "ann-1"]
    assert _version(old_store) == 3
    head = json.loads((old_store / "snapshot.json").read_bytes())
    assert head["last_event_seq"] == 17 and head["item_total"] == 307 and len(writer.state().items) == 308
    assert verify_store(str(old_store))["ok"]
    expected = _documents(_from_the_log(old_store, tmp_path))
    assert _documents(Store(FileRecorder(old_store))) == expected
    assert _documents(writer) == expected
    assert writer.state() == _from_the_log(old_store, tmp_path).state()


def test_a_store_whose_upgrade_was_interrupted_stays_readable(old_store, tmp_path):
    env = {**os.environ, "FOLD_FAULT": "mid_snapshot"}
    done = subprocess.run([sys.executable, "-m", "fold_core", "commit", "--store", str(old_store), "--actor",
                           "agent", "--now", NOW, "--batch-id", "x1", "-"],
                          input=b'{"declarations": [{"id": "x1", "title": "x", "weight": "low", "kind": "fyi"}]}',
                          env=env, capture_output=True)
    assert done.returncode == 137, done.stderr
    assert _version(old_store) == 2
    expected = _documents(_from_the_log(old_store, tmp_path))
    assert _documents(Store(FileRecorder(old_store))) == expected
    writer = Store(FileRecorder(old_store))
    assert writer.commit({"batch_id": "x2", "declarations": []}, actor="agent", now=NOW).exit_code == 0
    assert _version(old_store) == 3 and verify_store(str(old_store))["ok"]
    parts = [name for name in os.listdir(old_store) if name.startswith("snapshot.") and name.count(".") == 2
             and not name.startswith("snapshot.json")]
    assert len(parts) == 3, f"the interrupted upgrade's parts are removed: {parts}"
