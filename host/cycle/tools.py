"""The host's side of the editor's tools: ``HostTools`` reads the store and host.db (contract §9).

``HostTools(store_dir, now)`` is the read-only ``EditorTools`` the host hands
a backend with every request of a window (``AgentRequest.tools``). It keeps
nothing of the host's own: it opens its own store reader (on first use) and
a fresh host.db connection per lookup, so a backend may call it from any
thread — even one the host has stopped waiting for — without sharing a
connection with the cycle. Every answer is a JSON-ready dict; the bound on
its size is the ``ToolBox``'s.
"""

from __future__ import annotations

from fold_core.editor_tools import EditorTools
from fold_core.kernel.decision import frame_view
from fold_core.store.base import Store
from fold_core.store.locate import open_store
from fold_core.timefmt import instant_key
from fold_host.hostdb import HostDB, open_host_db

__all__ = ["HostTools"]

IMAGE_FIELDS = ("title", "summary", "weight", "kind", "status", "reason", "due_at", "stale_after", "parent",
                "merged_into", "sources", "decision")
RECORD_FIELDS = ("id", "parent", "status", "title", "summary", "weight", "kind", "share", "reason", "due_at",
                 "stale_after", "sources", "created_at", "updated_at", "status_at", "merged_into", "withdrawn_with")
NOTE_FIELDS = ("id", "text", "author", "status", "created_at", "acknowledged_revision")


class HostTools(EditorTools):
    """Lookups over one store (a directory or a PostgreSQL URL) at the window's ``now``."""

    def __init__(self, store_dir: str, now: str) -> None:
        self.store_dir, self.now = str(store_dir), now
        self._store: Store | None = None

    def _reader(self) -> Store:
        if self._store is None:
            self._store = open_store(self.store_dir)
        return self._store

    def _db(self) -> HostDB:
        return open_host_db(self.store_dir)

    # -- items ------------------------------------------------------------------

    def get_item(self, item_id: str) -> dict:
        store = self._reader()
        answer = store.state_document(now=self.now, item=item_id, not_active=0)
        if answer.exit_code == 0:
            return {"found": True, "status": "active", "item": answer.document["item"]}
        state = store.state()
        record = state.items.get(item_id)
        if record is None:
            return {"found": False, "item": None}
        item = {key: record.get(key) for key in RECORD_FIELDS}
        item["decision"] = frame_view(record.get("decision"))  # as the state document shows it: with its digest
        item["annotations"] = [{key: note.get(key) for key in NOTE_FIELDS} for note in state.annotations.values()
                               if note["item"] == item_id]
        found = {"found": True, "status": record["status"], "item": item}
        if record["status"] == "merged":
            found["hint"] = f"merged into {record['merged_into']}: write that id, never this one"
        else:
            found["hint"] = f"not on the board; restore it with relation supersedes:{item_id}"
        return found

    def get_history(self, item_id: str, limit: int) -> dict:
        records = self._reader().history(item=item_id).document["records"]
        entries = [_entry(record, item_id) for record in records[::-1][:limit]]
        return {"item": item_id, "total": len(records), "records": entries}

    def list_not_active(self, query: str | None, limit: int) -> dict:
        state = self._reader().state()
        needle = query.casefold() if query else None
        found = []
        for record in state.items.values():
            if record["status"] == "active":
                continue
            if needle is not None and not any(needle in (record.get(key) or "").casefold()
                                              for key in ("id", "title", "reason")):
                continue
            found.append(record)
        found.sort(key=lambda record: (instant_key(record["status_at"]), record["id"]), reverse=True)
        entries = [{"id": record["id"], "title": record["title"], "status": record["status"],
                    "parent": record["parent"], "at": record["status_at"], "reason": record["reason"],
                    "merged_into": record["merged_into"], "withdrawn_with": record["withdrawn_with"]}
                   for record in found[:limit]]
        return {"query": query, "total": len(found), "entries": entries}

    # -- observations -------------------------------------------------------------

    def get_observation(self, observation_id: str) -> dict:
        with self._db() as db:
            detail = db.observation_detail(observation_id)
        if detail is None:
            return {"found": False, "observation": None}
        return {"found": True, **detail}

    def search_observations(self, query: str, limit: int) -> dict:
        with self._db() as db:
            hits = db.search_observations(query, limit)
        return {"query": query, "hits": hits}


def _entry(record: dict, item_id: str) -> dict:
    """What one record did to the item, in a few fields."""
    entry = {"event_seq": record["event_seq"], "type": record["type"], "at": record["at"],
             "actor": record["actor"], "batch_id": record.get("batch_id")}
    if record["type"] == "annotation":
        note = record["annotation"]
        entry["annotation"] = {"id": note["id"], "text": note["text"], "author": note["author"]}
        return entry
    image = next((change["item"] for change in record["changes"] if change["item"]["id"] == item_id), None)
    entry["op"] = next((change["op"] for change in record["receipt"].get("changes", ())
                        if change["item"] == item_id), "bookkeeping")
    if image is not None:
        entry["item"] = {key: image.get(key) for key in IMAGE_FIELDS}
        entry["item"]["decision"] = frame_view(image.get("decision"))
    acks = [ack.get("annotation") for ack in record.get("acks", ()) if isinstance(ack, dict)]
    if acks:
        entry["acknowledged"] = acks
    return entry
