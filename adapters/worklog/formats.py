"""What a work-log file says: JSON Lines records and Markdown entries (contract §10).

JSON Lines (``*.jsonl``): one JSON object per line.

=========  ========  ==========================================================
key        required  meaning
=========  ========  ==========================================================
``at``     yes       when it happened: ISO 8601 with an offset
                     (``2026-10-09T08:30:00+08:00``); missing or unreadable →
                     the observation's ``at`` is null and ``meta.at_unknown``
``agent``  yes       who wrote it (an agent's name) → ``from``; missing → the
                     file's stem, and ``meta.agent_unknown``
``text``   yes       what happened (a non-empty string) → ``text``; a record
                     without it is reported and skipped
``task``   no        the task it belongs to → ``title`` and ``thread``
``status`` no        e.g. ``started``, ``done``, ``failed``, ``blocked`` → ``meta.status``
``ref``    no        a pointer (commit, PR, path, URL) → ``meta.ref``; an
                     http(s) URL is also the observation's ``url``
=========  ========  ==========================================================

A line with ``"type": "question"`` is an agent's question to the user
(``fold_adapters.worklog.question``): ``id``, ``agent``, ``question``,
``options`` and the other keys of a decision frame instead of ``text``.

Other keys are ignored. A line that is not a JSON object (also one nested too
deeply to decode) is reported in the poll's health notes and skipped; it never
blocks the lines after it.

Markdown (``*.md``): one observation per **top-level entry**:

* a line starting with ``## `` (a level-2 heading, at column 0) begins an
  entry: the heading is its title, the lines under it (sub-headings and lists
  included) its text, up to the next ``## `` or ``# `` line;
* in a file with no ``## `` heading so far, a list item at column 0
  (``- ``, ``* ``, ``+ ``, ``1. ``, ``1) ``) begins an entry: its first line is
  the title, the item with its continuation lines the text;
* a ``# `` (level-1) heading ends the entry before it and is not an entry;
  lines before the first entry are not entries; nothing inside a fenced code
  block (```` ``` ```` / ``~~~``) begins an entry;
* a timestamp at the start of the title (``2026-10-09T08:30+08:00 …``) is the
  entry's ``at`` when it has an offset; otherwise ``at`` is null and the time
  as written is kept in ``meta.time``; either way the title is what follows
  the timestamp (unless nothing does). The text keeps the line as written.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from fold_adapters.text.clean import clean_text
from fold_adapters.text.clean import cut_line
from fold_adapters.worklog.question import QuestionProblem, read_question
from fold_core.timefmt import parse_instant

__all__ = ["MdEntry", "Record", "read_record", "split_markdown"]

TITLE_CHARS = 300
_LIST_ITEM = re.compile(r"^(?:[-*+]|\d{1,9}[.)])[ \t]+")
_FENCE = re.compile(r"^\s{0,3}(```|~~~)")
_STAMP = re.compile(r"^\[?(\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?)?(Z|[+-]\d{2}:?\d{2})?)\]?"
                    r"[\s:—–-]*")


@dataclass
class Record:
    """One readable JSON Lines record, or ``problem`` saying why it is not."""

    text: str = ""
    agent: str | None = None
    at: str | None = None
    task: str | None = None
    url: str | None = None
    meta: dict[str, Any] = field(default_factory=dict)
    problem: str | None = None
    question: str | None = None  # a question line: the agent's id of it


def read_record(line: str) -> Record:
    try:
        value = json.loads(line)
    except ValueError as error:
        return Record(problem=f"not JSON ({cut_line(str(error), 120)})")
    except RecursionError:  # ``[[[[…`` a thousand deep: the decoder gives up, this line alone is bad
        return Record(problem="not JSON (nested too deeply to read)")
    if not isinstance(value, dict):
        return Record(problem=f"expected a JSON object, found {type(value).__name__}")
    if value.get("type") == "question":
        return _question(value)
    text = value.get("text")
    if not isinstance(text, str) or not clean_text(text):
        return Record(problem='no "text" (a non-empty string)')
    meta: dict[str, Any] = {}
    at = value.get("at")
    if not (isinstance(at, str) and parse_instant(at)):
        at, meta["at_unknown"] = None, True
        if value.get("at") is not None:
            meta["time"] = cut_line(str(value.get("at")), 64)
    agent = value.get("agent")
    agent = cut_line(agent, 200) if isinstance(agent, str) else ""
    task = cut_line(value["task"], TITLE_CHARS) if isinstance(value.get("task"), str) else None
    if isinstance(value.get("status"), str):
        meta["status"] = cut_line(value["status"], 64)
    url = None
    if isinstance(value.get("ref"), str) and value["ref"].strip():
        meta["ref"] = cut_line(value["ref"], 1000)
        if meta["ref"].lower().startswith(("http://", "https://")) and " " not in meta["ref"]:
            url = meta["ref"]
    return Record(text=clean_text(text), agent=agent or None, at=at, task=task or None, url=url, meta=meta)


def _question(value: dict) -> Record:
    """A question line (``fold_adapters.worklog.question``): its frame checked, or the why of its refusal."""
    try:
        title, text, meta = read_question(value)
    except QuestionProblem as problem:
        return Record(problem=f"a question refused ({problem.field}): {cut_line(str(problem), 300)}")
    at = value.get("at")
    if not (isinstance(at, str) and parse_instant(at)):
        at, meta["at_unknown"] = None, True
    if isinstance(value.get("status"), str):  # "blocked": the agent's own word, as on a report line
        meta["status"] = cut_line(value["status"], 64)
    return Record(text=text, agent=cut_line(value["agent"], 200), at=at, task=cut_line(title, TITLE_CHARS),
                  meta=meta, question=meta["question_id"])


@dataclass
class MdEntry:
    line: int  # index of its first line in the lines given to split_markdown
    lines: list[str]
    closed: bool = False  # a later boundary (entry or level-1 heading) was seen

    def title_text_at(self) -> tuple[str, str, str | None, dict]:
        first = self.lines[0]
        if first.startswith("##"):
            title, body = first.lstrip("#").strip(), "\n".join(self.lines[1:])
        else:
            marker = _LIST_ITEM.match(first)
            title = first[marker.end():] if marker else first
            body = "\n".join([title] + self.lines[1:])
        meta: dict[str, Any] = {}
        at = None
        stamp = _STAMP.match(title)
        if stamp and len(stamp.group(1)) >= 10:
            moment = parse_instant(stamp.group(1).replace(" ", "T"))
            if moment is not None:
                at = moment.isoformat()
            else:
                meta["time"] = stamp.group(1)
            rest = title[stamp.end():].strip()
            if rest:  # the time is in ``at`` (or meta.time): the title says what happened
                title = rest
        text = clean_text(body) or clean_text(title)
        return cut_line(title, TITLE_CHARS), text, at, meta


def split_markdown(lines: list[str], headings: bool) -> tuple[list[MdEntry], bool]:
    """The top-level entries among ``lines`` (see the module docstring) and the updated headings flag."""
    entries: list[MdEntry] = []
    current: MdEntry | None = None
    in_fence = False
    for index, line in enumerate(lines):
        if _FENCE.match(line):
            in_fence = not in_fence
        elif not in_fence:
            starts = line.startswith("## ") or line.rstrip() == "##"
            if starts:
                headings = True
            elif line.startswith("# ") or line.rstrip() == "#":
                if current is not None:
                    current.closed = True
                current = None
                continue
            elif not headings and _LIST_ITEM.match(line):
                starts = True
            if starts:
                if current is not None:
                    current.closed = True
                current = MdEntry(index, [line])
                entries.append(current)
                continue
        if current is not None:
            current.lines.append(line)
    return entries, headings
