"""How ``foldctl backup`` copies host.db and makes the copy durable, with real SQLite and real processes.

* The usual way: host.db's file itself, copied in the kernel. Once the
  pinned view has pulled the WAL into the file, the file must not change
  while the daemon keeps committing (and checkpointing), and a copy of it
  holds exactly the pinned rows.
* When a reader on an older snapshot holds the checkpoint back, the copy
  goes through SQLite's backup API from the same pinned view.
* A backup that answered is on disk: under the syscall spy, what a power cut
  right after it would leave holds the manifest and every file with the
  manifest's digest.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

from fold_core.store.file import file_store
from fold_host.hostdb import open_host_db
from fold_host.hostdb.copy import PinnedView
from tests.support.host_workspace import Workspace

HERE = Path(__file__).resolve().parent
NOW = "2026-12-01T08:00:00+08:00"


def host_db(tmp_path: Path) -> tuple[str, sqlite3.Connection]:
    """A migrated host.db and a writer connection standing in for the daemon's."""
    open_host_db(tmp_path).close()
    path = str(tmp_path / "host.db")
    writer = sqlite3.connect(path, isolation_level=None)
    writer.execute("PRAGMA synchronous=OFF")  # speed only: nothing here is about the writer's durability
    return path, writer


def write(writer: sqlite3.Connection, start: int, count: int) -> None:
    writer.execute("BEGIN IMMEDIATE")
    writer.executemany("INSERT INTO host_meta (key, value) VALUES (?, ?)",
                       [(f"row-{n}", json.dumps("x" * 900)) for n in range(start, start + count)])
    writer.execute("COMMIT")


def rows(path: str) -> int:
    with sqlite3.connect(path) as connection:
        assert connection.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        return connection.execute("SELECT count(*) FROM host_meta WHERE key LIKE 'row-%'").fetchone()[0]


def test_the_database_file_is_the_pinned_view_while_the_daemon_commits_and_checkpoints(tmp_path):
    path, writer = host_db(tmp_path)
    for start in range(0, 600, 100):
        write(writer, start, 100)  # committed to the WAL, not yet all in the file
    view = PinnedView(path)
    view.pin()
    assert view.whole_file
    descriptor, length = view.database_file()
    pinned = os.pread(descriptor, length, 0)
    for start in range(600, 3000, 200):
        write(writer, start, 200)  # well past the automatic checkpoint's 1000 pages
    writer.execute("PRAGMA wal_checkpoint(PASSIVE)")
    assert os.pread(descriptor, length + 1, 0) == pinned  # nothing written under the pinned reader
    (tmp_path / "copy.db").write_bytes(pinned)
    assert rows(str(tmp_path / "copy.db")) == 600
    view.close()
    writer.execute("PRAGMA wal_checkpoint(PASSIVE)")
    with open(path, "rb") as file:
        assert file.read() != pinned  # without the pin the same checkpoint does write into the file
    assert rows(path) == 3000


def test_an_older_reader_sends_the_copy_through_sqlite_from_the_same_view(tmp_path):
    path, writer = host_db(tmp_path)
    write(writer, 0, 100)
    older = sqlite3.connect(path, isolation_level=None)
    older.execute("BEGIN")
    assert older.execute("SELECT count(*) FROM host_meta WHERE key LIKE 'row-%'").fetchone()[0] == 100
    write(writer, 100, 100)  # beyond the older reader's snapshot: no checkpoint can move it into the file
    view = PinnedView(path)
    view.pin()
    assert not view.whole_file
    write(writer, 200, 100)
    view.copy_to(str(tmp_path / "copy.db"))
    view.close()
    older.execute("ROLLBACK")
    assert rows(str(tmp_path / "copy.db")) == 200


def test_a_backup_that_answered_is_on_disk_whole(tmp_path):
    ws = Workspace(tmp_path, script=["track"])
    for n in range(3):
        ws.feed("mail", {"native": str(n), "title": f"mail {n}", "text": f"body {n}"})
        ws.tick(NOW)
    store = file_store(ws.store)
    store.state()
    store.recorder.close()  # a snapshot with its parts, as a store that has run a while has
    kept = {path.name for path in Path(ws.store).iterdir() if not path.name.endswith(("lock", "-wal", "-shm"))}
    assert "snapshot.json" in kept and "host.db" in kept
    out = tmp_path / "backup"
    out.mkdir()
    journal = tmp_path / "journal.json"
    done = subprocess.run([sys.executable, str(HERE / "durability_spy.py"), str(journal), str(out), "--",
                           *ws.args("backup", "--out", str(out), "--format", "json")],
                          cwd=ws.root, env=ws.env(SPY_MODULE="fold_host"), capture_output=True, timeout=120)
    assert done.returncode == 0, done.stderr.decode()
    manifest = json.loads(done.stdout)
    image = json.loads(journal.read_text())["image"]  # what a power cut right after the answer leaves
    assert "manifest.json" in image and json.loads(base64.b64decode(image["manifest.json"]))["files"] \
        == manifest["files"]
    assert set(manifest["files"]) == kept  # the snapshot and its parts too
    for name, digest in manifest["files"].items():
        assert name in image, f"{name} is not in the backup directory after a power cut"
        assert hashlib.sha256(base64.b64decode(image[name])).hexdigest() == digest, f"{name} is not on disk whole"
