"""Files that Fold writes for people: regular files only, written whole, read within a bound.

A path in plugins.toml may name anything — a FIFO, a device, a symbolic link
to a file elsewhere, ``/dev/zero``. What is written or read through such a
path is only ever a regular file (or a new one):

* ``file_kind`` says what a path is, in words ("a FIFO", "a character
  device", …), for messages;
* ``check_regular_target`` refuses a target that exists and is not a regular
  file (a symbolic link is refused too: the file is replaced by a rename, which
  would silently turn a link into a file);
* ``replace_file`` writes a new regular file beside the target (created
  exclusively, never through a link), fsyncs it, renames it over the target
  and fsyncs the directory: readers see the old file or the new one;
* ``append_file`` appends to a regular file (created when missing, opened
  without following a link, checked after opening) with one write and fsync;
* ``read_tail`` reads at most ``limit`` bytes from the end of a regular file;
* ``directory_problem`` says why a path cannot be a store's directory (an
  existing non-directory, or a place in ``/proc``, ``/sys`` or ``/dev``).

Each refusal is a ``NotARegularFile`` (an ``OSError``) whose message names the
path and what it is.
"""

from __future__ import annotations

import os
import stat

__all__ = ["NotARegularFile", "append_file", "fsync_dir", "write_all", "check_regular_target", "directory_problem", "file_kind", "read_tail",
           "replace_file"]

_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
          (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"), (stat.S_ISLNK, "a symbolic link"),
          (stat.S_ISREG, "a regular file"))


#: Kernel file systems: they hold no files of ours (``/dev/shm`` is ordinary memory and may).
VIRTUAL_ROOTS = ("/proc", "/sys", "/dev")
ORDINARY_UNDER_VIRTUAL = ("/dev/shm",)


class NotARegularFile(OSError):
    """The path names something that is not a regular file; nothing was written or read."""


def write_all(fd: int, data: bytes) -> None:
    """Write all of ``data`` to ``fd`` (``os.write`` may write less than it is given)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def file_kind(mode: int) -> str:
    """What an ``st_mode`` is, in words: "a regular file", "a FIFO", "a character device", …"""
    for test, name in _KINDS:
        if test(mode):
            return name
    return "not a regular file"


def check_regular_target(path: str | os.PathLike) -> bool:
    """Whether ``path`` exists (as a regular file); ``NotARegularFile`` when it is anything else."""
    path = os.fspath(path)
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return False
    if not stat.S_ISREG(mode):
        raise NotARegularFile(f"{path} is {file_kind(mode)}, not a regular file; nothing was written to it "
                              "(remove it or choose another path)")
    return True


def replace_file(path: str | os.PathLike, data: bytes) -> None:
    """Replace the regular file ``path`` (or create it) with ``data``, atomically and durably."""
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    check_regular_target(path)
    temp = os.path.join(directory, f".{os.path.basename(path)}.tmp-{os.getpid()}")
    try:
        os.unlink(temp)  # a leftover of a crashed write (never followed: unlink removes a link itself)
    except FileNotFoundError:
        pass
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    try:
        with os.fdopen(fd, "wb") as file:
            file.write(data)
            file.flush()
            os.fsync(file.fileno())
        check_regular_target(path)  # checked again just before the rename: it may have changed meanwhile
        os.replace(temp, path)
    except BaseException:
        try:
            os.remove(temp)
        except OSError:
            pass
        raise
    fsync_dir(directory)


def append_file(path: str | os.PathLike, data: bytes) -> int:
    """Append ``data`` to the regular file ``path`` (created when missing) with one write; its size before."""
    path = os.fspath(path)
    os.makedirs(os.path.dirname(os.path.abspath(path)) or ".", exist_ok=True)
    created = not check_regular_target(path)
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    fd = os.open(path, flags, 0o644)  # O_NONBLOCK: a FIFO swapped in meanwhile cannot block the open
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise NotARegularFile(f"{path} is {file_kind(info.st_mode)}, not a regular file; nothing was written")
        os.set_blocking(fd, True)
        write_all(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    if created:
        fsync_dir(os.path.dirname(os.path.abspath(path)))
    return info.st_size


def read_tail(path: str | os.PathLike, limit: int) -> tuple[bytes, int]:
    """``(the last ≤ limit bytes, the file's size)`` of the regular file ``path``; ``(b"", 0)`` when absent."""
    path = os.fspath(path)
    if not check_regular_target(path):
        return b"", 0
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return b"", 0
    with os.fdopen(fd, "rb") as file:
        info = os.fstat(file.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise NotARegularFile(f"{path} is {file_kind(info.st_mode)}, not a regular file; nothing was read")
        size = info.st_size
        file.seek(max(size - limit, 0))
        return file.read(limit), size


def directory_problem(path: str | os.PathLike) -> str | None:
    """Why ``path`` cannot be a directory Fold creates and writes in (None: it can, or it does not exist yet)."""
    path = os.fspath(path)
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        mode = None
    except OSError as error:
        return f"{path} cannot be examined: {error.strerror or error}"
    if mode is not None and not stat.S_ISDIR(mode):
        return f"{path} is {file_kind(mode)}, not a directory"
    real = os.path.realpath(path)
    for root in VIRTUAL_ROOTS:
        inside = real == root or real.startswith(root + "/")
        if inside and not any(real == ok or real.startswith(ok + "/") for ok in ORDINARY_UNDER_VIRTUAL):
            return f"{path} is in {root}, a kernel file system that cannot hold a store"
    return None


def fsync_dir(directory: str) -> None:
    """Make a directory's entries (a created or replaced file) durable."""
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
