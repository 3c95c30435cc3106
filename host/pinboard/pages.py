"""What the item page and the changes page show, from the state and the records (contract §8, §6.1, §12).

Pure functions over the recovered ``State`` and JSON records; the app reads
the store and hands them in.

* ``item_page`` — an item's fields, its parents (breadcrumbs), its
  annotations with their status, and for an active item with children the
  children layer as its own budget rectangle. An active item is its §8
  ``ItemView`` (time projection included); a withdrawn or merged item is read
  from its stored record (it can still be annotated and has a history).
* ``item_history`` — the records of ``history --item``, newest first, each
  with what this record did to the item (op, changed fields, reason) or the
  annotation it saved or acknowledged.
* ``changes`` — a "since your last visit" view of records: created, updated,
  restored, withdrawn and merged items (from each commit's receipt, titles
  from its post-images), annotations saved and acknowledged, checks.
* ``source_link`` — the only place a source becomes a link out: an
  ``http(s)`` reference without spaces. Anything else (``javascript:``,
  ``data:``) is text. The server never fetches any of them.
* ``observation_link`` — an ``event:<id>`` source links to the Pinboard's own
  page of that observation (``/observation/<id>``).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping
from urllib.parse import quote, urlsplit

from fold_core.kernel.outcome import Rejected
from fold_core.kernel.view import state_document
from fold_host.overview.layout import Query, capture, layout
from fold_host.pinboard.board import fold_lines

__all__ = ["HISTORY_FIELDS", "changes", "item_history", "item_page", "observation_link", "source_link"]

HISTORY_FIELDS = ("status", "title", "summary", "weight", "kind", "share", "explicit_share", "due_at",
                  "stale_after", "sources", "parent", "merged_into")
MAX_DEPTH = 6


def source_link(ref: str) -> str | None:
    """The ``href`` for a source reference that is a plain web address, else None (shown as text)."""
    if not isinstance(ref, str) or any(char.isspace() or ord(char) < 32 for char in ref):
        return None
    try:
        parts = urlsplit(ref)
    except ValueError:
        return None
    if parts.scheme.lower() not in ("http", "https") or not parts.netloc:
        return None
    return ref


def observation_link(ref: str, item_id: str | None = None) -> str | None:
    """The Pinboard's own page for a ``event:<id>`` source (the observation it came from), else None."""
    if not isinstance(ref, str) or not ref.startswith("event:") or len(ref) <= len("event:"):
        return None
    target = "/observation/" + quote(ref[len("event:"):], safe=":@")
    return target + (f"?item={item_id}" if item_id else "")


def _parents(state, record: Mapping) -> list[dict]:
    chain: list[dict] = []
    parent = record["parent"]
    while parent is not None and len(chain) <= MAX_DEPTH:
        above = state.items[parent]
        chain.append({"id": above["id"], "title": above["title"], "status": above["status"]})
        parent = above["parent"]
    return chain[::-1]


def item_page(state, now: str, item_id: str, canvases: Mapping) -> dict | None:
    """Everything the item page shows, or None when no item ever had this id."""
    record = state.items.get(item_id)
    if record is None:
        return None
    page = {"id": item_id, "status": record["status"], "record": record, "parents": _parents(state, record),
            "budget": state.budget, "event_seq": state.event_seq, "revision": state.revision, "now": now,
            "children": None}
    if record["status"] == "active":
        document = state_document(state, now, item=item_id, depth=1, not_active=0)
        if isinstance(document, Rejected):  # an active item's view is never refused
            raise ValueError(document.errors[0]["message"])
        view = document["item"]
        page["view"] = view
        if view["children"]:
            shot = capture(state.replace(annotations={}), now=now)  # the rectangle shows no notes
            page["children"] = {name: fold_lines(layout(shot, Query(item=item_id, depth=1), canvas))
                                for name, canvas in canvases.items()}
    else:
        notes = [note for note in state.annotations.values() if note["item"] == item_id]
        page["view"] = {**record, "annotations": [{key: note[key] for key in
                                                   ("id", "text", "author", "status", "created_at",
                                                    "acknowledged_revision")} for note in notes]}
    page["sources"] = [{"channel": source.get("channel"), "ref": source.get("ref"), "quote": source.get("quote"),
                        "observed_at": source.get("observed_at"), "href": source_link(source.get("ref")),
                        "observation": observation_link(source.get("ref"), item_id)}
                       for source in record["sources"] or ()]
    return page


def item_history(records: Iterable[Mapping], item_id: str, limit: int = 200) -> tuple[list[dict], int]:
    """``(entries newest first, how many records mention the item)``; at most ``limit`` entries."""
    entries, before = [], None
    for record in records:
        entry = {"event_seq": record["event_seq"], "type": record["type"], "at": record["at"],
                 "actor": record["actor"], "batch_id": record.get("batch_id"), "revision": record.get("revision"),
                 "annotation": None, "op": None, "fields": [], "reason": None, "title": None, "acks": []}
        if record["type"] == "annotation":
            note = record["annotation"]
            entry["annotation"] = {"id": note["id"], "text": note["text"], "author": note["author"]}
        else:
            image = next((change["item"] for change in record["changes"] if change["item"]["id"] == item_id), None)
            op = next((change["op"] for change in record["receipt"].get("changes", ())
                       if change["item"] == item_id), None)
            if image is not None:
                entry["op"] = op or "bookkeeping"
                entry["fields"] = [name for name in HISTORY_FIELDS
                                   if before is not None and before.get(name) != image.get(name)]
                entry["reason"] = image.get("reason") if op else None
                entry["title"] = image["title"]
                before = image
            entry["acks"] = [ack["annotation"] for ack in record.get("acks", ())]
        entries.append(entry)
    total = len(entries)
    return entries[::-1][:limit], total


def changes(records: Iterable[Mapping], limit: int = 300) -> dict:
    """The changes in ``records``: totals by op, and the newest ``limit`` records described."""
    totals = {op: 0 for op in ("created", "updated", "restored", "withdrawn", "merged", "annotation",
                               "acknowledged", "checked")}
    described: deque = deque(maxlen=limit)
    count = 0
    for record in records:
        count += 1
        entry = {"event_seq": record["event_seq"], "type": record["type"], "at": record["at"],
                 "actor": record["actor"], "batch_id": record.get("batch_id"), "revision": record.get("revision"),
                 "entries": [], "acknowledged": [], "annotation": None}
        if record["type"] == "annotation":
            note = record["annotation"]
            entry["annotation"] = {"id": note["id"], "item": note["item"], "text": note["text"]}
            totals["annotation"] += 1
        else:
            titles = {change["item"]["id"]: change["item"]["title"] for change in record["changes"]}
            for change in record["receipt"].get("changes", ()):
                entry["entries"].append({"op": change["op"], "id": change["item"], "title": titles.get(change["item"]),
                                       "layer": change["layer"], "share": change["share"]})
                totals[change["op"]] = totals.get(change["op"], 0) + 1
            entry["acknowledged"] = list(record["receipt"].get("acknowledged", ()))
            totals["acknowledged"] += len(entry["acknowledged"])
            if record["type"] == "checked":
                totals["checked"] += 1
        described.append(entry)
    return {"records": list(described)[::-1], "count": count, "shown": len(described), "totals": totals}
