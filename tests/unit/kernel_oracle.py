"""An independent oracle for the kernel's results (contract §2, §3.5, §4, §8).

Nothing here calls the kernel's own helpers (``derive_share``, ``rank_items``,
``resolve_item``, ``instant_key``): each rule is recomputed from the
contract's text, so that a bug in a shared helper cannot hide itself.

* ``contract_share`` — §2's table: ``max(1, floor(B·ρ(w)))`` with ρ =
  critical 3/8, high 3/16, normal 3/32, low 3/64, trace always 1; an explicit
  share wins.
* ``check_state`` — after every accepted step: every item's share is the
  table's; an active item has no ``withdrawn_with`` and an active parent (or
  none); a merged item's result sits in the same layer; each layer's ``used``
  fits the budget; and the state document (every level, every not-active
  entry) ranks each layer by §2's order (share, weight, due, updated, id),
  shows each annotation under the item its ``merged_into`` chain ends at (in
  save order), and resolves pending annotations the same way.
* ``check_error_order`` — a rejection lists its errors in §3.5's order:
  batch-level errors, then per declaration in document order (id, relation,
  unknown keys, duplicate, field values in the §3.5 field order, target
  errors), then ``acknowledges`` errors, then final-state errors
  (``layer_budget``, ``inactive_parent``, ``explicit_withdraw_required``).
"""

from __future__ import annotations

from datetime import datetime
from fractions import Fraction

__all__ = ["RHO", "check_error_order", "check_state", "contract_share", "declaration_positions"]

RHO = {"critical": Fraction(3, 8), "high": Fraction(3, 16), "normal": Fraction(3, 32), "low": Fraction(3, 64)}
WEIGHT_ORDER = ("critical", "high", "normal", "low", "trace")
FIELD_ORDER = ("title", "summary", "weight", "kind", "share", "reason", "due_at", "stale_after", "sources",
               "children")
DECLARATION_KEYS = ("id", "relation") + FIELD_ORDER
TARGET_CODES = {"item_exists", "item_not_found", "item_merged", "item_inactive", "unsupported_move",
                "unsupported_merge_structure", "merge_layer_mismatch"}
FINAL_CODES = {"layer_budget": 0, "inactive_parent": 1, "explicit_withdraw_required": 3}


def contract_share(weight: str, explicit: int | None, budget: int) -> int:
    if explicit is not None:
        return explicit
    if weight == "trace":
        return 1
    return max(1, int(budget * RHO[weight]))  # int() of a positive Fraction is its floor


def _instant(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def _rank_order(views: list[dict]) -> list[str]:
    """§2: share descending, weight, due_at ascending (none last), updated_at descending, id."""
    def key(view: dict):
        due = view["due_at"]
        return (-view["share"], WEIGHT_ORDER.index(view["weight"]), due is None,
                _instant(due).timestamp() if due else 0.0, -_instant(view["updated_at"]).timestamp(), view["id"])
    return [view["id"] for view in sorted(views, key=key)]


def _chain_end(items: dict, item_id: str) -> str:
    seen = set()
    while items[item_id]["status"] == "merged":
        assert item_id not in seen, f"a merged_into cycle through {item_id}"
        seen.add(item_id)
        item_id = items[item_id]["merged_into"]
    return item_id


def check_state(state, document: dict, where: str) -> None:
    """The invariants of an accepted state and its full state document (``not_active=None``)."""
    items, budget = state.items, state.budget
    used: dict = {}
    for item_id, item in items.items():
        expected = contract_share(item["weight"], item["explicit_share"], budget)
        assert item["share"] == expected, f"{where}: {item_id} holds share {item['share']}, the table gives {expected}"
        if item["status"] == "active":
            assert item["withdrawn_with"] is None, f"{where}: active {item_id} keeps withdrawn_with"
            parent = item["parent"]
            assert parent is None or items[parent]["status"] == "active", \
                f"{where}: active {item_id} under {items[parent]['status']} {parent}"
            used[parent] = used.get(parent, 0) + item["share"]
        if item["status"] == "merged":
            result = items[item["merged_into"]]
            assert result["parent"] == item["parent"], \
                f"{where}: {item_id} sat in layer {item['parent']}, its merge result {result['id']} in {result['parent']}"
        if item["withdrawn_with"] is not None:
            assert item["status"] == "withdrawn", f"{where}: {item_id} is {item['status']} with withdrawn_with"
    for layer, total in used.items():
        assert total <= budget, f"{where}: layer {layer} uses {total} of {budget}"

    notes_by_item: dict[str, list[str]] = {}
    for note_id in sorted(state.annotations, key=lambda note: int(note.split("-")[1])):
        notes_by_item.setdefault(_chain_end(items, state.annotations[note_id]["item"]), []).append(note_id)
    seen: list[str] = []

    def layer(view: dict | None, parent: str | None) -> None:
        members = sorted(item_id for item_id, item in items.items()
                         if item["status"] == "active" and item["parent"] == parent)
        if view is None:
            assert not members, f"{where}: {parent} has active children but children is null"
            return
        listed = view["items"]
        assert sorted(v["id"] for v in listed) == members, f"{where}: layer {parent} lists the wrong items"
        assert [v["id"] for v in listed] == _rank_order(listed), f"{where}: layer {parent} is not in §2 rank order"
        assert [v["rank"] for v in listed] == list(range(1, len(listed) + 1)), f"{where}: ranks of {parent}"
        assert view["used"] == sum(v["share"] for v in listed) and view["free"] == budget - view["used"], where
        for v in listed:
            stored = items[v["id"]]
            assert v["share"] == contract_share(stored["weight"], stored["explicit_share"], budget), where
            assert [note["id"] for note in v["annotations"]] == notes_by_item.get(v["id"], []), \
                f"{where}: {v['id']} shows annotations {[n['id'] for n in v['annotations']]}, " \
                f"expected {notes_by_item.get(v['id'], [])} (through merged_into)"
            seen.append(v["id"])
            layer(v["children"], v["id"])

    layer(document["root"], None)
    pending = [note for note in state.annotations.values() if note["status"] == "saved"]
    expected_pending = [(note["id"], _chain_end(items, note["item"])) for note in
                        sorted(pending, key=lambda note: int(note["id"].split("-")[1]))]
    assert [(p["id"], p["resolved_item"]) for p in document["pending_annotations"]] == expected_pending, \
        f"{where}: pending annotations do not resolve through merged_into"
    inactive = [item for item in items.values() if item["status"] != "active"]
    assert document["not_active_total"] == len(inactive), where
    order = sorted(inactive, key=lambda item: (_instant(item["status_at"]).timestamp(), item["id"]))
    assert [entry["id"] for entry in document["not_active"]] == [item["id"] for item in order], \
        f"{where}: not_active is not ordered by at, then id"


# -- error order ------------------------------------------------------------------------------


def _walk(declarations: list, out: list) -> None:
    for raw in declarations:
        out.append(raw)
        if isinstance(raw, dict) and isinstance(raw.get("children"), list) \
                and str(raw.get("relation", "new")).split(":")[0] in ("new", "supersedes"):
            _walk(raw["children"], out)


def declaration_positions(batch: dict) -> tuple[dict[str, int], set[str]]:
    """(id -> document position of its first mention, ids mentioned more than once).

    Document order is depth first; a merge mentions its sources where it stands.
    """
    flat: list = []
    raw = batch.get("declarations") if isinstance(batch, dict) else None
    _walk(raw if isinstance(raw, list) else [], flat)
    positions: dict[str, int] = {}
    repeated: set[str] = set()
    for position, decl in enumerate(flat):
        if not isinstance(decl, dict):
            continue
        named = [decl.get("id")]
        relation = decl.get("relation")
        if isinstance(relation, str) and relation.startswith("merges:"):
            named += [part.strip().strip('"') for part in relation[7:].strip().strip("[]").split(",")]
        for item in named:
            if isinstance(item, str):
                if item in positions:
                    repeated.add(item)
                positions.setdefault(item, position)
    return positions, repeated


def _groups(errors: list[dict], positions: dict[str, int]) -> list[tuple[int, int] | None]:
    """Each error's §3.5 group (0 batch, 1 declarations, 2 acknowledges, 3 final state), None if unclear.

    A parent-summary error (``invalid_field`` summary, final state) looks like a field value
    error; it is told apart by standing after a final-state or ``acknowledges`` error, after a
    later declaration's error, or naming an item the batch does not declare.
    """
    groups: list[tuple[int, int] | None] = []
    late, furthest = False, -1
    for error in errors:
        code, field, item = error["code"], error.get("field"), error.get("item")
        if code == "stale_revision" or (code == "invalid_field" and item is None
                                        and field in ("batch_id", "base_revision", "actor", "now")):
            group = (0, 0)
        elif code == "annotation_not_found":
            group = (2, 0)
        elif code in FINAL_CODES:
            group = (3, FINAL_CODES[code])
        elif item is None:
            group = None
        elif code == "invalid_field" and field == "summary" and (
                late or item not in positions or positions[item] < furthest):
            group = (3, 2)
        else:
            group = (1, 0)
            furthest = max(furthest, positions.get(item, -1))
        late = late or (group is not None and group[0] >= 2)
        groups.append(group)
    return groups


def _slot(error: dict) -> int | None:
    """The §3.5 slot of a declaration error, or None when the contract leaves it open here."""
    code, field = error["code"], error.get("field")
    if code == "unsupported_relation" or (code == "invalid_field" and field == "relation"):
        return 1
    if code == "duplicate_declaration":
        return 3
    if code in TARGET_CODES:
        return 50
    if code == "invalid_field":
        if field in ("reason", "sources"):
            return None  # a missing reason and a merge's inherited sources come after the targets
        if field in FIELD_ORDER:
            return 10 + FIELD_ORDER.index(field)
        if field not in DECLARATION_KEYS:
            return 2  # an unknown key
    return None


def check_error_order(batch: object, errors: list[dict], where: str) -> None:
    """The rejection's errors follow §3.5's order (as far as the locators tell)."""
    shown = [(e["code"], e.get("item"), e.get("field")) for e in errors]
    positions, repeated = declaration_positions(batch if isinstance(batch, dict) else {})
    groups = _groups(errors, positions)
    known = [group for group in groups if group is not None]
    assert known == sorted(known), f"{where}: errors out of §3.5 group order: {shown}"
    budgets = [error["layer"] for error in errors if error["code"] == "layer_budget"]
    assert budgets == sorted(budgets, key=lambda layer: (layer is not None, layer or "")), \
        f"{where}: layer_budget errors not root first, then by parent id: {budgets}"
    last_position, last_slot = -1, -1
    for error, group in zip(errors, groups):
        item = error.get("item")
        if group != (1, 0) or item in repeated or item not in positions:
            continue
        position, slot = positions[item], _slot(error)
        assert position >= last_position, \
            f"{where}: an error of {item} (declaration {position}) after one of declaration {last_position}: {shown}"
        if position != last_position:
            last_position, last_slot = position, -1
        if slot is not None:
            assert slot >= last_slot, f"{where}: {error['code']} {error.get('field')} of {item} out of §3.5 order: {shown}"
            last_slot = slot
