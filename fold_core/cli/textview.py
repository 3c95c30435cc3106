"""``--format text``: the state and history documents for a person (contract §7, §8).

Same facts as the JSON documents, laid out to be read: per layer its budget
line, then each active item in rank order with rank, weight, share, kind,
title, id, summary, durations and annotations; children are indented under
their parent. Columns are aligned by display width (East Asian wide and
full-width characters take two columns), so Chinese titles line up. Nothing
here decides anything: it only renders what the kernel answered.
"""

from __future__ import annotations

import unicodedata

__all__ = ["render_answer", "render_history", "render_state", "width"]

_INDENT = "    "


def width(text: str) -> int:
    """Display columns of ``text`` in a terminal."""
    total = 0
    for char in text:
        if unicodedata.combining(char):
            continue
        total += 2 if unicodedata.east_asian_width(char) in "WF" else 1
    return total


def _pad(text: str, columns: int) -> str:
    return text + " " * max(columns - width(text), 0)


def _clean(text: object) -> str:
    """One line: control characters and line breaks become spaces."""
    if text is None:
        return ""
    return "".join(" " if unicodedata.category(c) in ("Cc", "Zl", "Zp") else c for c in str(text))


def render_state(doc: dict) -> str:
    lines = [
        f"Fold state at {doc['now']} · revision {doc['revision']} · event {doc['event_seq']}"
        f" · budget {doc['budget']}"
    ]
    if doc.get("last_checked_at"):
        lines.append(f"last checked (no change) at {doc['last_checked_at']}")
    if "item" in doc:
        item = doc["item"]
        lines.append("")
        _items([item], lines, 0, rank_width=len(str(item["rank"])))
    else:
        lines.append("")
        _layer("root", doc["root"], lines, 0)
    pending = doc.get("pending_annotations") or []
    if pending:
        lines += ["", f"Pending annotations ({len(pending)}):"]
        for note in pending:
            target = note["item"]
            if note["resolved_item"] != note["item"]:
                target += f" → {note['resolved_item']}"
            lines.append(f"  {note['id']} on {target} by {_clean(note['author'])} at {note['created_at']}:"
                         f" {_clean(note['text'])}")
    entries = doc.get("not_active") or []
    total = doc.get("not_active_total", len(entries))
    if total:
        shown = f"the {len(entries)} most recent of {total}" if len(entries) < total else str(total)
        lines += ["", f"Not active ({shown}):"]
        id_width = max((len(entry["id"]) for entry in entries), default=0)
        for entry in entries:
            extra = ""
            if entry.get("merged_into"):
                extra = f" → {entry['merged_into']}"
            elif entry.get("withdrawn_with"):
                extra = f" (with {entry['withdrawn_with']})"
            reason = f" — {_clean(entry['reason'])}" if entry.get("reason") else ""
            lines.append(f"  {entry['status']:<9} {entry['id']:<{id_width}}  {_clean(entry['title'])}"
                         f"{extra} · {entry['at']}{reason}")
    return "\n".join(lines) + "\n"


def _layer(name: str, layer: dict, lines: list[str], depth: int) -> None:
    pad = _INDENT * depth
    header = f"{pad}{name}: used {layer['used']} of {layer['budget']}, free {layer['free']}"
    if "count" in layer:
        lines.append(f"{header}, {layer['count']} items (not expanded)")
        return
    items = layer.get("items") or []
    lines.append(header + ("" if items else " (empty)"))
    _items(items, lines, depth, rank_width=len(str(len(items))))


def _items(items: list[dict], lines: list[str], depth: int, *, rank_width: int) -> None:
    pad = _INDENT * depth
    title_width = max((width(_clean(item["title"])) for item in items), default=0)
    kind_width = max((len(item["kind"]) for item in items), default=0)
    for item in items:
        share = f"{item['share']}{'*' if item['share_override'] else ''}"
        lines.append(
            f"{pad}{item['rank']:>{rank_width}}. {item['weight']:<8} {share:>4}  {item['kind']:<{kind_width}}"
            f"  {_pad(_clean(item['title']), title_width)}  [{item['id']}]"
        )
        body = pad + " " * (rank_width + 2)
        if item.get("summary"):
            lines.append(f"{body}{_clean(item['summary'])}")
        lines.append(body + _durations(item))
        if item.get("reason"):
            lines.append(f"{body}reason: {_clean(item['reason'])}")
        for source in item.get("sources") or []:
            lines.append(f"{body}source: {_clean(source.get('channel'))} {_clean(source.get('ref'))}")
        for note in item.get("annotations") or []:
            lines.append(f"{body}{note['id']} ({note['status']}, {_clean(note['author'])}): {_clean(note['text'])}")
        if item.get("children"):
            _layer(f"children of {item['id']}", item["children"], lines, depth + 1)


def _durations(item: dict) -> str:
    parts = [f"age {item['age']}", f"updated {item['since_update']} ago"]
    due = item.get("until_due")
    if due is not None:
        parts.append(f"overdue {due[1:]}" if due.startswith("-") else f"due in {due}")
    stale = item.get("until_stale")
    if stale is not None:
        parts.append(f"stale since {stale[1:]}" if stale.startswith("-") else f"stale in {stale}")
    return " · ".join(parts)


def render_history(doc: dict) -> str:
    if "found" in doc:
        if not doc["found"]:
            return "not found: no accepted batch has this batch_id\n"
        return "\n".join(_record(doc["record"])) + "\n"
    lines: list[str] = []
    for record in doc["records"]:
        lines += _record(record)
    lines.append(f"({len(doc['records'])} records shown; the store is at event {doc['last_event_seq']})")
    return "\n".join(lines) + "\n"


def _record(record: dict) -> list[str]:
    head = f"#{record['event_seq']} {record['type']}"
    if record["type"] == "annotation":
        note = record["annotation"]
        return [f"{head} {note['id']} on {note['item']} by {_clean(note['author'])} at {record['at']}:"
                f" {_clean(note['text'])}"]
    revision = record["revision"]
    if revision != record["previous_revision"]:
        revision = f"{record['previous_revision']}→{revision}"
    lines = [f"{head} {record['batch_id']} by {_clean(record['actor'])} at {record['at']} · revision {revision}"]
    titles = {change["item"]["id"]: change["item"]["title"] for change in record.get("changes", ())}
    receipt = record.get("receipt") or {}
    changes = receipt.get("changes") or []
    op_width = max((len(change["op"]) for change in changes), default=0)
    for change in changes:
        layer = "" if change.get("layer") is None else f" (under {change['layer']})"
        lines.append(f"    {change['op']:<{op_width}} {change['item']}{layer} share {change['share']}"
                     f"  {_clean(titles.get(change['item'], ''))}")
    for note in receipt.get("acknowledged") or []:
        lines.append(f"    acknowledged {note}")
    if record["type"] == "checked":
        lines.append("    no change (checked)")
    return lines


def render_answer(command: str, doc: dict) -> str:
    """A short text for init, commit, annotate, verify and every error document."""
    if doc.get("ok") is False:
        lines = ["rejected:" if "batch_id" in doc or command in ("commit", "annotate") else "error:"]
        for error in doc.get("errors", ()):
            lines.append(f"  {error.get('code')}: {error.get('message')}")
        return "\n".join(lines) + "\n"
    if command == "commit":
        replayed = " (replayed: this batch was already accepted)" if doc.get("replayed") else ""
        lines = [f"{doc['type']} {doc['batch_id']}: event {doc['event_seq']}, revision {doc['revision']}{replayed}"]
        for change in doc.get("changes", ()):
            lines.append(f"    {change['op']} {change['item']} share {change['share']}")
        for layer in doc.get("layers", ()):
            name = "root" if layer["layer"] is None else f"children of {layer['layer']}"
            lines.append(f"    {name}: used {layer['used']} of {layer['budget']}")
        return "\n".join(lines) + "\n"
    if command == "annotate":
        return f"saved {doc['annotation']} (event {doc['event_seq']})\n"
    if command == "init":
        verb = "created" if doc["created"] else "already exists:"
        return f"{verb} store {doc['store']} (budget {doc['budget']})\n"
    if command == "verify":
        snapshot = doc["snapshot"]
        cache = "no snapshot" if snapshot is None else f"snapshot at event {snapshot['last_event_seq']} consistent"
        torn = "" if doc["torn_tail"] is None else f"; torn tail of {doc['torn_tail']['bytes']} bytes (repaired by the next write)"
        return f"ok: {doc['records']} records, revision {doc['revision']}, {cache}{torn}\n"
    return repr(doc) + "\n"
