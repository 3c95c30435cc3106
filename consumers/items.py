"""What a consumer reads out of accepted records (contract §4.1, §6.1).

Shared by the built-in consumers so that the briefing, push and the change
log agree on one reading of the same records:

* ``record_changes(record)`` — the receipt's changes (op per item, in receipt
  order) joined with the record's post-images;
* ``declared_reasons(record)`` — the reason each declaration gave (a
  cascaded withdraw or a merge source takes its parent's / merge's reason);
* ``ItemFacts`` — the last known business facts of every active item, kept
  by a consumer in its durable memory so that "what changed" (weight raised,
  due moved) is known across deliveries. It remembers the event_seq it has
  absorbed, so a record delivered again (at least once) is never counted twice.
* ``text_language(text)`` — ``"zh"`` when the text holds CJK characters.

Pure functions over JSON-shaped data; nothing here touches a store.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator, Mapping, MutableMapping, Sequence
from typing import Any

from fold_core.timefmt import instant_key

__all__ = ["Change", "ItemFacts", "WEIGHTS", "declared_reasons", "fact_diff", "facts_of", "record_changes",
           "text_language", "walk_items", "weight_rank"]

WEIGHTS = ("trace", "low", "normal", "high", "critical")
_RANK: dict[str | None, int] = {weight: index for index, weight in enumerate(WEIGHTS)}
FACT_FIELDS = ("title", "summary", "weight", "kind", "share", "due_at", "stale_after", "parent", "sources")


def weight_rank(weight: str | None) -> int:
    """0 (trace) … 4 (critical); -1 for anything else."""
    return _RANK.get(weight, -1)


class Change:
    """One entry of a receipt's ``changes`` with the item's post-image."""

    __slots__ = ("item", "op", "layer", "share", "image")

    def __init__(self, item: str, op: str, layer: str | None, share: int | None, image: Mapping[str, Any]) -> None:
        self.item, self.op, self.layer, self.share, self.image = item, op, layer, share, image

    def __repr__(self) -> str:
        return f"Change({self.item!r}, {self.op!r})"


def record_changes(record: Mapping[str, Any]) -> list[Change]:
    """The receipt's changes of a commit/acknowledge record, in receipt order (none for other types)."""
    if record.get("type") not in ("commit", "acknowledge"):
        return []
    images = {entry["item"]["id"]: entry["item"] for entry in record.get("changes") or ()}
    receipt = record.get("receipt") or {}
    return [Change(entry["item"], entry["op"], entry.get("layer"), entry.get("share"),
                   images.get(entry["item"], {"id": entry["item"]}))
            for entry in receipt.get("changes") or ()]


def declared_reasons(record: Mapping[str, Any]) -> dict[str, str]:
    """``{item id: reason}`` as the batch declared it; cascades and merge sources inherit theirs."""
    reasons: dict[str, str] = {}
    request = record.get("request") or {}

    def walk(declarations: Sequence[Any]) -> None:
        for declaration in declarations or ():
            if not isinstance(declaration, Mapping):
                continue
            item, reason = declaration.get("id"), declaration.get("reason")
            if isinstance(item, str) and isinstance(reason, str):
                reasons[item] = reason
                relation = declaration.get("relation")
                if isinstance(relation, str) and relation.startswith("merges:"):
                    for source in relation[len("merges:"):].strip(" []").split(","):
                        reasons.setdefault(source.strip(' "'), reason)
            children = declaration.get("children")
            if isinstance(children, list):
                walk(children)

    walk(request.get("declarations") or ())
    for change in record_changes(record):
        cascade = change.image.get("withdrawn_with")
        if change.op == "withdrawn" and change.item not in reasons and cascade in reasons:
            reasons[change.item] = reasons[cascade]
    return reasons


def _sources_key(sources: Any) -> list:
    """Sources as a short comparable value: their count and a checksum of their text (not a security digest)."""
    sources = sources or []
    return [len(sources), zlib.crc32(repr(sources).encode("utf-8", "surrogatepass"))]


def facts_of(item: Mapping[str, Any], parent: str | None = None) -> dict:
    """The facts a consumer compares, from a post-image or a state document's ItemView."""
    facts = {name: item.get(name) for name in FACT_FIELDS if name not in ("parent", "sources")}
    facts["parent"] = item.get("parent", parent)
    facts["sources"] = _sources_key(item.get("sources"))
    return facts


def fact_diff(before: Mapping[str, Any] | None, after: Mapping[str, Any]) -> dict[str, list]:
    """``{field: [before, after]}`` for every fact that differs (empty when ``before`` is unknown)."""
    if before is None:
        return {}
    changed = {}
    for name in FACT_FIELDS:
        old, new = before.get(name), after.get(name)
        if name in ("due_at", "stale_after") and old is not None and new is not None:
            if instant_key(old) == instant_key(new):
                continue
        if old != new:
            changed[name] = [old, new]
    return changed


class ItemFacts:
    """The last known facts of every active item, and the last event_seq absorbed.

    Kept as one JSON value in a consumer's memory (``save``), written once per
    delivery. ``absorb(record)`` returns, per change of a record not absorbed
    before, the facts before and after; a record at or below ``seq`` returns
    None (it was already counted).
    """

    def __init__(self, seq: int = 0, items: dict[str, dict] | None = None, known: bool = False) -> None:
        self.seq, self.items, self.known = seq, items if items is not None else {}, known

    @classmethod
    def from_json(cls, saved: Any) -> "ItemFacts":
        if not isinstance(saved, dict):
            return cls()
        return cls(saved.get("seq", 0), saved.get("items") or {}, bool(saved.get("known")))

    def to_json(self) -> dict:
        return {"seq": self.seq, "items": self.items, "known": self.known}

    @classmethod
    def load(cls, memory: MutableMapping[str, Any], key: str) -> "ItemFacts":
        return cls.from_json(memory.get(key))

    def save(self, memory: MutableMapping[str, Any], key: str) -> None:
        memory[key] = self.to_json()

    @classmethod
    def from_document(cls, document: Mapping[str, Any]) -> "ItemFacts":
        """Facts of every active item of a §8 state document (a consumer's starting point)."""
        items: dict[str, dict] = {}

        def walk(layer: Mapping[str, Any] | None, parent: str | None) -> None:
            for view in (layer or {}).get("items") or ():
                items[view["id"]] = facts_of(view, parent)
                walk(view.get("children"), view["id"])

        walk(document.get("root"), None)
        return cls(document.get("event_seq", 0), items, known=True)

    def absorb(self, record: Mapping[str, Any]) -> list[tuple[Change, dict | None, dict]] | None:
        """``[(change, before, after)]`` for a new record; None when it was absorbed before."""
        seq = record["event_seq"]
        if seq <= self.seq:
            return None
        found = []
        for change in record_changes(record):
            after = facts_of(change.image)
            before = self.items.get(change.item)
            found.append((change, before, after))
            if change.image.get("status", "active") == "active":
                self.items[change.item] = after
            else:
                self.items.pop(change.item, None)
        self.seq = seq
        return found


def text_language(text: str | None, default: str = "en") -> str:
    """``"zh"`` when ``text`` holds a CJK ideograph or CJK punctuation; ``"en"`` otherwise (``default`` if empty)."""
    for char in text or "":
        code = ord(char)
        if 0x4E00 <= code <= 0x9FFF or 0x3400 <= code <= 0x4DBF or 0x3000 <= code <= 0x303F \
                or 0xFF00 <= code <= 0xFFEF or 0x20000 <= code <= 0x2A6DF:
            return "zh"
    return default if not text else "en"


def walk_items(document: Mapping[str, Any]) -> Iterator[tuple[dict, int]]:
    """Every active ItemView of a state document with its depth (1 = root), depth first in rank order."""
    def walk(layer, depth):
        for view in (layer or {}).get("items") or ():
            yield view, depth
            yield from walk(view.get("children"), depth + 1)

    yield from walk(document.get("root"), 1)
