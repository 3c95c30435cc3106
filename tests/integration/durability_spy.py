"""A syscall-level durability spy for the file store (contract §6.2, §6.3).

Run ``foldctl`` under the spy::

    python tests/integration/durability_spy.py JOURNAL STORE -- --store STORE commit ...

(``SPY_MODULE=fold_host`` runs the host's CLI instead of the core's; STORE is
then whichever directory is to be modelled, such as a backup's.)

Before anything of Fold is imported, the spy wraps ``os.fsync`` /
``os.fdatasync``, ``os.rename`` / ``os.replace``, ``os.unlink`` / ``os.remove``,
``os.write``, ``os.ftruncate`` / ``os.truncate``, ``os._exit`` and the bytes
that reach stdout (fd 1). It keeps a model of what a power loss would leave of
the store directory — the *durable image*:

* every file and directory present when the process starts is durable (the
  test applied the previous process's image, or wrote the files itself);
* a file's durable content is its content at its last fsync (nothing, if it
  was never fsynced): appends and truncations that were not fsynced are lost;
* a directory's durable entries are its entries at its last fsync: a file
  created, renamed or removed since then comes back as it was.

It does not track writes to know what is durable (a write through a buffered
file object never passes ``os.write``): an fsync reads the file's content back
through ``/proc/self/fd``; a directory fsync lists the directory. Contents are
keyed by inode and a generation number bumped whenever the spy sees an inode
unlinked or renamed over, so a reused inode number is never mistaken for the
file that had it before.

When the process ends (a normal exit, or ``os._exit`` at a ``FOLD_FAULT``
point), the spy writes the JOURNAL: the ordered events (``fsync``, ``dirsync``,
``rename``, ``unlink``, ``truncate``, ``write``, ``output``, ``exit``) and the
durable image. ``apply_power_loss`` turns the store directory into that image,
which is what the machine would find after a power cut at that moment.

Only the store directory is modelled; the store directory itself and its
parent's entry are taken as durable.
"""

from __future__ import annotations

import base64
import io
import json
import os
import subprocess
import sys
from pathlib import Path
from stat import S_ISDIR

__all__ = ["Journal", "apply_power_loss", "run_spied"]

HERE = Path(__file__).resolve()


# -- inside the spied process ----------------------------------------------------------------


class _Spy:
    def __init__(self, root: str, journal: str) -> None:
        self.root = os.path.realpath(root)
        self.journal = journal
        self.events: list[list] = []
        self.generation: dict[int, int] = {}
        self.dirs: dict[str, dict[str, list]] = {}  # durable entries: rel dir -> {name: [is_dir, key]}
        self.data: dict[str, bytes] = {}  # durable content: key -> bytes
        self.real = {name: getattr(os, name) for name in (
            "fsync", "fdatasync", "rename", "replace", "unlink", "remove", "write", "ftruncate", "truncate",
            "_exit")}
        self.done = False
        if os.path.isdir(self.root):
            self._capture_tree("")

    # keys and paths

    def key(self, ino: int) -> str:
        return f"{ino}.{self.generation.get(ino, 0)}"

    def rel(self, path) -> str | None:
        """The path relative to the store root, or None outside it."""
        if isinstance(path, int):
            return None
        full = os.path.realpath(os.fspath(path))
        if full == self.root:
            return ""
        prefix = self.root + os.sep
        return full[len(prefix):] if full.startswith(prefix) else None

    def fd_rel(self, fd: int) -> str | None:
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            return None
        if target.endswith(" (deleted)"):
            target = target[: -len(" (deleted)")]
        return self.rel(target)

    def listing(self, rel_dir: str) -> dict[str, list]:
        entries = {}
        with os.scandir(os.path.join(self.root, rel_dir)) as scan:
            for entry in scan:
                is_dir = entry.is_dir(follow_symlinks=False)
                entries[entry.name] = [is_dir, self.key(entry.inode())]
        return entries

    def _capture_tree(self, rel_dir: str) -> None:
        entries = self.listing(rel_dir)
        self.dirs[rel_dir] = entries
        for name, (is_dir, key) in entries.items():
            path = os.path.join(rel_dir, name)
            if is_dir:
                self._capture_tree(path)
            else:
                with open(os.path.join(self.root, path), "rb") as file:
                    self.data[key] = file.read()

    def forget(self, path) -> None:
        """An inode is about to lose a name: later files may reuse its number."""
        try:
            ino = os.lstat(path).st_ino
        except (OSError, TypeError, ValueError):
            return
        self.generation[ino] = self.generation.get(ino, 0) + 1

    # the wrappers

    def fsync(self, name: str, fd: int) -> None:
        self.real[name](fd)
        rel = self.fd_rel(fd)
        if rel is None:
            return
        stat = os.fstat(fd)
        key = self.key(stat.st_ino)
        if S_ISDIR(stat.st_mode):
            self.dirs[rel] = self.listing(rel)
            self.events.append(["dirsync", rel, sorted(self.dirs[rel])])
        else:
            with open(f"/proc/self/fd/{fd}", "rb") as file:
                self.data[key] = file.read()
            self.events.append(["fsync", rel, len(self.data[key]), key])

    def rename(self, name: str, src, dst, **kwargs) -> None:
        rel_src, rel_dst = self.rel(src), self.rel(dst)
        key = None
        if rel_src is not None:
            try:
                key = self.key(os.lstat(src).st_ino)
            except OSError:
                pass
            if rel_dst is not None and os.path.lexists(dst):
                self.forget(dst)
        self.real[name](src, dst, **kwargs)
        if rel_src is not None or rel_dst is not None:
            self.events.append(["rename", rel_src, rel_dst, key])

    def unlink(self, name: str, path, **kwargs) -> None:
        rel = self.rel(path) if not kwargs.get("dir_fd") else None
        if rel is not None:
            self.forget(path)
        self.real[name](path, **kwargs)
        if rel is not None:
            self.events.append(["unlink", rel])

    def write(self, fd: int, data) -> int:
        written = self.real["write"](fd, data)
        rel = self.fd_rel(fd)
        if rel is not None:
            self.events.append(["write", rel, written])
        return written

    def ftruncate(self, fd: int, length: int) -> None:
        self.real["ftruncate"](fd, length)
        rel = self.fd_rel(fd)
        if rel is not None:
            self.events.append(["truncate", rel, length])

    def truncate(self, path, length: int) -> None:
        self.real["truncate"](path, length)
        rel = self.rel(path) if not isinstance(path, int) else self.fd_rel(path)
        if rel is not None:
            self.events.append(["truncate", rel, length])

    def output(self, size: int) -> None:
        self.events.append(["output", size])

    # the end

    def image(self) -> dict[str, str | None]:
        """rel path -> base64 content (None for a directory), as a power cut would leave it."""
        found: dict[str, str | None] = {}

        def walk(rel_dir: str) -> None:
            for name, (is_dir, key) in sorted(self.dirs.get(rel_dir, {}).items()):
                path = os.path.join(rel_dir, name)
                if is_dir:
                    found[path] = None
                    walk(path)
                else:
                    found[path] = base64.b64encode(self.data.get(key, b"")).decode("ascii")

        walk("")
        return found

    def finish(self, code: object) -> None:
        if self.done:
            return
        self.done = True
        self.events.append(["exit", code if isinstance(code, int) else (0 if code is None else 1)])
        with open(self.journal, "w", encoding="utf-8") as file:
            json.dump({"events": self.events, "image": self.image()}, file)

    def install(self) -> None:
        for name in ("fsync", "fdatasync"):
            setattr(os, name, lambda fd, _name=name: self.fsync(_name, fd))
        for name in ("rename", "replace"):
            setattr(os, name, lambda src, dst, _name=name, **kw: self.rename(_name, src, dst, **kw))
        for name in ("unlink", "remove"):
            setattr(os, name, lambda path, _name=name, **kw: self.unlink(_name, path, **kw))
        os.write = self.write
        os.ftruncate = self.ftruncate
        os.truncate = self.truncate

        def _exit(code: int) -> None:
            self.finish(code)
            self.real["_exit"](code)

        os._exit = _exit
        sys.stdout = io.TextIOWrapper(io.BufferedWriter(_Stdout(self)), encoding="utf-8",
                                      line_buffering=False, write_through=True)


class _Stdout(io.RawIOBase):
    """fd 1, recording when bytes of the answer leave the process."""

    def __init__(self, spy: _Spy) -> None:
        super().__init__()
        self.spy = spy

    def writable(self) -> bool:
        return True

    def fileno(self) -> int:
        return 1

    def isatty(self) -> bool:
        return False

    def write(self, data) -> int:
        view = memoryview(data)
        if view.nbytes:
            self.spy.output(view.nbytes)
        total = 0
        while total < view.nbytes:
            total += self.spy.real["write"](1, view[total:])
        return total


def _main(argv: list[str]) -> None:
    journal, store, dash, *args = argv
    assert dash == "--", "usage: durability_spy.py JOURNAL STORE -- FOLDCTL-ARGS"
    spy = _Spy(store, journal)
    spy.install()
    import runpy

    sys.argv = ["foldctl", *args]
    code: object = 0
    try:
        runpy.run_module(os.environ.get("SPY_MODULE", "fold_core"), run_name="__main__", alter_sys=True)
    except SystemExit as stop:
        code = stop.code
    finally:
        try:
            sys.stdout.flush()
        except (OSError, ValueError):
            pass
        spy.finish(code)
    sys.exit(code)


# -- in the test process -----------------------------------------------------------------------


class Journal:
    """What a spied process did, in order, and the durable image it left."""

    def __init__(self, data: dict) -> None:
        self.events: list[list] = data["events"]
        self.image: dict[str, str | None] = data["image"]

    def index(self, kind: str, start: int = 0, **where) -> int | None:
        """Position of the first event of ``kind`` from ``start`` matching ``where`` (None if none)."""
        for position in range(start, len(self.events)):
            event = self.events[position]
            if event[0] == kind and all(check(event) for check in where.values()):
                return position
        return None

    @property
    def output_at(self) -> int | None:
        return self.index("output")

    @property
    def end(self) -> int:
        return len(self.events) - 1


def run_spied(store: Path, args: list[str], *, stdin: str | None = None, env: dict | None = None,
              journal: Path | None = None) -> tuple[int, object, str, Journal]:
    """``foldctl --store STORE ARGS`` under the spy: (exit code, parsed stdout or None, stderr, journal)."""
    journal = journal or store.parent / f".journal-{store.name}.json"
    environment = {k: v for k, v in os.environ.items() if not k.startswith("FOLD_")}
    environment.update(env or {})
    done = subprocess.run(
        [sys.executable, str(HERE), str(journal), str(store), "--", "--store", str(store), *args],
        input=(stdin or "").encode("utf-8"), capture_output=True, env=environment, timeout=120,
    )
    err = done.stderr.decode("utf-8", "replace")
    assert "Traceback" not in err, err
    out = done.stdout.decode("utf-8")
    with open(journal, encoding="utf-8") as file:
        record = Journal(json.load(file))
    journal.unlink()
    return done.returncode, (json.loads(out) if out.strip() else None), err, record


def apply_power_loss(store: Path, journal: Journal) -> None:
    """Make the store directory what a power cut at the end of the spied process would leave."""
    image = journal.image
    if not store.exists():
        return
    for current in sorted(store.rglob("*"), key=lambda path: len(path.parts), reverse=True):
        rel = str(current.relative_to(store))
        if rel not in image:
            if current.is_dir() and not current.is_symlink():
                current.rmdir()
            else:
                current.unlink()
        elif image[rel] is not None and current.is_dir():
            raise AssertionError(f"{rel}: a directory where the image holds a file")
    for rel, content in sorted(image.items()):
        path = store / rel
        if content is None:
            path.mkdir(exist_ok=True)
            continue
        data = base64.b64decode(content)
        if not path.exists() or path.read_bytes() != data:
            path.write_bytes(data)


if __name__ == "__main__":
    _main(sys.argv[1:])
