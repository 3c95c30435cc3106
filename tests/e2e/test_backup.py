"""``foldctl backup`` while the daemon commits, and ``foldctl restore``, as real processes.

A daemon polls a source every second and commits a window for every new
observation, while this test saves annotations into the same store as fast as
it can; backups are taken in the middle of that. Each restored copy must
verify, hold exactly the state of the live store at the backup's event_seq,
and a host.db that never claims more than its store holds.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import sys
import threading
import time

from fold_core.kernel import state_document
from fold_core.state import replay
from fold_core.store.file import file_store
from fold_host.hostdb import open_host_db
from tests.e2e.test_host_process import mail
from tests.support.host_workspace import Workspace

NOW = "2026-12-01T08:00:00+08:00"


def foldctl(ws: Workspace, *args: str) -> tuple[int, dict, str]:
    done = subprocess.run([sys.executable, "-m", "fold_host", *ws.args(*args, "--format", "json")], cwd=ws.root,
                          env=ws.env(), capture_output=True, timeout=120)
    err = done.stderr.decode()
    assert "Traceback" not in err, err
    return done.returncode, json.loads(done.stdout or b"null"), err


def test_backups_taken_while_commits_are_in_flight_restore_to_the_state_at_their_event_seq(tmp_path):
    ws = Workspace(tmp_path, script=["track"])
    ws.config.write_text(ws.config.read_text().replace('every = "1m"', 'every = "1s"'))
    ws.feed("mail", mail(0))
    ws.tick(NOW)  # an item to annotate
    store = file_store(ws.store)
    item = store.state_document(now=NOW).document["root"]["items"][0]["id"]
    log = open(tmp_path / "run.log", "wb")
    daemon = subprocess.Popen([sys.executable, "-m", "fold_host", *ws.args("run")], cwd=ws.root, env=ws.env(),
                              stdout=log, stderr=subprocess.STDOUT)
    stop = threading.Event()

    def feed() -> None:
        # Each mail becomes a trace item (one share): at most 60 of them, so that a restored copy's catch-up
        # cycle still fits the 64-share budget however long a slow machine keeps this loop going.
        for n in range(1, 61):
            if stop.wait(0.15):
                return
            ws.feed("mail", mail(n))

    def annotate() -> None:
        writer = file_store(ws.store)
        while not stop.is_set():
            writer.annotate(item=item, text=f"note at {time.monotonic()}", author="user", now=NOW)

    threads = [threading.Thread(target=feed), threading.Thread(target=annotate)]
    for thread in threads:
        thread.start()
    backups = []
    try:
        time.sleep(2)
        deadline = time.monotonic() + 120
        # Backups until the daemon has committed windows between them (however slow the machine).
        while len(backups) < 3 or (not daemon_commits(store, after=backups[0]["event_seq"])
                                   and time.monotonic() < deadline):
            code, manifest, err = foldctl(ws, "backup", "--out", str(tmp_path / f"backup-{len(backups)}"))
            assert code == 0, err
            backups.append(manifest)
            time.sleep(0.5)
    finally:
        stop.set()
        for thread in threads:
            thread.join()
        daemon.terminate()
        assert daemon.wait(timeout=30) == 0
        log.close()
    sequences = [manifest["event_seq"] for manifest in backups]
    assert sequences == sorted(sequences) and sequences[0] > 1
    assert daemon_commits(store, after=sequences[0]) and sequences[-1] > sequences[0]  # commits in flight
    records = store.history().document["records"]
    budget = store.state().budget
    picked = sorted({0, len(backups) // 3, 2 * len(backups) // 3, len(backups) - 1})
    for number, manifest in [(index, backups[index]) for index in picked]:
        restored = tmp_path / f"restored-{number}"
        code, answer, err = foldctl(ws, "restore", str(tmp_path / f"backup-{number}"), "--store", str(restored))
        assert code == 0 and answer["verify"]["ok"] is True, err
        assert answer["event_seq"] == manifest["event_seq"] == answer["verify"]["last_event_seq"]
        expected = replay(records[:manifest["event_seq"]], budget=budget)
        assert state_document(file_store(restored).state(), NOW) == state_document(expected, NOW)
        accepted = {r["batch_id"] for r in records[:manifest["event_seq"]] if r.get("batch_id")}
        with sqlite3.connect(restored / "host.db") as connection:
            settled = {row[0] for row in connection.execute("SELECT batch_id FROM observations "
                                                              "WHERE batch_id IS NOT NULL")}
        with open_host_db(restored) as db:
            record = db.daemon_record()  # the daemon of the backup (if it had started) does not run here
            assert record is None or record["stopped_at"] is not None
        assert settled <= accepted  # host.db never marks an observation for a batch its store lacks
        # The restored copy is a working store: a cycle finishes whatever was in flight at the backup.
        copy = Workspace.__new__(Workspace)
        copy.root, copy.store, copy.config, copy.script = ws.root, restored, ws.config, ws.script
        code, report, err = foldctl(copy, "--store", str(restored), "tick", "--now", "2026-12-01T09:00:00+08:00")
        assert code == 0 and report["outcome"] in ("committed", "checked", "acknowledged", "nothing"), err
        code, report, err = foldctl(copy, "--store", str(restored), "verify")
        assert code == 0, err


def daemon_commits(store, *, after: int) -> list[dict]:
    """The editor's commits after event ``after``."""
    return [r for r in store.history(since=after).document["records"]
            if r["type"] == "commit" and r["actor"].startswith("agent:")]


def test_restore_refuses_a_used_target_and_a_damaged_backup(tmp_path):
    ws = Workspace(tmp_path, script=["track"])
    ws.feed("mail", mail(1))
    ws.tick(NOW)
    code, manifest, _ = foldctl(ws, "backup", "--out", str(tmp_path / "backup"))
    assert code == 0 and set(manifest["files"]) >= {"meta.json", "events.jsonl", "host.db"}
    code, _, err = foldctl(ws, "backup", "--out", str(tmp_path / "backup"))
    assert code == 2 and "not an empty directory" in err
    (tmp_path / "used").mkdir()
    (tmp_path / "used" / "something").write_text("x")
    code, _, err = foldctl(ws, "restore", str(tmp_path / "backup"), "--store", str(tmp_path / "used"))
    assert code == 2 and "not an empty directory" in err and (tmp_path / "used" / "something").read_text() == "x"
    damaged = tmp_path / "damaged"
    shutil.copytree(tmp_path / "backup", damaged)
    with open(damaged / "events.jsonl", "r+b") as file:
        file.seek(10)
        file.write(b"X")
    code, _, err = foldctl(ws, "restore", str(damaged), "--store", str(tmp_path / "new"))
    assert code == 4 and "does not match the manifest" in err and "events.jsonl" in err
    assert not any((tmp_path / "new").iterdir())  # nothing half-restored is left
    code, _, err = foldctl(ws, "restore", str(tmp_path), "--store", str(tmp_path / "new"))
    assert code == 2 and "not a Fold backup" in err


# -- host.db's integrity and hostile backups ([hardening-2]) ------------------------------------------


def _backed_up(tmp_path, mails: int = 12) -> Workspace:
    """A store with some mail in host.db, and its backup in ``tmp_path / "backup"``."""
    ws = Workspace(tmp_path / "ws", script=["track"])
    ws.feed("mail", *[{"native": str(n), "title": f"mail {n} about the quarterly figures",
                       "text": "the figures are attached " * 40} for n in range(mails)])
    ws.tick(NOW)
    code, _, err = foldctl(ws, "backup", "--out", str(tmp_path / "backup"))
    assert code == 0, err
    return ws


def _break_a_page(path) -> None:
    """Overwrite the header of the first index page of ``observations``: SQLite's quick_check fails on it."""
    connection = sqlite3.connect(path)
    connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    page_size = connection.execute("PRAGMA page_size").fetchone()[0]
    root = connection.execute("SELECT rootpage FROM sqlite_master WHERE name = 'observations_by_status'").fetchone()[0]
    connection.close()
    with open(path, "r+b") as file:
        file.seek((root - 1) * page_size)
        file.write(b"\xff" * 8)


def _fix_digest(backup, name: str) -> None:
    import hashlib

    manifest = json.loads((backup / "manifest.json").read_text())
    manifest["files"][name] = hashlib.sha256((backup / name).read_bytes()).hexdigest()
    (backup / "manifest.json").write_text(json.dumps(manifest))


def _empty(path) -> bool:
    return not path.exists() or not any(path.iterdir())


def test_backup_refuses_a_corrupt_host_db(tmp_path):
    ws = _backed_up(tmp_path)
    _break_a_page(ws.store / "host.db")
    code, document, err = foldctl(ws, "backup", "--out", str(tmp_path / "second"))
    assert code == 4 and document["errors"][0]["code"] == "host_db_corrupt"
    assert "quick_check" in err and "no backup was written" in err
    assert _empty(tmp_path / "second")  # no file of a backup that could not be restored


def test_restore_refuses_a_corrupt_page_whose_digest_was_fixed_up(tmp_path):
    ws = _backed_up(tmp_path)
    _break_a_page(tmp_path / "backup" / "host.db")
    _fix_digest(tmp_path / "backup", "host.db")
    code, document, err = foldctl(ws, "restore", str(tmp_path / "backup"), "--store", str(tmp_path / "new"))
    assert code == 4 and document["errors"][0]["code"] == "host_db_corrupt" and "quick_check" in err
    assert _empty(tmp_path / "new")


def test_restore_refuses_one_bit_flipped_inside_a_text_of_host_db(tmp_path):
    ws = _backed_up(tmp_path)
    copy = tmp_path / "backup" / "host.db"
    data = bytearray(copy.read_bytes())
    at = data.index(b"mail 7 about the quarterly figures") + 5  # the "7" of a stored title
    data[at] ^= 0x01  # "7" becomes "6": still a sound database, only the digest can tell
    copy.write_bytes(bytes(data))
    code, _, err = foldctl(ws, "restore", str(tmp_path / "backup"), "--store", str(tmp_path / "new"))
    assert code == 4 and "does not match the manifest" in err and "host.db" in err
    assert _empty(tmp_path / "new")


HOSTILE_MANIFESTS = {
    "a list": lambda m: [m],
    "a string": lambda m: "fold-backup",
    "no event_seq": lambda m: {k: v for k, v in m.items() if k != "event_seq"},
    "event_seq a string": lambda m: {**m, "event_seq": "7"},
    "no revision": lambda m: {k: v for k, v in m.items() if k != "revision"},
    "no created_at": lambda m: {k: v for k, v in m.items() if k != "created_at"},
    "files a list": lambda m: {**m, "files": list(m["files"])},
    "a NUL in a name": lambda m: {**m, "files": {**m["files"], "events\u0000.jsonl": "0" * 64}},
    "a foreign name": lambda m: {**m, "files": {**m["files"], "plugins.toml": "0" * 64}},
    "a digest that is a number": lambda m: {**m, "files": {**m["files"], "meta.json": 7}},
    "another version": lambda m: {**m, "version": 99},
}


def test_every_hostile_manifest_is_a_usage_error_that_leaves_the_target_empty(tmp_path):
    ws = _backed_up(tmp_path, mails=2)
    good = json.loads((tmp_path / "backup" / "manifest.json").read_text())
    for number, (what, change) in enumerate(HOSTILE_MANIFESTS.items()):
        hostile = tmp_path / f"hostile{number}"
        shutil.copytree(tmp_path / "backup", hostile)
        (hostile / "manifest.json").write_text(json.dumps(change(good)))
        target = tmp_path / f"target{number}"
        code, document, err = foldctl(ws, "restore", str(hostile), "--store", str(target))
        assert code == 2, (what, code, err)
        assert "not a manifest of a Fold backup" in document["errors"][0]["message"], what
        assert _empty(target), what


def test_special_files_in_a_backup_are_refused_without_waiting(tmp_path):
    import os
    import socket

    ws = _backed_up(tmp_path, mails=2)
    makers = {
        "a FIFO": lambda path: os.mkfifo(path),
        "a symbolic link to an endless device": lambda path: os.symlink("/dev/zero", path),
        "a socket": lambda path: socket.socket(socket.AF_UNIX).bind(str(path)),
    }
    for number, (what, make) in enumerate(makers.items()):
        hostile = tmp_path / f"special{number}"
        shutil.copytree(tmp_path / "backup", hostile)
        (hostile / "events.jsonl").unlink()
        make(hostile / "events.jsonl")
        target = tmp_path / f"from-special{number}"
        code, document, err = foldctl(ws, "restore", str(hostile), "--store", str(target))  # a hang: timeout
        assert code == 2 and "events.jsonl" in err and "refused" in err, (what, err)
        assert _empty(target), what
    missing = tmp_path / "missing"
    shutil.copytree(tmp_path / "backup", missing)
    (missing / "events.jsonl").unlink()
    code, _, err = foldctl(ws, "restore", str(missing), "--store", str(tmp_path / "from-missing"))
    assert code == 4 and "does not hold" in err and _empty(tmp_path / "from-missing")
    fifo_manifest = tmp_path / "fifo-manifest"
    shutil.copytree(tmp_path / "backup", fifo_manifest)
    (fifo_manifest / "manifest.json").unlink()
    os.mkfifo(fifo_manifest / "manifest.json")
    code, _, err = foldctl(ws, "restore", str(fifo_manifest), "--store", str(tmp_path / "from-fifo"))
    assert code == 2 and "FIFO" in err
