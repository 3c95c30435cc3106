"""Online backup of a store and its host.db, and restoring one (``foldctl backup`` / ``restore``).

**Backup** (while the daemon runs). For the moment it needs, a read session
of the store holds the store's lock (shared: commits wait, readers do not);
inside it the backup notes the state's event_seq and revision, opens the log,
the snapshot head and the parts that head names, and pins a read transaction
on host.db (``PinnedView``: SQLite's WAL keeps that view while the daemon
writes on, and in the usual case the database file itself is that view until
the copy ends). Then the lock is released and the copying happens outside it
(``fold_host.ops.filecopy``: in the kernel, every file at once, each hashed
beside its copy and fsynced when whole): the log up to the end of the line of that
event_seq (the log only grows, so those bytes never change), the snapshot
files as they were (opened files survive a later refresh that replaces
them), and host.db as pinned. Because the host writes its commit intent to
host.db before the store and marks the observations after it, a host.db view
taken inside the store's lock is never behind the store in a way that loses
work: an intent whose commit is not in the backup is committed on the first
start after a restore, and one whose commit is there is answered
``replayed``. ``manifest.json`` — ``{"format": "fold-backup", "version": 1,
"event_seq", "revision", "created_at", "store", "files": {name: sha256}}``
— is written last, once every copied file and
the directory's entries are on disk: a directory without it is not a backup.

**Restore** refuses a target that exists and is not empty (exit 2), copies
every file the same way and checks its digest (a mismatch removes what was copied:
exit 4), marks host.db's daemon record as stopped (the daemon that ran
during the backup is not running here), and runs ``verify`` on the result.
"""

from __future__ import annotations

import json
import os
import re

from fold_core.errors import StoreCorrupt, UsageError
from fold_core.store.file import file_store
from fold_core.store.log import fsync_dir, line_start
from fold_core.store.meta import StoreMissing
from fold_core.store.parts import KINDS
from fold_core.store.verify import verify_store
from fold_host.hostdb import open_host_db
from fold_host.hostdb.copy import PinnedView, ready_for_backup
from fold_host.ops.filecopy import Produced, Range, copy_files

__all__ = ["FORMAT", "backup", "restore"]

FORMAT, VERSION = "fold-backup", 1
HOST_DB = "host.db"


def backup(store_dir: str, out_dir: str, *, now: str) -> dict:
    """Write a backup of ``store_dir`` into ``out_dir`` (new or empty); the manifest."""
    if not os.path.exists(os.path.join(store_dir, "meta.json")):
        raise StoreMissing(f"no store at {store_dir} (no meta.json): nothing to back up")
    _empty_target(out_dir, "--out")
    os.makedirs(out_dir, exist_ok=True)
    pinned, sources = _pin_host_db(store_dir), {}
    try:
        with file_store(store_dir).recorder.session(write=False) as session:
            event_seq, revision = session.state.event_seq, session.state.revision
            if pinned is not None:
                pinned.pin()
            sources = _open_store_files(store_dir, event_seq)
        files = copy_files(_jobs(sources, pinned), out_dir)  # each file fsynced once it is whole
    finally:
        for file, _ in sources.values():
            file.close()
        if pinned is not None:
            pinned.close()
    fsync_dir(out_dir)  # every copied file is on disk before the manifest says it is a backup
    manifest = {"format": FORMAT, "version": VERSION, "event_seq": event_seq, "revision": revision,
                "created_at": now, "store": os.path.abspath(store_dir), "files": files}
    _write(os.path.join(out_dir, "manifest.json"), json.dumps(manifest, indent=1, sort_keys=True).encode() + b"\n")
    fsync_dir(out_dir)
    return manifest


def _jobs(sources: dict, pinned) -> list:
    """The store's files copied in the kernel; host.db too when its file is the pinned view, else through SQLite."""
    jobs: list = [Range(name, file.fileno(), length, file.name) for name, (file, length) in sources.items()]
    if pinned is not None and pinned.whole_file:
        descriptor, length = pinned.database_file()
        jobs.append(Range(HOST_DB, descriptor, length, pinned.path))
    elif pinned is not None:
        jobs.append(Produced(HOST_DB, pinned.copy_to))
    return jobs


def _pin_host_db(store_dir: str) -> PinnedView | None:
    """A ``PinnedView`` of host.db, not pinned yet (None when there is no host.db)."""
    path = os.path.join(store_dir, HOST_DB)
    if not os.path.exists(path):
        return None
    if not ready_for_backup(path):  # a host.db never opened by the host: give it its schema and WAL first
        open_host_db(store_dir).close()
    return PinnedView(path)


def _open_store_files(store_dir: str, event_seq: int) -> dict:
    """``{name: (open file, bytes to copy)}``: meta, the log up to ``event_seq``, the snapshot and its parts."""
    opened = {"meta.json": _opened(store_dir, "meta.json")}
    log_path = os.path.join(store_dir, "events.jsonl")
    if event_seq and os.path.exists(log_path):
        log = open(log_path, "rb")
        size = os.fstat(log.fileno()).st_size
        start = line_start(log_path, event_seq, size)
        if start is None:  # a foreign log: find the line by reading
            start = _scan_for(log, event_seq)
        log.seek(start)
        opened["events.jsonl"] = (log, start + len(log.readline()))
    head_path = os.path.join(store_dir, "snapshot.json")
    if event_seq and os.path.exists(head_path):
        head = open(head_path, "rb")
        parts = _parts_named(head)
        if parts is None or not all(os.path.exists(os.path.join(store_dir, name)) for name in parts):
            head.close()  # a cache it cannot copy whole is left out: the restored store rebuilds it
            return opened
        opened["snapshot.json"] = (head, os.fstat(head.fileno()).st_size)
        for name in parts:
            opened[name] = _opened(store_dir, name)
    return opened


def _opened(store_dir: str, name: str) -> tuple:
    file = open(os.path.join(store_dir, name), "rb")
    return file, os.fstat(file.fileno()).st_size


def _scan_for(log, event_seq: int) -> int:
    log.seek(0)
    position = 0
    for number, line in enumerate(log, start=1):
        if number == event_seq:
            return position
        position += len(line)
    raise StoreCorrupt(f"events.jsonl has no line {event_seq}")


# How the store writes a head's beginning: the parts are read from there without parsing the whole head.
HEAD_START = re.compile(rb'\{"format":"fold-snapshot","version":\d+,"parts":(\{[^{}]*\})')


def _parts_named(head) -> list[str] | None:
    """The part files a snapshot head names ([] for a one-file head; None when it cannot be read)."""
    start = HEAD_START.match(head.read(4096))
    head.seek(0)
    try:
        if start is not None:
            parts = json.loads(start.group(1))
        else:  # written some other way: the whole head says
            parts = json.loads(head.read()).get("parts")
    except (ValueError, AttributeError, UnicodeDecodeError):
        return None
    if parts is None:
        return []
    generation = parts.get("generation") if isinstance(parts, dict) else None
    if not isinstance(generation, str) or "/" in generation or generation.startswith("."):
        return None
    return [f"snapshot.{generation}.{kind}" for kind in KINDS]


def _write(path: str, data: bytes) -> None:
    with open(path, "wb") as file:
        file.write(data)
        file.flush()
        os.fsync(file.fileno())


def _empty_target(path: str, what: str) -> None:
    if os.path.exists(path) and (not os.path.isdir(path) or os.listdir(path)):
        raise UsageError(f"{what} {path} exists and is not an empty directory: name a new one")


# -- restore -------------------------------------------------------------------------


def restore(backup_dir: str, store_dir: str, *, now: str) -> dict:
    """Restore the backup in ``backup_dir`` into the new store ``store_dir``; the verify report."""
    manifest = _manifest(backup_dir)
    _empty_target(store_dir, "--store")
    os.makedirs(store_dir, exist_ok=True)
    try:
        found = _copy_back(backup_dir, sorted(manifest["files"]), store_dir)
        for name, expected in sorted(manifest["files"].items()):
            if found[name] != expected:
                raise StoreCorrupt(f"{os.path.join(backup_dir, name)}: sha256 {found[name]} does not match the "
                                   f"manifest ({expected}): this backup is damaged")
        fsync_dir(store_dir)
        if HOST_DB in manifest["files"]:
            with open_host_db(store_dir) as db:
                db.daemon_restored(now=now)
        report = verify_store(store_dir)
    except BaseException:
        import shutil

        for name in os.listdir(store_dir):
            path = os.path.join(store_dir, name)
            shutil.rmtree(path) if os.path.isdir(path) else os.remove(path)
        raise
    if report["last_event_seq"] != manifest["event_seq"]:
        raise StoreCorrupt(f"the restored log ends at event {report['last_event_seq']}, the manifest says "
                           f"{manifest['event_seq']}")
    return {"ok": True, "store": os.path.abspath(store_dir), "event_seq": manifest["event_seq"],
            "revision": manifest["revision"], "created_at": manifest["created_at"], "verify": report}


def _copy_back(backup_dir: str, names: list[str], store_dir: str) -> dict[str, str]:
    """Copy the backup's files into the new store; ``{name: sha256 of the copy}``."""
    opened = {}
    try:
        for name in names:
            opened[name] = open(os.path.join(backup_dir, name), "rb")
        return copy_files([Range(name, file.fileno(), os.fstat(file.fileno()).st_size, file.name)
                           for name, file in opened.items()], store_dir)
    finally:
        for file in opened.values():
            file.close()


def _manifest(backup_dir: str) -> dict:
    path = os.path.join(backup_dir, "manifest.json")
    try:
        with open(path, "rb") as file:
            manifest = json.loads(file.read())
    except FileNotFoundError:
        raise UsageError(f"{backup_dir} is not a Fold backup (no manifest.json; an interrupted backup has none)") \
            from None
    except (OSError, ValueError) as error:
        raise UsageError(f"{path} cannot be read: {error}") from None
    files = manifest.get("files") if isinstance(manifest, dict) else None
    if manifest.get("format") != FORMAT or not isinstance(files, dict) or "meta.json" not in files or any(
            not isinstance(name, str) or os.path.basename(name) != name or name.startswith(".") for name in files):
        raise UsageError(f"{path} is not a manifest of a Fold backup (format {FORMAT!r} with a file list)")
    return manifest
