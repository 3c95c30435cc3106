"""The briefing (contract §12, §11.2 ``foldctl brief``).

``build_briefing`` turns a §8 state document, the records of a "since" window
and the per-source coverage into the briefing document
(``schema: fold.briefing/1``); ``briefing_render`` lays it out as Markdown or
plain text. Rules:

* active items in rank order per layer; critical and high show title,
  summary, kind and due; normal shows title and summary; low shows the title;
  trace items are folded into one line with their ids (a trace item that has
  active children stays an entry, so its children have a place to hang);
  children are nested under their parent;
* summaries are never cut; every entry keeps its id;
* overdue (``until_due`` < 0) and stale (``until_stale`` < 0) come from the
  time projection and only mark an item, never hide it;
* "since the last briefing": created / updated / restored / withdrawn /
  merged items and acknowledged annotations, read from the records of the
  window (each item once, under what it ended as);
* coverage per source, so that silence is not read as "nothing happened";
* ``editor`` (only when it could not be reached): for how many windows, and
  whether the baseline editor is standing in for it.

The ``briefing`` consumer rewrites its file atomically after each delivery.
Its "since" window is ``since`` long (default ``24h``: the morning file
says what happened overnight, though the file is rewritten at every
delivery): the consumer keeps a compact form of each delivered record
(``compact_record``: what the window needs, not the item texts) in its
memory, drops those older than the window at each delivery, and builds the
window from them. ``since = "last"`` keeps the window to the records of the
delivery itself. It writes only a regular file: a path naming a FIFO, a
device, a directory or a symbolic link fails the delivery with a message and
is left as it is.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from datetime import timedelta
from typing import Any, ClassVar, Literal

from fold_core.hookspecs import hookimpl
from fold_core.files import replace_file
from fold_core.plugin_api import Consumer, ConsumerContext
from fold_core.settings import ConfigPath, ConsumerSettings, Duration
from fold_core.timefmt import instant

from fold_consumers.briefing_render import render
from fold_consumers.items import declared_reasons, record_changes, walk_items

__all__ = ["BriefingConsumer", "BriefingSettings", "build_briefing", "compact_record", "fold_consumer_types",
           "write_atomically"]

SCHEMA = "fold.briefing/1"
FULL = ("critical", "high")
WINDOW_KEY = "window"  # the consumer's memory: the compact records of its "since" window
WINDOW_LIMIT = 5000  # records kept at most, whatever the window's length (a bound on the memory's size)
IMAGE_FIELDS = ("status", "merged_into", "title", "weight", "kind", "parent", "reason", "withdrawn_with")


def build_briefing(document: Mapping[str, Any], *, records: Sequence[Mapping[str, Any]] | None = None,
                   since: int | None = None, coverage: Sequence[Mapping[str, Any]] | None = None,
                   timezone: str = "UTC", language: str = "en", editor: Mapping[str, Any] | None = None,
                   compacted: Sequence[Mapping[str, Any]] | None = None,
                   span: Mapping[str, Any] | None = None) -> dict:
    """The briefing document; ``since`` = the event_seq the window starts after (None: no window).

    :param compacted: the window's records already in ``compact_record`` form (instead of ``records``).
    :param span: a window of time: ``{"span": "24h", "from": instant}``, shown beside the event numbers.
    """
    brief = {"schema": SCHEMA, "now": document["now"], "timezone": timezone, "language": language,
             "revision": document["revision"], "event_seq": document["event_seq"], "budget": document["budget"],
             "root": _layer(document["root"])}
    entries = list(compacted) if compacted is not None else [compact_record(record) for record in records or ()]
    brief["since"] = None if since is None else _since(entries, since, document)
    if brief["since"] is not None and span is not None:
        brief["since"].update(span=span["span"], from_at=span["from"])
    brief["pending_annotations"] = [
        {"id": note["id"], "item": note["resolved_item"], "author": note["author"], "text": note["text"],
         "created_at": note["created_at"]}
        for note in document.get("pending_annotations") or ()]
    brief["coverage"] = None if coverage is None else [_source(entry) for entry in coverage]
    if editor:
        brief["editor"] = {key: editor.get(key) for key in ("type", "windows", "since", "error", "fallback")}
    return brief


def _layer(layer: Mapping[str, Any]) -> dict:
    entries, trace = [], []
    for view in layer.get("items") or ():
        if view["weight"] == "trace" and not view.get("children"):
            trace.append(view)
        else:
            entries.append(_entry(view))
    folded = None
    if trace:
        folded = {"count": len(trace), "ids": [view["id"] for view in trace],
                  "overdue": [view["id"] for view in trace if _negative(view.get("until_due"))],
                  "stale": [view["id"] for view in trace if _negative(view.get("until_stale"))]}
    return {"budget": layer["budget"], "used": layer["used"], "free": layer["free"], "entries": entries,
            "trace": folded}


def _entry(view: Mapping[str, Any]) -> dict:
    weight = view["weight"]
    entry = {"id": view["id"], "rank": view["rank"], "weight": weight, "share": view["share"],
             "title": view["title"]}
    if weight in FULL or weight == "normal":
        entry["summary"] = view.get("summary")
    if weight in FULL:
        entry["kind"] = view["kind"]
        entry["due_at"] = view.get("due_at")
    overdue, stale = _negative(view.get("until_due")), _negative(view.get("until_stale"))
    if weight in FULL or overdue:
        entry["until_due"] = view.get("until_due")
    entry["overdue"] = overdue
    entry["stale"] = stale
    if stale:
        entry["until_stale"] = view.get("until_stale")
    children = view.get("children")
    entry["children"] = _layer(children) if children else None
    return entry


def _negative(duration: str | None) -> bool:
    return isinstance(duration, str) and duration.startswith("-")


def compact_record(record: Mapping[str, Any]) -> dict:
    """What the "since" window needs of one record: its changes with a few fields of each image, the
    reasons declared, the acknowledged and the new annotations (small enough to keep a day of them)."""
    compact: dict[str, Any] = {"event_seq": record["event_seq"], "at": record.get("at"), "type": record.get("type")}
    if record.get("type") == "annotation":
        note = record.get("annotation") or {}
        compact["annotation"] = {key: note.get(key) for key in ("id", "item", "text")}
        return compact
    compact["reasons"] = declared_reasons(record)
    compact["changes"] = [{"item": change.item, "op": change.op,
                           "image": {key: change.image.get(key) for key in IMAGE_FIELDS}}
                          for change in record_changes(record)]
    compact["acks"] = [ack["annotation"] for ack in record.get("acks") or ()]
    return compact


def _since(records: Sequence[Mapping[str, Any]], since: int, document: Mapping[str, Any]) -> dict:
    """Created / updated / restored / withdrawn / merged items and acknowledged annotations after ``since``
    (``records`` in ``compact_record`` form)."""
    first_op: dict[str, str] = {}
    last: dict[str, Mapping[str, Any]] = {}
    reasons: dict[str, str] = {}
    acknowledged: list[str] = []
    notes: dict[str, Mapping[str, Any]] = _annotations(document)
    for record in records:
        if record["event_seq"] <= since:
            continue
        if record["type"] == "annotation":
            notes.setdefault(record["annotation"]["id"], record["annotation"])
            continue
        reasons.update(record.get("reasons") or {})
        for change in record.get("changes") or ():
            first_op.setdefault(change["item"], change["op"])
            last[change["item"]] = change["image"]
        for ack in record.get("acks") or ():
            if ack not in acknowledged:
                acknowledged.append(ack)
    groups: dict[str, list] = {"created": [], "updated": [], "restored": [], "withdrawn": [], "merged": []}
    merged: dict[str, list[str]] = {}
    for item, image in last.items():
        into = image.get("merged_into")
        if image.get("status") == "merged" and isinstance(into, str):
            merged.setdefault(into, []).append(item)
    for item, image in last.items():
        status, op = image.get("status"), first_op[item]
        entry = {"id": item, "title": image.get("title"), "weight": image.get("weight"), "kind": image.get("kind"),
                 "parent": image.get("parent")}
        if status == "merged":
            continue
        if item in merged and op == "created":
            groups["merged"].append({"into": item, "title": image.get("title"),
                                     "sources": [{"id": s, "title": last[s].get("title")} for s in merged[item]],
                                     "reason": reasons.get(item)})
            continue
        if status == "withdrawn":
            entry.update(reason=reasons.get(item) or image.get("reason"), withdrawn_with=image.get("withdrawn_with"),
                         created=op == "created")
            groups["withdrawn"].append(entry)
        elif op in ("created", "restored"):
            groups[op].append(entry)
        else:
            groups["updated"].append(entry)
    for into, sources in merged.items():  # merged into an item created before the window
        if not any(group["into"] == into for group in groups["merged"]):
            groups["merged"].append({"into": into, "title": (last.get(into) or {}).get("title"),
                                     "sources": [{"id": s, "title": last[s].get("title")} for s in sources],
                                     "reason": reasons.get(sources[0])})
    groups["acknowledged"] = [{"annotation": ann, "item": (notes.get(ann) or {}).get("item"),
                               "text": (notes.get(ann) or {}).get("text")} for ann in acknowledged]
    to = records[-1]["event_seq"] if records else since
    return {"after_event_seq": since, "to_event_seq": max(to, since), **groups}


def _annotations(document: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    """Annotation id → {id, item, text} for every annotation the document shows."""
    found: dict[str, Mapping[str, Any]] = {}
    for view, _ in walk_items(document):
        for note in view.get("annotations") or ():
            found[note["id"]] = {"id": note["id"], "item": view["id"], "text": note["text"]}
    for note in document.get("pending_annotations") or ():
        found.setdefault(note["id"], {"id": note["id"], "item": note["item"], "text": note["text"]})
    return found


def _source(entry: Mapping[str, Any]) -> dict:
    status = entry.get("status") or "unknown"
    return {"source": entry.get("source"), "channel": entry.get("channel"),
            "status": status if status in ("ok", "failed") else "unknown", "last_ok_at": entry.get("last_ok_at"),
            "error": entry.get("error") or entry.get("message")}


# -- the consumer ------------------------------------------------------------------


def write_atomically(path: str | os.PathLike, text: str) -> None:
    """Replace the regular file ``path`` with ``text`` (a FIFO, device, symbolic link or directory is refused).

    A temporary file in the same directory, fsync, rename, fsync the
    directory (``fold_core.files.replace_file``): readers see the old
    briefing or the new one, never a part.
    """
    replace_file(path, text.encode("utf-8"))


class BriefingSettings(ConsumerSettings):
    """``path``: the file to rewrite; ``format``: md | text | json (default: by the file's extension);
    ``since``: how far back "since" looks (a duration, default 24h), or ``"last"`` (this delivery's records)."""

    path: ConfigPath
    format: Literal["md", "text", "json"] | None = None
    since: Literal["last"] | Duration = timedelta(hours=24)


class BriefingConsumer(Consumer):
    """Rewrites its file with the current briefing after each delivery."""

    type_name: ClassVar[str] = "briefing"
    shares_records: ClassVar[bool] = True  # reads records, never changes them (no copy needed)
    Settings: ClassVar[type[BriefingSettings]] = BriefingSettings
    settings: BriefingSettings

    def output_format(self) -> str:
        if self.settings.format is not None:
            return self.settings.format
        suffix = os.path.splitext(str(self.settings.path))[1].lower()
        return {".json": "json", ".txt": "text"}.get(suffix, "md")

    def deliver(self, records: Sequence[Mapping[str, Any]], context: ConsumerContext) -> None:
        window = self.settings.since
        if window == "last":
            since = records[0]["event_seq"] - 1 if records else context.state.event_seq
            entries, span = [compact_record(record) for record in records], None
        else:
            assert isinstance(window, timedelta)
            entries, since, span = self._window(records, context, window)
        brief = build_briefing(context.state.document, compacted=entries, since=since, coverage=context.coverage,
                               editor=context.editor, timezone=context.timezone, language=context.language,
                               span=span)
        write_atomically(self.settings.path, render(brief, self.output_format()))

    def _window(self, records: Sequence[Mapping[str, Any]], context: ConsumerContext,
                length: timedelta) -> tuple[list[dict], int, dict]:
        """The kept records of the last ``length`` with this delivery's added (each once: a delivery that
        failed comes again), those older dropped; ``(entries, the event_seq before them, the span)``."""
        start = instant(context.now) - length
        kept = context.memory.get(WINDOW_KEY) or {}
        entries = [entry for entry in kept.get("records") or () if isinstance(entry, dict)]
        newest = entries[-1]["event_seq"] if entries else 0
        entries += [compact_record(record) for record in records if record["event_seq"] > newest]
        entries = [entry for entry in entries if _at_or_after(entry.get("at"), start)][-WINDOW_LIMIT:]
        context.memory[WINDOW_KEY] = {"records": entries}
        # Before the first kept record; with none, the window starts at the head (nothing new).
        since = entries[0]["event_seq"] - 1 if entries else context.state.event_seq
        return entries, since, {"span": _span(length), "from": start.isoformat()}


def _span(length: timedelta) -> str:
    """``24h``, ``90m``, ``45s``: the window's length as written in a heading."""
    seconds = int(length.total_seconds())
    if seconds % 3600 == 0:
        return f"{seconds // 3600}h"
    return f"{seconds // 60}m" if seconds % 60 == 0 else f"{seconds}s"


def _at_or_after(at: object, start) -> bool:
    try:
        return isinstance(at, str) and instant(at) >= start
    except ValueError:  # a record without a readable time: kept only by the count bound
        return True


@hookimpl
def fold_consumer_types() -> list[type[Consumer]]:
    return [BriefingConsumer]
