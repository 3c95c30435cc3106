"""The ``maildir`` and ``mbox`` adapter types: local mail, read-only (contract §10, §11.1).

A built-in plugin (``fold_adapters.mail.mailbox`` in ``fold_host.plugins.BUILTIN_PLUGINS``). Both
read the files directly and never write, lock or move anything. The same
message parsing as the ``email`` type (``fold_adapters.mail.mime``).

**maildir** (``path`` = a directory with ``cur/`` and ``new/``). The cursor
is by key: a maildir key begins with the time the message arrived in the
folder (``1728370000.M1P2.host``; a key of another shape uses the file's
mtime), so the cursor keeps ``mark`` (the newest arrival time handled) and
the keys handled within ``MARGIN`` seconds before it; a message is new when
it arrived after ``mark − MARGIN`` and its key is not among those. A
message moved from ``new/`` to ``cur/`` or given flags keeps its key and is
not observed again; one moved in from another folder gets a new key and is.
Ids: ``<source>:<key>``.

**mbox** (``path`` = a file). The cursor is a byte offset just after the
last message handled, with a digest of the bytes before it: a file that
shrank or whose bytes before the offset changed was rewritten (a mail
client compacted it), and the adapter re-baselines: it walks back from the
end to the newest message the ``seen`` cache knows and reads only what came
after it. The last message counts only when the file ends with a newline and
no writer holds a lock on it (fcntl, flock or a ``.lock`` file); otherwise it
waits for the next poll. Ids: the message's fingerprint (Message-ID, Date,
From, To, Subject) — stable when the file is rewritten — or, without a
Message-ID, a digest of its bytes.

A missing or unreadable path is ``Health.failed("io", …)``; first runs follow
``first_run`` (default ``last:50``) and say so.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, BinaryIO, ClassVar

from fold_adapters.mail.mbox import MboxFile
from fold_adapters.mail.source import FirstRun, MailSettings, SeenCache, Tally, observe
from fold_core.hookspecs import hookimpl
from fold_core.observation import Health, Poll
from fold_core.plugin_api import Adapter
from fold_core.settings import ConfigPath

__all__ = ["MaildirAdapter", "MboxAdapter"]

MARGIN = 300.0  # seconds: a delivery may finish (tmp → new) after a newer one
_KEY_TIME = re.compile(r"^(\d{9,11})(?:\.|$)")


class MaildirSettings(MailSettings):
    """``[[adapters]] type = "maildir"``: ``path`` is the maildir (with ``cur/`` and ``new/``)."""

    path: ConfigPath


class MboxSettings(MailSettings):
    """``[[adapters]] type = "mbox"``: ``path`` is the mbox file."""

    path: ConfigPath


def _io_failure(path: Any, error: OSError) -> Health:
    return Health.failed("io", f"{path}: cannot be read ({type(error).__name__}: {error.strerror or error})")


# -- maildir -------------------------------------------------------------------------------------------------


@dataclass
class _Entry:
    key: str
    path: str
    time: float  # arrival in the folder (the key's time, else the file's mtime)
    flags: str


class MaildirAdapter(Adapter):
    """A maildir folder → observations."""

    type_name: ClassVar[str] = "maildir"
    channel: ClassVar[str] = "email"
    Settings: ClassVar[type[MaildirSettings]] = MaildirSettings
    settings: MaildirSettings

    def poll(self, cursor: Any, *, now: datetime) -> Poll:
        root = str(self.settings.path)
        try:
            entries = _scan(root)
        except OSError as error:
            return Poll(cursor=cursor, health=_io_failure(root, error))
        notes: list[str] = []
        state = cursor if isinstance(cursor, dict) and "mark" in cursor else None
        if state is None:
            state = _maildir_start(self.settings.first_run_policy, entries, notes, root)
        mark = float(state.get("mark", 0.0))
        recent = set(state.get("recent", ()))
        seen, tally = SeenCache(state.get("seen", ())), Tally()
        candidates = sorted((e for e in entries.values() if e.time >= mark - MARGIN and e.key not in recent),
                            key=lambda e: (e.time, e.key))
        taken = candidates[:self.settings.max_per_poll]
        if len(candidates) > len(taken):
            notes.append(f"{len(candidates) - len(taken)} more message(s) wait for the next poll (max_per_poll)")
        observations: list = []
        for entry in taken:
            try:
                observations += self._observe(entry, root, seen, tally, now)
            except FileNotFoundError:
                entries.pop(entry.key, None)  # gone between the listing and the read: next poll looks again
                continue
            except OSError as error:
                return Poll(cursor=cursor, health=_io_failure(entry.path, error))
            recent.add(entry.key)
            mark = max(mark, entry.time)
        recent = {k for k in recent if k in entries and entries[k].time >= mark - MARGIN}
        return Poll(observations=observations, health=Health.ok(*(notes + tally.notes())),
                    cursor={"v": 1, "mark": mark, "recent": sorted(recent), "seen": seen.to_json()})

    def _observe(self, entry: _Entry, root: str, seen: SeenCache, tally: Tally, now: datetime) -> list:
        try:
            file = open(entry.path, "rb")
        except FileNotFoundError:  # a mail client moved it (new/ → cur/) or changed its flags
            file = open(_relocate(root, entry.key), "rb")
        with file:
            status = os.fstat(file.fileno())
            raw = _read_up_to(file, status.st_size, self.settings.max_message_bytes)
        mtime = datetime.fromtimestamp(status.st_mtime, tz=timezone.utc)
        size = status.st_size
        return observe(raw, seen=seen, tally=tally, source=self.name, native_id=entry.key, now=now,
                       full_size=size, fallback_at=mtime, fallback="mtime",
                       meta={"key": entry.key, "flags": entry.flags})


def _read_up_to(file, size: int, limit: int) -> bytes:
    """The first ``limit`` bytes of ``file`` (all of it when shorter).

    ``read(limit)`` allocates ``limit`` bytes (10 MB by default) for every
    message before shrinking the buffer; asking for the size ``fstat`` gave
    (plus one byte, to notice a file that grew since) costs a quarter of that.
    """
    if size >= limit:
        return file.read(limit)
    data = file.read(size + 1)
    if len(data) > size:  # it grew after fstat: read on, up to the limit, as read(limit) would
        data += file.read(limit - len(data))
    return data


def _scan(root: str) -> dict[str, _Entry]:
    entries: dict[str, _Entry] = {}
    for sub in ("new", "cur"):
        with os.scandir(os.path.join(root, sub)) as listing:
            for item in listing:
                if item.name.startswith("."):
                    continue
                key, _, info = item.name.partition(":")
                match = _KEY_TIME.match(key)
                try:
                    when = float(match.group(1)) if match else item.stat().st_mtime
                except FileNotFoundError:
                    continue
                entries[key] = _Entry(key, item.path, when, info[2:] if info.startswith("2,") else "")
    return entries


def _relocate(root: str, key: str) -> str:
    """Where ``key`` is now (a mail client moved it from new/ to cur/ or changed its flags)."""
    for sub in ("cur", "new"):
        with os.scandir(os.path.join(root, sub)) as listing:
            for item in listing:
                if item.name == key or item.name.startswith(key + ":"):
                    return item.path
    raise FileNotFoundError(key)


def _maildir_start(policy: FirstRun, entries: dict[str, _Entry], notes: list[str], root: str) -> dict:
    """The cursor a first run starts from: what the policy leaves out counts as already handled."""
    ordered = sorted(entries.values(), key=lambda e: (e.time, e.key))
    if policy.kind == "new":
        skipped = ordered
    elif policy.kind == "last":
        skipped = ordered[:max(len(ordered) - policy.last, 0)]
    else:
        since = policy.since_instant.timestamp()
        skipped = [e for e in ordered if e.time < since]
    notes.append(policy.describe(root, len(ordered), len(ordered) - len(skipped)))
    mark = max((e.time for e in skipped), default=0.0)
    return {"mark": mark, "recent": [e.key for e in skipped if e.time >= mark - MARGIN], "seen": []}


# -- mbox ----------------------------------------------------------------------------------------------------


class MboxAdapter(Adapter):
    """An mbox file → observations."""

    type_name: ClassVar[str] = "mbox"
    channel: ClassVar[str] = "email"
    Settings: ClassVar[type[MboxSettings]] = MboxSettings
    settings: MboxSettings

    def poll(self, cursor: Any, *, now: datetime) -> Poll:
        path = str(self.settings.path)
        try:
            with open(path, "rb") as file:
                return self._poll(file, path, cursor, now)
        except OSError as error:
            return Poll(cursor=cursor, health=_io_failure(path, error))

    def _poll(self, file: BinaryIO, path: str, cursor: Any, now: datetime) -> Poll:
        mbox = MboxFile(file, path)
        try:
            return self._read(mbox, path, cursor, now)
        finally:
            mbox.close()

    def _read(self, mbox, path: str, cursor: Any, now: datetime) -> Poll:
        notes: list[str] = []
        state = cursor if isinstance(cursor, dict) and "offset" in cursor else None
        seen, tally = SeenCache((state or {}).get("seen", ())), Tally()
        if state is not None and not mbox.continues(int(state["offset"]), state.get("tail", "")):
            start = mbox.after_seen(seen)
            if start is None:
                start = mbox.first_run(self.settings.first_run_policy, notes, "the rewritten " + path)
            notes.insert(0, f"{path} was rewritten since the last poll (it shrank or its earlier bytes changed); "
                            f"re-baselined after the newest message already observed")
        elif state is None:
            start = mbox.first_run(self.settings.first_run_policy, notes, path)
        else:
            start = int(state["offset"])
        spans = mbox.messages(start)
        taken = spans[:self.settings.max_per_poll]
        if len(spans) > len(taken):
            notes.append(f"{len(spans) - len(taken)} more message(s) wait for the next poll (max_per_poll)")
        if mbox.waiting:
            notes.append("the last message is still being written (the file is locked or has no final "
                         "newline); it is read next poll")
        observations: list = []
        limit = self.settings.max_message_bytes
        for span in taken:
            raw, envelope, whole = mbox.message(span, limit)
            observations += observe(raw, seen=seen, tally=tally, source=self.name, native_id=None, now=now,
                                    full_size=whole, fallback_at=envelope or mbox.mtime,
                                    fallback="envelope" if envelope else "mtime", meta={"offset": span.start})
        offset = taken[-1].end if taken else start
        return Poll(observations=observations, health=Health.ok(*(notes + tally.notes())),
                    cursor={"v": 1, "offset": offset, "tail": mbox.tail(offset), "seen": seen.to_json()})


@hookimpl
def fold_adapter_types():
    return [MaildirAdapter, MboxAdapter]
