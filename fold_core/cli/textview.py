"""``--format text``: the state and history documents for a person (contract §7, §8).

Same facts as the JSON documents, laid out to be read: per layer its budget
line, then each active item in rank order with rank, weight, share, kind,
title, id, summary, durations and annotations; children are indented under
their parent. Columns are aligned by display width (East Asian wide and
full-width characters take two columns), so Chinese titles line up. Nothing
here decides anything: it only renders what the kernel answered. The words
and the times follow ``[host] language`` and ``timezone`` when plugins.toml
sets them (``fold_core.words``).
"""

from __future__ import annotations

import unicodedata

from fold_core.timefmt import instants_shown
from fold_core.words import Words, view_words

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
    w = view_words()
    lines = [w("Fold state at {now} · revision {revision} · event {event_seq} · budget {budget}",
               now=_at(w, doc["now"]), revision=doc["revision"], event_seq=doc["event_seq"], budget=doc["budget"])]
    if doc.get("last_checked_at"):
        lines.append(w("last checked (no change) at {at}", at=w.when(doc["last_checked_at"])))
    if "item" in doc:
        item = doc["item"]
        lines.append("")
        _items([item], lines, 0, rank_width=len(str(item["rank"])))
    else:
        lines.append("")
        _layer(w("root"), doc["root"], lines, 0)
    pending = doc.get("pending_annotations") or []
    if pending:
        lines += ["", w("Pending annotations ({count}):", count=len(pending))]
        for note in pending:
            target = note["item"]
            if note["resolved_item"] != note["item"]:
                target += f" → {note['resolved_item']}"
            lines.append("  " + w("{id} on {target} by {author} at {at}: {text}", id=note["id"], target=target,
                                  author=_clean(note["author"]), at=w.when(note["created_at"]),
                                  text=_clean(note["text"])))
    entries = doc.get("not_active") or []
    total = doc.get("not_active_total", len(entries))
    if total:
        shown = w("the {shown} most recent of {total}", shown=len(entries), total=total) if len(entries) < total \
            else str(total)
        lines += ["", w("Not active ({shown}):", shown=shown)]
        id_width = max((len(entry["id"]) for entry in entries), default=0)
        status_width = max((width(w(entry["status"])) for entry in entries), default=0)
        for entry in entries:
            extra = ""
            if entry.get("merged_into"):
                extra = f" → {entry['merged_into']}"
            elif entry.get("withdrawn_with"):
                extra = " " + w("(with {parent})", parent=entry["withdrawn_with"])
            reason = f" — {_clean(instants_shown(entry['reason'], w.when))}" if entry.get("reason") else ""
            lines.append(f"  {_pad(w(entry['status']), status_width)} {entry['id']:<{id_width}}  "
                         f"{_clean(entry['title'])}{extra} · {w.when(entry['at'])}{reason}")
    return "\n".join(lines) + "\n"


def _at(w: Words, instant: str) -> str:
    """The state's ``now`` with the zone named once (the rest of the view is in the same zone)."""
    return w.when(instant) + (f" ({w.zone_name})" if w.zone is not None else "")


def _layer(name: str, layer: dict, lines: list[str], depth: int) -> None:
    w = view_words()
    pad = _INDENT * depth
    header = pad + w("{name}: used {used} of {budget}, free {free}", name=name, used=layer["used"],
                     budget=layer["budget"], free=layer["free"])
    if "count" in layer:
        lines.append(header + w(", {count} items (not expanded)", count=layer["count"]))
        return
    items = layer.get("items") or []
    lines.append(header + ("" if items else w(" (empty)")))
    _items(items, lines, depth, rank_width=len(str(len(items))))


def _items(items: list[dict], lines: list[str], depth: int, *, rank_width: int) -> None:
    w = view_words()
    pad = _INDENT * depth
    title_width = max((width(_clean(item["title"])) for item in items), default=0)
    kind_width = max((width(w(item["kind"])) for item in items), default=0)
    weight_width = max([width(w(weight)) for weight in ("critical", "high", "normal", "low", "trace")])
    for item in items:
        share = f"{item['share']}{'*' if item['share_override'] else ''}"
        lines.append(
            f"{pad}{item['rank']:>{rank_width}}. {_pad(w(item['weight']), weight_width)} {share:>4}  "
            f"{_pad(w(item['kind']), kind_width)}  {_pad(_clean(item['title']), title_width)}  [{item['id']}]"
        )
        body = pad + " " * (rank_width + 2)
        if item.get("summary"):
            lines.append(f"{body}{_clean(item['summary'])}")
        lines.append(body + _durations(item))
        if item.get("reason"):
            lines.append(body + w("reason: {reason}", reason=_clean(instants_shown(item["reason"], w.when))))
        for source in item.get("sources") or []:
            lines.append(body + w("source: {channel} {ref}", channel=_clean(source.get("channel")),
                                  ref=_clean(source.get("ref"))))
        for note in item.get("annotations") or []:
            lines.append(body + w("{id} ({status}, {author}): {text}", id=note["id"], status=w(note["status"]),
                                  author=_clean(note["author"]), text=_clean(note["text"])))
        if item.get("children"):
            _layer(w("children of {id}", id=item["id"]), item["children"], lines, depth + 1)


def _durations(item: dict) -> str:
    w = view_words()
    parts = [w("age {age}", age=item["age"]), w("updated {since} ago", since=item["since_update"])]
    due = item.get("until_due")
    if due is not None:
        parts.append(w("overdue {d}", d=due[1:]) if due.startswith("-") else w("due in {d}", d=due))
    stale = item.get("until_stale")
    if stale is not None:
        parts.append(w("stale since {d}", d=stale[1:]) if stale.startswith("-") else w("stale in {d}", d=stale))
    return " · ".join(parts)


def render_history(doc: dict) -> str:
    w = view_words()
    if "found" in doc:
        if not doc["found"]:
            return w("not found: no accepted batch has this batch_id") + "\n"
        return "\n".join(_record(doc["record"])) + "\n"
    lines: list[str] = []
    for record in doc["records"]:
        lines += _record(record)
    lines.append(w("({count} records shown; the store is at event {event_seq})", count=len(doc["records"]),
                   event_seq=doc["last_event_seq"]))
    return "\n".join(lines) + "\n"


def _record(record: dict) -> list[str]:
    w = view_words()
    head = f"#{record['event_seq']} {w(record['type'])}"
    if record["type"] == "annotation":
        note = record["annotation"]
        return [f"{head} " + w("{id} on {target} by {author} at {at}: {text}", id=note["id"], target=note["item"],
                                author=_clean(note["author"]), at=w.when(record["at"]), text=_clean(note["text"]))]
    revision = record["revision"]
    if revision != record["previous_revision"]:
        revision = f"{record['previous_revision']}→{revision}"
    lines = [w("#{event_seq} {type} {batch_id} by {actor} at {at} · revision {revision}",
               event_seq=record["event_seq"], type=w(record["type"]), batch_id=record["batch_id"],
               actor=_clean(record["actor"]), at=w.when(record["at"]), revision=revision)]
    titles = {change["item"]["id"]: change["item"]["title"] for change in record.get("changes", ())}
    receipt = record.get("receipt") or {}
    changes = receipt.get("changes") or []
    op_width = max((width(w(change["op"])) for change in changes), default=0)
    for change in changes:
        layer = "" if change.get("layer") is None else w(" (under {layer})", layer=change["layer"])
        lines.append(f"    {_pad(w(change['op']), op_width)} {change['item']}{layer} "
                     f"{w('share {share}', share=change['share'])}  {_clean(titles.get(change['item'], ''))}")
    for note in receipt.get("acknowledged") or []:
        lines.append("    " + w("acknowledged {note}", note=note))
    if record["type"] == "checked":
        lines.append("    " + w("no change (checked)"))
    return lines


def render_answer(command: str, doc: dict) -> str:
    """A short text for init, commit, annotate, verify and every error document."""
    w = view_words()
    if doc.get("ok") is False:
        lines = [w("rejected:") if "batch_id" in doc or command in ("commit", "annotate") else w("error:")]
        for error in doc.get("errors", ()):
            lines.append(f"  {error.get('code')}: {error.get('message')}")
        return "\n".join(lines) + "\n"
    if command == "commit":
        replayed = w(" (replayed: this batch was already accepted)") if doc.get("replayed") else ""
        lines = [w("{type} {batch_id}: event {event_seq}, revision {revision}{replayed}", type=w(doc["type"]),
                   batch_id=doc["batch_id"], event_seq=doc["event_seq"], revision=doc["revision"],
                   replayed=replayed)]
        for change in doc.get("changes", ()):
            lines.append("    " + w("{op} {item} share {share}", op=w(change["op"]), item=change["item"],
                                    share=change["share"]))
        for layer in doc.get("layers", ()):
            name = w("root") if layer["layer"] is None else w("children of {id}", id=layer["layer"])
            lines.append("    " + w("{name}: used {used} of {budget}", name=name, used=layer["used"],
                                    budget=layer["budget"]))
        return "\n".join(lines) + "\n"
    if command == "annotate":
        return w("saved {annotation} (event {event_seq})", annotation=doc["annotation"],
                 event_seq=doc["event_seq"]) + "\n"
    if command == "init":
        template = "created store {store} (budget {budget})" if doc["created"] else \
            "the store {store} already exists (budget {budget})"
        return w(template, store=doc["store"], budget=doc["budget"]) + "\n"
    if command == "verify":
        snapshot = doc["snapshot"]
        cache = w("no snapshot") if snapshot is None else w("snapshot at event {event_seq} consistent",
                                                             event_seq=snapshot["last_event_seq"])
        torn = "" if doc["torn_tail"] is None else w("; torn tail of {size} bytes (repaired by the next write)",
                                                     size=doc["torn_tail"]["bytes"])
        return w("ok: {records} records, revision {revision}, {cache}{torn}", records=doc["records"],
                 revision=doc["revision"], cache=cache, torn=torn) + "\n"
    return repr(doc) + "\n"
