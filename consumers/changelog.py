"""The change log consumer, type ``log`` (contract §12).

An append-only, human-readable log of accepted records: one entry per
record — who, when, what changed (per item: the op and, for a patch, each
field before → after) and why (the reasons the batch declared), revision and
event_seq. Markdown, or JSON Lines when the path ends in ``.jsonl``.
``checked`` records (the editor looked, nothing changed) are left out unless
``include_checked = true``: most cycles are checks, and they buried the changes.

Exactly one entry per record, also when records are handed over again (at
least once): the file itself says which event_seq it holds last (read from
its last 64 KiB only), so an entry already written is never written twice.
Each delivery is appended with one write and fsynced; a torn last entry (a
crash in the middle of that write) is cut back to the last complete entry
before anything is appended. Only a regular file is read or written: a path
naming a FIFO, a device (``/dev/zero``), a directory or a symbolic link fails
the delivery with a message.
"What changed" compares with the item's facts known from earlier records
(``ItemFacts``, kept in the consumer's memory and seeded with the state the
instance started at).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from pydantic import Field

from fold_core.hookspecs import hookimpl
from fold_core.files import append_file, check_regular_target, read_tail
from fold_core.plugin_api import Consumer, ConsumerContext
from fold_core.settings import ConfigPath, ConsumerSettings

from fold_consumers.briefing_render import md_escape
from fold_consumers.items import ItemFacts, declared_reasons, fact_diff, facts_of, record_changes

__all__ = ["ChangeLogConsumer", "ChangeLogSettings", "entry_of", "fold_consumer_types"]

MEMORY_KEY = "facts"
HEADER = "# Fold change log\n\n"
_MD_ENTRY = re.compile(rb"^## #(\d+) ", re.MULTILINE)
_TAIL = 1 << 16


def entry_of(record: Mapping[str, Any], absorbed: list | None) -> dict:
    """The JSON entry of one record (``absorbed``: ``ItemFacts.absorb``'s answer, None if unknown)."""
    entry = {"event_seq": record["event_seq"], "type": record["type"], "at": record["at"], "actor": record["actor"]}
    if record["type"] == "annotation":
        note = record["annotation"]
        entry["annotation"] = {"id": note["id"], "item": note["item"], "text": note["text"]}
        return entry
    entry.update(batch_id=record.get("batch_id"), revision=record.get("revision"),
                 previous_revision=record.get("previous_revision"))
    reasons = declared_reasons(record)
    if absorbed is None:  # counted before (the file lost its entry): earlier facts unknown
        absorbed = [(change, None, facts_of(change.image)) for change in record_changes(record)]
    changes = []
    for change, before, after in absorbed:
        image = change.image
        described = {"item": change.item, "op": change.op, "title": image.get("title"), "layer": change.layer,
                     "share": change.share}
        if change.op in ("created", "restored"):
            described.update(weight=image.get("weight"), kind=image.get("kind"), due_at=image.get("due_at"))
        elif change.op == "updated":
            fields = fact_diff(before, after)
            if "sources" in fields:  # compared by digest; shown by count
                fields["sources"] = [fields["sources"][0][0], fields["sources"][1][0]]
            described["fields"] = fields if before is not None else None  # None: earlier facts unknown
        elif change.op == "merged":
            described["merged_into"] = image.get("merged_into")
        elif change.op == "withdrawn" and image.get("withdrawn_with"):
            described["withdrawn_with"] = image.get("withdrawn_with")
        described["reason"] = reasons.get(change.item)
        changes.append(described)
    entry["changes"] = changes
    entry["acknowledged"] = [ack["annotation"] for ack in record.get("acks") or ()]
    return entry


def markdown(entry: Mapping[str, Any]) -> str:
    """One Markdown entry: a heading, then one line per change; ends with its only blank line."""
    seq, kind = entry["event_seq"], entry["type"]
    if kind == "annotation":
        note = entry["annotation"]
        lines = [f"## #{seq} · annotation {note['id']} on `{note['item']}`",
                 f"{entry['at']} · by {md_escape(entry['actor'])}"]
        lines += ["> " + md_escape(line) if line.strip() else ">" for line in note["text"].splitlines() or [""]]
        return "\n".join(lines) + "\n\n"
    revision = entry["revision"] if entry["revision"] == entry["previous_revision"] else \
        f"{entry['previous_revision']} → {entry['revision']}"
    lines = [f"## #{seq} · {kind} {md_escape(entry['batch_id'])} · revision {revision}",
             f"{entry['at']} · by {md_escape(entry['actor'])}"]
    for change in entry["changes"]:
        line = f"- {change['op']} `{change['item']}` {md_escape(change['title'])}"
        details = []
        if change["op"] in ("created", "restored"):
            details.append(f"{change['weight']} · {change['kind']} · share {change['share']}")
            if change.get("due_at"):
                details.append(f"due {change['due_at']}")
        elif change["op"] == "updated":
            fields = change.get("fields")
            if fields is None:
                details.append("(earlier facts unknown to this log)")
            for name, (old, new) in (fields or {}).items():
                details.append(f"{name} {md_escape(_short(old))} → {md_escape(_short(new))}")
        elif change["op"] == "merged":
            details.append(f"into `{change['merged_into']}`")
        elif change.get("withdrawn_with"):
            details.append(f"with `{change['withdrawn_with']}`")
        if change["layer"] is not None:
            details.append(f"under `{change['layer']}`")
        lines.append(line + (" — " + "; ".join(details) if details else ""))
        if change.get("reason"):
            lines.append(f"  why: {md_escape(change['reason'])}")
    for annotation in entry["acknowledged"]:
        lines.append(f"- acknowledged {annotation}")
    if kind == "checked":
        lines.append("- checked: no change")
    return "\n".join(lines) + "\n\n"


def _short(value: object) -> str:
    return "none" if value is None else str(value)


class ChangeLogSettings(ConsumerSettings):
    """``path``: the log file (``.jsonl`` → JSON Lines, anything else → Markdown); ``include_checked``."""

    path: ConfigPath
    include_checked: bool = Field(default=False, description="true: also an entry per `checked` record",
                                  examples=[True])


class ChangeLogConsumer(Consumer):
    """Appends one entry per accepted record to its file."""

    type_name: ClassVar[str] = "log"
    shares_records: ClassVar[bool] = True  # reads records, never changes them (no copy needed)
    Settings: ClassVar[type[ChangeLogSettings]] = ChangeLogSettings
    settings: ChangeLogSettings

    @property
    def jsonl(self) -> bool:
        return str(self.settings.path).lower().endswith(".jsonl")

    def begin(self, context: ConsumerContext) -> None:
        ItemFacts.from_document(context.state.document).save(context.memory, MEMORY_KEY)

    def deliver(self, records: Sequence[Mapping[str, Any]], context: ConsumerContext) -> None:
        facts = ItemFacts.load(context.memory, MEMORY_KEY)
        written = self._last_written()
        chunks = []
        for record in records:
            absorbed = facts.absorb(record)
            if record["event_seq"] <= written or (record["type"] == "checked" and not self.settings.include_checked):
                continue  # written already, or a check nobody asked to see
            entry = entry_of(record, absorbed)
            chunks.append(json.dumps(entry, ensure_ascii=False) + "\n" if self.jsonl else markdown(entry))
        if chunks:
            self._append("".join(chunks))
        if records:
            facts.save(context.memory, MEMORY_KEY)

    def _last_written(self) -> int:
        """The event_seq of the last complete entry in the file (0 for none); cuts a torn tail."""
        path = os.fspath(self.settings.path)
        tail, size = read_tail(path, _TAIL)  # a regular file only, and its end only
        if size == 0:
            return 0
        end = b"\n" if self.jsonl else b"\n\n"  # an entry holds no blank line but its last
        if tail and not tail.endswith(end):  # a torn write: cut back to the last complete entry
            kept = tail.rfind(end)
            kept = kept + len(end) if kept >= 0 else 0
            os.truncate(path, size - len(tail) + kept)
            tail = tail[:kept]
        if self.jsonl:
            lines = tail.rstrip(b"\n").rsplit(b"\n", 1)
            try:
                return int(json.loads(lines[-1])["event_seq"]) if lines[-1] else 0
            except (ValueError, KeyError, TypeError, RecursionError):
                return 0
        found = _MD_ENTRY.findall(tail)
        return int(found[-1]) if found else 0

    def _append(self, text: str) -> None:
        path = os.fspath(self.settings.path)
        fresh = not check_regular_target(path) or os.path.getsize(path) == 0
        append_file(path, ((HEADER if fresh and not self.jsonl else "") + text).encode("utf-8"))


@hookimpl
def fold_consumer_types() -> list[type[Consumer]]:
    return [ChangeLogConsumer]
