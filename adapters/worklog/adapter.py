"""The ``worklog`` adapter: a directory of AI-agent work logs (contract §10, §11.1).

Settings (``[[adapters]] type = "worklog"``): ``path`` — the directory; its
``*.jsonl`` and ``*.md`` files are read (not sub-directories). ``max_read``
(default 8 MiB) bounds what one poll reads of one file; the rest waits for
the next poll. The formats are in ``fold_adapters.worklog.formats``.
``answers`` (optional) is a file the host appends one JSON line to per
answer or fallback to a question of this log (``fold_host.cycle.answers_file``);
the adapter itself never writes.

The cursor keeps, per file name, a byte offset and the line number there,
the file's device and inode, a fingerprint of its first bytes, and a
generation number:

* only complete lines are read: a last line without its newline stays in the
  file until it ends;
* a file whose inode changed (rotated: moved away, a new one created) or that
  got shorter than the offset or whose first bytes changed (truncated or
  rewritten) is read again from its start, as a new generation, and a health
  note says so. If the old inode is still in the directory under another name
  (``agent.jsonl.1``), its unread rest is read first — a log rotated between two
  polls loses nothing;
* Markdown: an entry followed by another entry is complete; the file's last
  entry is observed as soon as its lines end, and if more lines are added to it
  later it is observed again as a new version (``…#<line>.v2``).

Observation ids: ``<name>:<file>#<line>`` (``<file>~<generation>`` after a
rotation), the line being the record's (or the entry's first) line, 1-based.
A bad line is reported in the health notes and skipped; it never blocks the
lines after it. Nothing raises out of ``poll``.

``max_per_hour`` (default 120, as ``[mcp] max_reports_per_hour``) bounds what
one agent (a record's ``agent``, else the file's name) adds per clock hour
(UTC, by the poll's time): lines beyond it are read past and not observed, and
the health notes say how many per agent — an agent writing in a loop cannot
flood the inbox and the editor's windows. The counts live in the cursor.
"""

from __future__ import annotations

import hashlib
import os
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pydantic import Field

from fold_adapters.text.clean import cut_line
from fold_adapters.worklog.formats import read_record, split_markdown
from fold_core.hookspecs import hookimpl
from fold_core.observation import Health, Observation, Poll, bound_text
from fold_core.plugin_api import Adapter
from fold_core.settings import AdapterSettings, ConfigPath

__all__ = ["WorklogAdapter", "WorklogSettings"]

CURSOR_VERSION = 1
HEAD_BYTES = 64
SUFFIXES = (".jsonl", ".md")
RETIRED_LIMIT = 500
NOTE_LIMIT = 20
AGENTS_COUNTED = 1000  # agents whose hourly counts the cursor keeps (the busiest)


class WorklogSettings(AdapterSettings):
    path: ConfigPath
    max_read: int = Field(default=8 * 1024 * 1024, ge=4096, le=1024 * 1024 * 1024)
    max_per_hour: int = Field(default=120, ge=1, le=100_000)
    answers: ConfigPath | None = None  # the host appends the answers to this log's questions here


class WorklogAdapter(Adapter):
    """Records and entries of the work logs in one directory; see the module docstring."""

    type_name = "worklog"
    channel = "worklog"
    Settings = WorklogSettings
    settings: WorklogSettings

    def poll(self, cursor: Any, *, now: datetime) -> Poll:
        try:
            return self._poll(_load_cursor(cursor), now)
        except Exception as error:  # the boundary: a source never crashes the host
            return Poll(cursor=cursor if isinstance(cursor, dict) else None,
                        health=Health.failed("adapter", f"reading {self.settings.path} failed: "
                                                        f"{type(error).__name__}: {error}"))

    def _poll(self, state: dict, now: datetime) -> Poll:
        directory = Path(self.settings.path)
        try:
            listing = {entry.name: entry.stat() for entry in os.scandir(directory) if entry.is_file()}
        except OSError as error:
            return Poll(cursor=state, health=Health.failed(
                "unavailable", f"cannot read the work-log directory {directory}: {error.strerror or error}"))
        self.notes: list[str] = []
        self.observations: list[Observation] = []
        self.now = now.isoformat()
        hour = now.astimezone(timezone.utc).strftime("%Y-%m-%dT%H")
        given = state.get("hour") or {}
        self.counts: dict[str, int] = dict(given.get("counts") or {}) if given.get("at") == hour else {}
        self.over: dict[str, int] = {}
        old, retired = state["files"], dict(state["retired"])
        files = self._match_files(directory, listing, old, retired)
        for name, file_state in files.items():
            files[name] = self._read(directory / name, name, file_state, listing[name])
        for agent, skipped in sorted(self.over.items(), key=lambda pair: -pair[1]):
            self.notes.insert(0, f"{skipped} line(s) from {cut_line(agent, 64)!r} skipped: more than max_per_hour "
                                 f"({self.settings.max_per_hour}) this hour")
        if len(self.notes) > NOTE_LIMIT:
            self.notes[NOTE_LIMIT:] = [f"… and {len(self.notes) - NOTE_LIMIT} more notes"]
        retired = dict(list(retired.items())[-RETIRED_LIMIT:])
        counts = dict(sorted(self.counts.items(), key=lambda pair: -pair[1])[:AGENTS_COUNTED])
        cursor = {"v": CURSOR_VERSION, "files": files, "retired": retired, "hour": {"at": hour, "counts": counts}}
        return Poll(observations=self.observations, cursor=cursor, health=Health.ok(*self.notes))

    def _match_files(self, directory: Path, listing: dict, old: dict, retired: dict) -> dict[str, dict]:
        """The state to read each listed log from: kept, adopted after a rename, or fresh after a rotation."""
        by_inode = {(s["dev"], s["ino"]): name for name, s in old.items()}
        files: dict[str, dict] = {}
        used: set[str] = set()
        for name in sorted(n for n in listing if n.endswith(SUFFIXES)):
            inode = (listing[name].st_dev, listing[name].st_ino)
            known, moved = old.get(name), by_inode.get(inode)
            if known is not None and (known["dev"], known["ino"]) == inode:
                files[name] = known
                used.add(name)
            elif moved is not None and moved not in used and not _same_file(listing.get(moved), old[moved]):
                files[name] = {**old[moved], "label": _label(old[moved], moved)}
                used.add(moved)
                self.notes.append(f"{moved} was renamed to {name}; reading on where it stopped")
            else:
                generation = max(known["gen"] if known else -1, retired.pop(name, -1)) + 1
                if known is not None:
                    self.notes.append(f"{name} was replaced (rotated); reading the new file from its start")
                files[name] = _fresh(listing[name], generation)
        for name, known in old.items():  # tracked logs that were moved away or deleted
            if name not in used:
                self._finish_rotated(name, known, listing, directory)
                if name not in files:
                    retired[name] = known["gen"]
        return files

    # -- one file ----------------------------------------------------------------

    def _read(self, path: Path, name: str, file_state: dict, st: os.stat_result, rest_only: bool = False) -> dict:
        """Read what is new in ``path`` from ``file_state``; return the new state."""
        try:
            with open(path, "rb") as handle:
                if not rest_only and _changed_under_us(handle, file_state, st):
                    self.notes.append(f"{name} was truncated or rewritten; reading it again from the start")
                    file_state = {**_fresh(st, file_state["gen"] + 1), "label": _label(file_state, name)}
                handle.seek(file_state["offset"])
                data = handle.read(self.settings.max_read)
                full = len(data) == self.settings.max_read
                file_state, data = self._skip_long_line(name, file_state, data, full)
                end = data.rfind(b"\n")
                if end >= 0:
                    reader = self._read_markdown if _label(file_state, name).endswith(".md") else self._read_jsonl
                    file_state = reader(name, file_state, data[:end], full)
                if not rest_only:
                    file_state = {**file_state, **_fingerprints(handle, file_state["offset"])}
        except OSError as error:
            self.notes.append(f"cannot read {name}: {error.strerror or error}")
        return file_state

    def _skip_long_line(self, name: str, file_state: dict, data: bytes, full: bool) -> tuple[dict, bytes]:
        """Drop the rest of a line longer than ``max_read``; start skipping one that does not end in ``data``."""
        if file_state.get("skip"):
            newline = data.find(b"\n")
            if newline < 0:
                return {**file_state, "offset": file_state["offset"] + len(data)}, b""
            file_state = {**file_state, "offset": file_state["offset"] + newline + 1,
                          "line": file_state["line"] + 1, "skip": False, "open": None}
            data = data[newline + 1:]
        if full and b"\n" not in data:
            self.notes.append(f"{name} line {file_state['line'] + 1} is longer than {len(data):,} bytes; skipped")
            return {**file_state, "offset": file_state["offset"] + len(data), "skip": True, "open": None}, b""
        return file_state, data

    def _read_jsonl(self, name: str, file_state: dict, data: bytes, full: bool) -> dict:
        line_no = file_state["line"]
        for raw in data.split(b"\n"):
            line_no += 1
            text = _decode(raw)
            if not text.strip():
                continue
            record = read_record(text)
            if record.problem:
                self.notes.append(f"{name} line {line_no}: {record.problem}; skipped")
                continue
            meta = {**record.meta, "file": name, "line": line_no}
            if "\ufffd" in text and b"\xef\xbf\xbd" not in raw:
                meta["invalid_utf8"] = True
            self._observe(file_state, line_no, 1, sender=record.agent or Path(_label(file_state, name)).stem,
                          agent_unknown=record.agent is None, at=record.at,
                          title=record.task or _first_line(record.text), text=record.text, url=record.url,
                          thread=f"question:{record.question}" if record.question else record.task, meta=meta)
        return {**file_state, "offset": file_state["offset"] + len(data) + 1, "line": line_no}

    def _read_markdown(self, name: str, file_state: dict, data: bytes, full: bool) -> dict:
        raw_lines = data.split(b"\n")
        offsets, position = [], file_state["offset"]
        for raw in raw_lines:
            offsets.append(position)
            position += len(raw) + 1
        entries, headings = split_markdown([_decode(raw) for raw in raw_lines], file_state.get("headings", False))
        opened, new_open = file_state.get("open"), None
        for entry in entries:
            line_no = file_state["line"] + entry.line + 1
            digest = _digest("\n".join(entry.lines).strip().encode())
            revision, emit = 1, True
            if opened and entry.line == 0 and opened["line"] == line_no:
                revision, emit = (opened["rev"], False) if opened["digest"] == digest else (opened["rev"] + 1, True)
            if emit:
                title, text, at, meta = entry.title_text_at()
                meta.update({"file": name, "line": line_no})
                if revision > 1:
                    meta["revision"] = revision
                self._observe(file_state, line_no, revision, sender=Path(_label(file_state, name)).stem,
                              agent_unknown=False, at=at, title=title or None, text=text, url=None, thread=None,
                              meta=meta)
            if entry is entries[-1] and not entry.closed and not full:
                new_open = {"line": line_no, "digest": digest, "rev": revision, "offset": offsets[entry.line]}
        if new_open is not None:  # the last entry may still grow: read it again next time
            return {**file_state, "offset": new_open.pop("offset"), "line": new_open["line"] - 1,
                    "headings": headings, "open": new_open}
        return {**file_state, "offset": position, "line": file_state["line"] + len(raw_lines),
                "headings": headings, "open": None}

    def _observe(self, file_state: dict, line_no: int, revision: int, *, sender: str, agent_unknown: bool,
                 at: str | None, title: str | None, text: str, url: str | None, thread: str | None,
                 meta: dict) -> None:
        sender = cut_line(sender, 200)
        if self.counts.get(sender, 0) >= self.settings.max_per_hour:  # read past, never observed
            self.over[sender] = self.over.get(sender, 0) + 1
            return
        self.counts[sender] = self.counts.get(sender, 0) + 1
        label = _label(file_state, meta["file"])
        native = f"{label}~{file_state['gen']}" if file_state["gen"] else label
        native = cut_line(native, 400) + f"#{line_no}" + (f".v{revision}" if revision > 1 else "")
        if at is None:
            meta["at_unknown"] = True
        if agent_unknown:
            meta["agent_unknown"] = True
        self.observations.append(Observation(
            id=f"{self.name}:{native}", source=self.name, channel=self.channel,
            sender=sender or None, at=at, observed_at=self.now, title=title, text=bound_text(text),
            url=url, thread=cut_line(thread, 1000) if thread else None, meta=meta))

    def _finish_rotated(self, name: str, known: dict, listing: dict, directory: Path) -> None:
        """Read the unread rest of a tracked log that now lives under a name that is not read (``x.jsonl.1``)."""
        for other, st in listing.items():
            if _same_file(st, known) and not other.endswith(SUFFIXES):
                self.notes.append(f"{name} was rotated to {other}; its last lines were read from there")
                self._read(directory / other, other, {**known, "label": _label(known, name)}, st, rest_only=True)
                return


def _label(file_state: dict, name: str) -> str:
    """The name a log's ids use: the name it had when first read (kept across renames)."""
    return file_state.get("label") or name


def _same_file(st: os.stat_result | None, file_state: dict) -> bool:
    return st is not None and (st.st_dev, st.st_ino) == (file_state["dev"], file_state["ino"])


def _fresh(st: os.stat_result, generation: int) -> dict:
    return {"dev": st.st_dev, "ino": st.st_ino, "offset": 0, "line": 0, "gen": generation}


def _fingerprints(handle, offset: int) -> dict:
    """Digests of the first bytes and of the bytes just before ``offset`` (truncation/rewrite detection)."""
    handle.seek(0)
    head = handle.read(min(HEAD_BYTES, offset))
    start = max(0, offset - HEAD_BYTES)
    handle.seek(start)
    tail = handle.read(offset - start)
    return {"head": _digest(head), "tail": _digest(tail)}


def _changed_under_us(handle, file_state: dict, st: os.stat_result) -> bool:
    offset = file_state["offset"]
    if st.st_size < offset:
        return True
    if offset == 0 or "head" not in file_state:
        return False
    return _fingerprints(handle, offset) != {"head": file_state["head"], "tail": file_state["tail"]}


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:16]


def _decode(raw: bytes) -> str:
    return raw.rstrip(b"\r").decode("utf-8", errors="replace")


def _first_line(text: str) -> str:
    return cut_line(text.split("\n", 1)[0], 120)


def _load_cursor(cursor: Any) -> dict:
    """The cursor as the host gave it back; unreadable parts are dropped (those files are read again)."""
    given = cursor if isinstance(cursor, dict) and cursor.get("v") == CURSOR_VERSION else {}
    files = {name: state for name, state in (given.get("files") or {}).items()
             if isinstance(state, dict) and all(isinstance(state.get(key), int) and state[key] >= 0
                                                for key in ("dev", "ino", "offset", "line", "gen"))
             } if isinstance(given.get("files"), dict) else {}
    for name, state in files.items():
        opened = state.get("open")
        if not (isinstance(opened, dict) and isinstance(opened.get("line"), int)
                and isinstance(opened.get("digest"), str) and isinstance(opened.get("rev"), int)):
            files[name] = {**state, "open": None}
    retired = {name: gen for name, gen in (given.get("retired") or {}).items() if isinstance(gen, int)
               } if isinstance(given.get("retired"), dict) else {}
    hour = given.get("hour")
    counted = {}
    if isinstance(hour, dict) and isinstance(hour.get("at"), str) and isinstance(hour.get("counts"), dict):
        counted = {"at": hour["at"], "counts": {agent: count for agent, count in hour["counts"].items()
                                                 if isinstance(agent, str) and isinstance(count, int) and count >= 0}}
    return {"v": CURSOR_VERSION, "files": files, "retired": retired, "hour": counted}


@hookimpl
def fold_adapter_types() -> list[type[Adapter]]:
    return [WorklogAdapter]
