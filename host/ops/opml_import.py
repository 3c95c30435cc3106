"""An OPML list turned into an ``[[adapters]]`` block of plugins.toml, and appended safely.

``adapter_block(name, feeds)`` writes the TOML text: an rss instance whose
``feeds`` array holds each feed's URL, or an inline table with its title and
folder when it has them. Strings are TOML basic strings (JSON escaping, which
TOML accepts, plus DEL), so a title from the list can never break out of its
string.

``append_checked(path, block)`` appends the block to a plugins.toml only
when the result loads without a problem the file did not already have (a
duplicate name, a bad key): the candidate is written beside the file,
loaded, and moved over it in one rename (the file's mode kept). Problems the
file already had — an environment variable not set in this shell, say — are
not held against the import.

Two writers never lose each other's work: every writer of a plugins.toml
takes ``config_lock`` (an ``flock`` on ``.plugins.toml.lock`` beside it), and
just before the rename the file is compared with what the candidate was built
from — an edit made meanwhile by another program (an editor, a script) means
building and checking the candidate again on top of it. The replaced file is
kept open across the rename, so an edit appended to it in that very instant is
noticed too, and appended after the block (without a second check; again
until no such edit is left). When the file keeps changing, the import refuses
(nothing appended); when an edit cannot be merged (it rewrote the file rather
than appending), the file as it left it is saved beside the file and the error
names it — never exit 0 with an edit lost.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import NoReturn

from fold_core.errors import ConfigError, UsageError
from fold_host.plugins import load_config

__all__ = ["adapter_block", "append_checked", "config_lock", "toml_string"]

LOCK_TIMEOUT = 30.0  # seconds a writer waits for another one to finish with the file
ATTEMPTS = 20  # times the file may change under an import before it gives up


def toml_string(text: str) -> str:
    """A TOML basic string holding ``text`` exactly."""
    return json.dumps(text, ensure_ascii=False).replace("\x7f", "\\u007f")


def adapter_block(name: str, feeds, *, every: str = "30m") -> str:
    """The ``[[adapters]]`` block reading ``feeds`` (``FeedRef`` values)."""
    lines = ["[[adapters]]", f"name = {toml_string(name)}", 'type = "rss"', f"every = {toml_string(every)}",
             "feeds = ["]
    for feed in feeds:
        extra = [f"title = {toml_string(feed.title)}"] if feed.title else []
        extra += [f"folder = {toml_string(feed.folder)}"] if feed.folder else []
        if extra:
            lines.append(f"  {{ url = {toml_string(feed.url)}, {', '.join(extra)} }},")
        else:
            lines.append(f"  {toml_string(feed.url)},")
    lines.append("]")
    return "\n".join(lines) + "\n"


def _problems(path: Path, shown_as: Path) -> set[str]:
    try:
        load_config(path=path)
    except ConfigError as error:
        found = getattr(error, "problems", None) or [error]
        return {str(problem).replace(str(path), str(shown_as)) for problem in found}
    return set()


def _read(path: Path) -> str | None:
    """The file's text, None when there is none."""
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as error:
        raise UsageError(f"cannot read {path}: {getattr(error, 'strerror', None) or error}") from None


def _joined(existing: str, block: str) -> str:
    return existing + ("\n" if existing and not existing.endswith("\n") else "") + ("\n" if existing else "") + block


def _beside(path: Path, text: str) -> Path:
    """``text`` in a new file beside ``path`` (fsynced), for loading and renaming."""
    handle = tempfile.NamedTemporaryFile("w", encoding="utf-8", dir=path.resolve().parent, prefix=".plugins-",
                                         suffix=".toml", delete=False)
    with handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())
    return Path(handle.name)


def _new_problems(path: Path, base: str | None, text: str) -> tuple[Path, list[str]]:
    """A candidate file holding ``text``, and the problems it has that ``base`` did not have."""
    before: set[str] = set()
    if base is not None:
        plain = _beside(path, base)
        try:
            before = _problems(plain, path)
        finally:
            plain.unlink(missing_ok=True)
    candidate = _beside(path, text)
    return candidate, sorted(_problems(candidate, path) - before)


@contextlib.contextmanager
def config_lock(path: Path, timeout: float = LOCK_TIMEOUT) -> Iterator[None]:
    """Hold the lock of the plugins.toml at ``path``: ``fcntl.flock`` on ``.<name>.lock`` beside it (never on the
    file itself, which a rename replaces); ``ConfigError`` when another writer holds it longer than ``timeout``."""
    lock_path = path.resolve().parent / f".{path.name}.lock"
    try:
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
    except OSError as error:
        raise UsageError(f"cannot lock {path} ({lock_path}): {error.strerror or error}") from None
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise ConfigError(f"{path} is being changed by another foldctl (it holds {lock_path} for more "
                                      f"than {timeout:g}s); nothing was appended: run the import again",
                                      file=str(path)) from None
                time.sleep(0.05)
        yield
    finally:
        os.close(fd)  # closing releases the lock


def append_checked(path: Path, block: str) -> None:
    """Append ``block`` to the plugins.toml at ``path`` if it brings no new problem, without losing an edit made
    meanwhile; ``ConfigError`` otherwise (see the module docstring)."""
    with config_lock(path):
        _append_unlocked(path, block)


def _append_unlocked(path: Path, block: str) -> None:
    for _attempt in range(ATTEMPTS):
        base = _read(path)  # the text the block goes after
        mode = path.stat().st_mode & 0o777 if base is not None else 0o600
        wanted = _joined(base or "", block)
        candidate, new = _new_problems(path, base, wanted)
        try:
            if new:
                raise ConfigError("the block was not appended: with it, " + "; ".join(new), file=str(path))
            swapped, late = _swap(path, candidate, base, mode)
        finally:
            candidate.unlink(missing_ok=True)
        if not swapped:  # edited since it was read: checked again, after that edit
            continue
        if late != base:  # an edit written into the replaced file in that instant: kept after the block
            _keep_late(path, wanted, base or "", late or "", mode)
        return
    raise ConfigError(f"{path} kept changing while the block was being appended (another program is editing it); "
                      "nothing was appended: run the import again once it is saved", file=str(path))


def _swap(path: Path, candidate: Path, expected: str | None, mode: int) -> tuple[bool, str | None]:
    """Rename ``candidate`` over ``path`` if ``path`` still holds ``expected``: ``(renamed, what the replaced file
    held just after the rename)`` — the replaced file is kept open across the rename to know it."""
    os.chmod(candidate, mode)
    try:
        old = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        old = None
    try:
        if _read(path) != expected:
            return False, None
        os.replace(candidate, path)
        return True, _read_fd(old) if old is not None else None
    finally:
        if old is not None:
            os.close(old)


def _keep_late(path: Path, ours: str, base: str, late: str, mode: int) -> None:
    """``path`` holds ``ours`` (``base`` and the block), and an edit appended to ``base`` went into the replaced
    file: append that edit to ``ours`` too, and again for any edit made meanwhile; else put it aside."""
    if not late.startswith(base):
        _lost(path, late)
    expected, tail = ours, late[len(base):]
    for _attempt in range(ATTEMPTS):
        candidate = _beside(path, expected + tail)
        try:
            swapped, again = _swap(path, candidate, expected, mode)
        finally:
            candidate.unlink(missing_ok=True)
        if not swapped:  # appended to after our rename: those lines stay, the late edit goes after them
            current = _read(path) or ""
            if not current.startswith(expected):
                _lost(path, base + tail)
            expected = current
            continue
        if again == expected:
            return
        if again is None or not again.startswith(expected):
            _lost(path, again or "")
        expected, tail = expected + tail, again[len(expected):]
    _lost(path, base + tail)


def _read_fd(fd: int) -> str:
    os.lseek(fd, 0, os.SEEK_SET)
    chunks = []
    while chunk := os.read(fd, 1 << 16):
        chunks.append(chunk)
    return b"".join(chunks).decode("utf-8", "replace")


def _lost(path: Path, text: str) -> NoReturn:
    """An edit that could not be merged: kept beside the file, and named in the error."""
    aside = path.with_name(f"{path.name}.edited-{os.getpid()}")
    aside.write_text(text, encoding="utf-8")
    raise ConfigError(f"the block was appended to {path}, but an edit made at the same moment could not be merged: "
                      f"the file as that edit left it is saved as {aside}; compare the two (then run the import "
                      "again if the block is missing)", file=str(path))
