"""The answers file of a work-log instance: the asker hears back without MCP (contract §10, §11.1).

A ``[[adapters]] type = "worklog"`` instance with ``answers = "PATH"`` gets
one JSON line per answer or fallback to a question it carried (an answer's
``asked_by.source`` is the instance)::

    {"question_id": "q-17", "status": "answered", "option": "mitigate", "note": "先止血",
     "at": "2026-12-08T10:00:00+08:00", "item": "auth"}

``status`` is ``answered`` or ``fell_back``; a change of mind is one more
line (the last line of a question stands). Each line is appended with one
write and fsynced (``fold_core.files.append_file``). Never twice, also across
a crash: the ledger in host.db (``host_meta`` ``answers_file:<instance>``:
the answers written, and the one being written with the file's size before
it) is written before the append and marked after it, each in its own
transaction; a host that died between the two finds the line at that offset
and only marks it, or appends it when the file does not hold it. A file that
cannot be written is reported and tried again at the next cycle; it never
stops the cycle.
"""

from __future__ import annotations

import json
import os

from fold_core.files import append_file, read_tail
from fold_host.cycle.questions import answer_events
from fold_host.hostdb import HostDB

__all__ = ["LEDGER_PREFIX", "answer_line", "route_answers"]

LEDGER_PREFIX = "answers_file:"
TAIL = 1 << 20


def answer_line(event: dict) -> bytes:
    """The line one answer or fallback is written as."""
    question = event["asked_by"]
    line = {"question_id": question["question_id"],
            "status": "answered" if event["meaning"] == "decide" else "fell_back",
            "option": event["option"], "note": event["note"], "at": event["at"], "item": event["item"]}
    return (json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")


def route_answers(db: HostDB, adapters, *, now_text: str) -> list[str]:
    """Append the answers not written yet to every answers file; the problems, one line each."""
    targets = [(instance.name, os.fspath(instance.settings.answers)) for instance, _ in adapters
               if getattr(instance.settings, "answers", None)]
    if not targets:
        return []
    events = [event for event in answer_events(db) if isinstance(event.get("asked_by"), dict)]
    problems = []
    for name, path in targets:
        mine = [event for event in events if event["asked_by"].get("source") == name]
        try:
            _write(db, name, path, mine)
        except OSError as error:
            problems.append(f"answers file of {name} ({path}): {error.strerror or error}")
    return problems


def _write(db: HostDB, name: str, path: str, events: list[dict]) -> None:
    key = LEDGER_PREFIX + name
    ledger = db.meta(key) or {"written": [], "writing": None}
    written = set(ledger["written"])
    if ledger.get("writing"):  # a host died between the append and its mark: is the line there?
        writing = ledger["writing"]
        line = writing["line"].encode("utf-8")
        if not _holds(path, writing["size"], line):
            append_file(path, line)
        written.add(writing["observation"])
        ledger = {"written": sorted(written), "writing": None}
        db.set_meta(key, ledger)
    for event in events:
        if event["observation"] in written:
            continue
        line = answer_line(event)
        _, size = read_tail(path, 0)
        db.set_meta(key, {"written": sorted(written), "writing": {"observation": event["observation"],
                                                                  "size": size, "line": line.decode("utf-8")}})
        append_file(path, line)
        written.add(event["observation"])
        db.set_meta(key, {"written": sorted(written), "writing": None})


def _holds(path: str, offset: int, line: bytes) -> bool:
    """Whether the file holds ``line`` at ``offset`` (where it would have been appended)."""
    tail, size = read_tail(path, TAIL)
    start = size - len(tail)
    if offset < start or size < offset + len(line):
        return False
    return tail[offset - start:offset - start + len(line)] == line
