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
Before that, SQLite's ``quick_check`` runs on the copy of host.db: a corrupt
host.db is refused (exit 4) and the copied files are removed — a backup that
cannot be restored is worse than none.

**Restore** refuses a target that exists and is not empty (exit 2), and a
manifest that is not the one ``backup`` writes (exit 2, before anything is
written: not an object, a missing or mistyped field, a file name that is not
one of a store's, a digest that is not one). Every file it reads must be a
regular file (a FIFO, device, socket or symbolic link is refused: exit 2,
nothing waits on it). It copies every file the same way and checks its
digest, then runs ``quick_check`` on the restored host.db (a mismatch or a
corrupt page removes what was copied: exit 4), marks host.db's daemon record
as stopped (the daemon that ran during the backup is not running here), and
runs ``verify`` on the result.
"""

from __future__ import annotations

import errno
import json
import os
import re
import stat

from fold_core.errors import StoreCorrupt, UsageError
from fold_core.store.file import file_store
from fold_core.store.log import fsync_dir, line_start
from fold_core.store.meta import StoreMissing
from fold_core.store.parts import KINDS
from fold_core.store.verify import verify_store
from fold_host.hostdb import open_host_db
from fold_host.hostdb.copy import PinnedView, copy_problem, ready_for_backup
from fold_host.hostdb.failures import HostDBCorrupt
from fold_host.ops.filecopy import Produced, Range, copy_files

__all__ = ["FORMAT", "backup", "restore"]

FORMAT, VERSION = "fold-backup", 1
HOST_DB = "host.db"
MANIFEST_MAX = 1 << 20  # bytes: a manifest names a handful of files
# The files a backup holds: exactly the names ``backup`` writes.
FILE_NAME = re.compile(r"(meta\.json|events\.jsonl|snapshot\.json|host\.db|snapshot\.[A-Za-z0-9][A-Za-z0-9_-]{0,100}"
                       r"\.(?:" + "|".join(KINDS) + r"))")
DIGEST = re.compile(r"[0-9a-f]{64}")


def backup(store_dir: str, out_dir: str, *, now: str) -> dict:
    """Write a backup of ``store_dir`` into ``out_dir`` (new or empty); the manifest."""
    if not os.path.exists(os.path.join(store_dir, "meta.json")):
        raise StoreMissing(f"no store at {store_dir} (no meta.json): nothing to back up")
    _empty_target(out_dir, "--out")
    os.makedirs(out_dir, exist_ok=True)
    pinned, sources = _pin_host_db(store_dir), {}
    try:
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
        if HOST_DB in files:
            problem = copy_problem(os.path.join(out_dir, HOST_DB))
            if problem is not None:
                raise HostDBCorrupt(f"{os.path.join(store_dir, HOST_DB)} fails SQLite's quick_check ({problem}): "
                                   "no backup was written; `foldctl doctor` says more, and an older backup "
                                   "holds a sound copy")
    except BaseException:
        _clear(out_dir)
        raise
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
        log = open_regular(log_path)
        size = os.fstat(log.fileno()).st_size
        start = line_start(log_path, event_seq, size)
        if start is None:  # a foreign log: find the line by reading
            start = _scan_for(log, event_seq)
        log.seek(start)
        opened["events.jsonl"] = (log, start + len(log.readline()))
    head_path = os.path.join(store_dir, "snapshot.json")
    if event_seq and os.path.exists(head_path):
        head = open_regular(head_path)
        parts = _parts_named(head)
        if parts is None or not all(os.path.exists(os.path.join(store_dir, name)) for name in parts):
            head.close()  # a cache it cannot copy whole is left out: the restored store rebuilds it
            return opened
        opened["snapshot.json"] = (head, os.fstat(head.fileno()).st_size)
        for name in parts:
            opened[name] = _opened(store_dir, name)
    return opened


def _opened(store_dir: str, name: str) -> tuple:
    file = open_regular(os.path.join(store_dir, name))
    return file, os.fstat(file.fileno()).st_size


def open_regular(path: str):
    """``path`` opened for reading; UsageError unless it is a regular file (never waits on a FIFO or device).

    ``O_NONBLOCK`` makes opening a FIFO return at once; ``O_NOFOLLOW`` refuses a symbolic link in the
    file's place; the kind is then read from the open descriptor, so nothing can be swapped in between.
    """
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0))
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise UsageError(f"{path} is a symbolic link, not a file: refused") from None
        if error.errno in (errno.ENXIO, errno.ENODEV, errno.EOPNOTSUPP):  # a socket or a device without driver
            raise UsageError(f"{path} is not a regular file (a socket or device): refused") from None
        raise
    mode = os.fstat(descriptor).st_mode
    if not stat.S_ISREG(mode):
        os.close(descriptor)
        kind = ("a FIFO" if stat.S_ISFIFO(mode) else "a directory" if stat.S_ISDIR(mode) else
                "a socket" if stat.S_ISSOCK(mode) else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
                else "not a file")
        raise UsageError(f"{path} is {kind}, not a regular file: refused")
    os.set_blocking(descriptor, True)
    return os.fdopen(descriptor, "rb")


def _clear(directory: str) -> None:
    """Remove everything in ``directory`` (a target this command found empty or made)."""
    import shutil

    if not os.path.isdir(directory):
        return
    for name in os.listdir(directory):
        path = os.path.join(directory, name)
        shutil.rmtree(path) if os.path.isdir(path) and not os.path.islink(path) else os.remove(path)


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
        if HOST_DB in manifest["files"]:
            problem = copy_problem(os.path.join(store_dir, HOST_DB))
            if problem is not None:
                raise HostDBCorrupt(f"{os.path.join(backup_dir, HOST_DB)} fails SQLite's quick_check ({problem}): "
                                   "this backup is damaged")
        fsync_dir(store_dir)
        if HOST_DB in manifest["files"]:
            with open_host_db(store_dir) as db:
                db.daemon_restored(now=now)
        report = verify_store(store_dir)
        if report["last_event_seq"] != manifest["event_seq"]:
            raise StoreCorrupt(f"the restored log ends at event {report['last_event_seq']}, the manifest says "
                               f"{manifest['event_seq']}")
    except BaseException:
        _clear(store_dir)
        raise
    return {"ok": True, "store": os.path.abspath(store_dir), "event_seq": manifest["event_seq"],
            "revision": manifest["revision"], "created_at": manifest["created_at"], "verify": report}


def _copy_back(backup_dir: str, names: list[str], store_dir: str) -> dict[str, str]:
    """Copy the backup's files into the new store; ``{name: sha256 of the copy}``."""
    opened = {}
    try:
        for name in names:
            try:
                opened[name] = open_regular(os.path.join(backup_dir, name))
            except FileNotFoundError:
                raise StoreCorrupt(f"the manifest names {name}, which {backup_dir} does not hold: this backup is "
                                   "damaged") from None
        return copy_files([Range(name, file.fileno(), os.fstat(file.fileno()).st_size, file.name)
                           for name, file in opened.items()], store_dir)
    finally:
        for file in opened.values():
            file.close()


def _manifest(backup_dir: str) -> dict:
    """The backup's manifest, checked field by field; UsageError for anything ``backup`` would not write."""
    path = os.path.join(backup_dir, "manifest.json")
    if not os.path.isdir(backup_dir):
        raise UsageError(f"{backup_dir} is not a Fold backup (not a directory)")
    try:
        with open_regular(path) as file:
            data = file.read(MANIFEST_MAX + 1)
    except FileNotFoundError:
        raise UsageError(f"{backup_dir} is not a Fold backup (no manifest.json; an interrupted backup has none)") \
            from None
    except OSError as error:
        raise UsageError(f"{path} cannot be read: {error.strerror or error}") from None
    if len(data) > MANIFEST_MAX:
        raise UsageError(f"{path} is larger than {MANIFEST_MAX} bytes: not a manifest of a Fold backup")
    try:
        manifest = json.loads(data)
    except (ValueError, RecursionError) as error:
        raise UsageError(f"{path} is not JSON: {str(error)[:200]}") from None
    problem = _manifest_problem(manifest)
    if problem is not None:
        raise UsageError(f"{path} is not a manifest of a Fold backup (format {FORMAT!r}): {problem}")
    return manifest


def _manifest_problem(manifest: object) -> str | None:
    """What makes ``manifest`` other than what ``backup`` writes; None when it is one."""
    if not isinstance(manifest, dict):
        return f"it is a JSON {type(manifest).__name__}, not an object"
    if manifest.get("format") != FORMAT:
        return "its format is not fold-backup"
    if manifest.get("version") != VERSION:
        return f"version {str(manifest.get('version'))[:20]} is not one this Fold reads ({VERSION})"
    for key in ("event_seq", "revision"):
        value = manifest.get(key)
        if type(value) is not int or value < 0:
            return f"{key} must be a whole number ≥ 0"
    if not isinstance(manifest.get("created_at"), str):
        return "created_at must be a string"
    files = manifest.get("files")
    if not isinstance(files, dict) or "meta.json" not in files:
        return "files must be an object naming at least meta.json"
    for name, digest in files.items():
        if not FILE_NAME.fullmatch(name):
            return f"the file name {name[:80]!r} is not one a Fold backup holds"
        if not isinstance(digest, str) or not DIGEST.fullmatch(digest):
            return f"the digest of {name} is not a sha256 in hex"
    return None
