"""Reading a batch's declarations (contract §3.2–§3.5, §5 error order).

``read_declarations`` walks the declarations in document order, depth first
(a parent before its listed children), and for each one reports, in this
order: id, relation, unknown keys, duplicate, field values (title, summary,
weight, kind, share, reason, due_at, stale_after, sources, children), target
errors, a missing reason. Target checks read the state *before* the batch, so
the order of declarations never changes the outcome.

A declaration is *applied* to the candidate unless it has an invalid id,
relation, weight or kind, is a duplicate, has a target error, is too deep, or
sits in the list of a parent that is not applied. Other bad field values are
reported and treated as omitted, so that final-state errors are still found
in the same answer.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from fold_core.kernel import fields as F
from fold_core.kernel.outcome import error
from fold_core.shares import weight_rank
from fold_core.state import State
from fold_core.text import ITEM_ID, preview, type_name

__all__ = ["Declaration", "MAX_DEPTH", "TOP", "read_declarations"]

MAX_DEPTH = 6
TOP = "<top-level>"  # list_parent of a top-level declaration
_KNOWN_KEYS = frozenset(F.DECLARATION_KEYS)


@dataclass(slots=True)
class Declaration:
    """One declaration as the kernel understood it."""

    id: str | None
    relation: F.Relation | None
    list_parent: str | None  # TOP, or the parent whose children list holds it
    values: dict = field(default_factory=dict)  # given fields with acceptable values
    children: list["Declaration"] | None = None  # the listed children when a list was given
    lists_children: bool = False  # a valid `children` key (list or null) was given
    applied: bool = False
    bad_summary: bool = False


class _Walk:
    def __init__(self, state: State, budget: int) -> None:
        self.state = state
        self.budget = budget
        self.errors: list[dict] = []
        self.order: list[Declaration] = []
        self.occurrences: dict[str, int] = {}
        # The field checks in contract order, built once per batch rather than per declaration.
        self.checks: tuple[tuple[str, Callable[[object], tuple[object, F.Problems]]], ...] = (
            ("title", F.check_title),
            ("summary", F.check_summary),
            ("weight", F.check_weight),
            ("kind", F.check_kind),
            ("share", lambda value: F.check_share(value, budget)),
            ("reason", F.check_reason),
            ("due_at", lambda value: F.check_instant(value, "due_at")),
            ("stale_after", lambda value: F.check_instant(value, "stale_after")),
            ("sources", F.check_sources),
        )

    # -- helpers ------------------------------------------------------

    def invalid(self, item: str | None, field_name: str, message: str) -> None:
        record = error("invalid_field", message, field=field_name)
        if item is not None:
            record = error("invalid_field", message, item=item, field=field_name)
        self.errors.append(record)

    def depth_of(self, item_id: str) -> int:
        depth, items = 1, self.state.items
        parent = items[item_id]["parent"]
        while parent is not None and depth <= MAX_DEPTH:
            depth += 1
            parent = items[parent]["parent"]
        return depth

    def count(self, item_id: str) -> int:
        seen = self.occurrences.get(item_id, 0) + 1
        self.occurrences[item_id] = seen
        return seen

    # -- the walk -----------------------------------------------------

    def visit(self, raw: object, where: str, list_parent: str | None, depth: int,
              parent_applied: bool) -> None:
        if not isinstance(raw, dict):
            self.invalid(None, "declarations", f"{where} must be an object, got {type_name(raw)}")
            return
        raw_id = raw.get("id")
        item = raw_id if isinstance(raw_id, str) and ITEM_ID.fullmatch(raw_id) is not None else None
        id_ok = item is not None
        if item is not None and self.occurrences.get(item, 0) >= 2:
            self.count(item)
            return  # a third or later occurrence is skipped (§3.5)
        decl = Declaration(id=item, relation=None, list_parent=list_parent)
        self.order.append(decl)
        ok = parent_applied

        # id
        if "id" not in raw:
            self.invalid(None, "id", f"{where}: id is required")
        elif not id_ok:
            self.invalid(None, "id", f"{where}: id must match [a-z0-9-]{{1,64}}, got {preview(raw_id)}")
        ok = ok and id_ok

        # relation
        try:
            decl.relation = F.parse_relation(raw.get("relation", "new"), item)
        except F.RelationError as problem:
            if problem.unsupported:
                relation = raw["relation"]  # only a string names an unsupported relation
                shown = relation if len(relation) <= 200 else relation[:200] + "…"
                located = {"item": item} if item is not None else {}  # no locator for a bad id (§3.5)
                self.errors.append(error("unsupported_relation", str(problem), **located, relation=shown))
            else:
                self.invalid(item, "relation", str(problem))
            ok = False
        relation = decl.relation
        word = relation.word if relation else None

        # unknown keys
        for key in raw:
            if key not in _KNOWN_KEYS:
                self.invalid(item, key if len(key) <= 64 else key[:64] + "…",
                             f"unknown key {preview(key)} in a declaration")

        # duplicates: the declaration's id, then merge sources in listed order
        duplicate = False
        for named in ((item,) if item is not None else ()) + (relation.sources if relation else ()):
            seen = self.count(named)
            if seen == 2:
                self.errors.append(error("duplicate_declaration",
                                         f"{named} appears more than once in the batch", item=named))
            duplicate = duplicate or seen >= 2
        ok = ok and not duplicate

        # field values
        too_deep = list_parent != TOP and depth > MAX_DEPTH
        ok = self.read_fields(raw, decl, word, too_deep, depth) and ok
        ok = ok and not too_deep

        # target errors, then a missing reason
        targets_ok = True
        if item is not None and relation is not None and not duplicate and not too_deep:
            before = len(self.errors)
            self.check_target(raw, decl, item, relation)
            targets_ok = len(self.errors) == before
        ok = ok and targets_ok
        if not duplicate:  # a duplicate gets no target or reason checks (§3.5)
            self.check_reason(raw, decl, targets_ok and id_ok)
        decl.applied = ok

        # children, depth first
        children = raw.get("children")
        if word in ("new", "supersedes") and isinstance(children, list) and not too_deep:
            decl.children = []
            child_depth = depth + 1
            for index, child in enumerate(children):
                first = len(self.order)
                self.visit(child, f"{where}.children[{index}]", item, child_depth, ok)
                decl.children.extend(self.order[first:first + 1])

    def read_fields(self, raw: dict, decl: Declaration, word: str | None, too_deep: bool, depth: int) -> bool:
        """Check field values in contract order; return False when weight or kind is unusable."""
        item = decl.id
        usable = True
        if word == "withdraw":
            # In the §3.5 field order: a key a withdraw may not hold is reported in its own slot.
            for key in F.DECLARATION_KEYS[2:]:
                if key == "reason":
                    reason, problems = F.check_reason(raw.get("reason"))
                    self.report(item, problems)
                    if reason is not None:
                        decl.values["reason"] = reason
                elif key in raw:
                    self.invalid(item, key, f"{key} is not allowed on a withdraw "
                                            "(a withdraw holds only id, relation and reason)")
            return True
        required = {"title"} if word in ("new", "merges") else set()
        if word is not None:
            required |= {"weight", "kind"}
        for key, check in self.checks:
            if key not in raw:
                if key in required:
                    self.invalid(item, key, f"{key} is required on a {word} declaration")
                    usable = usable and key not in ("weight", "kind")
                continue
            value, problems = check(raw[key])
            if problems:
                self.report(item, problems)
                usable = usable and key not in ("weight", "kind")
                decl.bad_summary = decl.bad_summary or key == "summary"
                continue
            if key == "reason" and value is None:
                continue  # reason: null means absent
            decl.values[key] = value
        if "children" in raw:
            children = raw["children"]
            if children is not None and not isinstance(children, list):
                self.invalid(item, "children", f"children must be an array or null, got {type_name(children)}")
            elif word != "merges":
                decl.lists_children = True
        if too_deep:
            self.invalid(item, "children", f"{item or 'this item'} would sit at depth {depth}; "
                                           f"items may be nested at most {MAX_DEPTH} levels deep")
        return usable

    def report(self, item: str | None, problems: list[tuple[str, str]]) -> None:
        for field_name, message in problems:
            self.invalid(item, field_name, message)

    # -- target checks (state before the batch) ----------------------

    def check_target(self, raw: dict, decl: Declaration, item: str, relation: F.Relation) -> None:
        """The checks of ``decl`` (its id ``item``, its ``relation``) against the state before the batch."""
        items, word = self.state.items, relation.word
        # Only the children of a declaration with an invalid id (list_parent None) skip the
        # parent-relation checks; their own children are checked against them as usual.
        in_list = decl.list_parent not in (TOP, None)
        if word == "new":
            if item in items:
                self.item_exists(item)
            return
        if word == "merges":
            self.check_merge(raw, decl, item, relation.sources, in_list)
            return
        target = items.get(item)
        if target is None:
            self.errors.append(error("item_not_found", f"no item {item} to "
                                     f"{'patch' if word == 'supersedes' else 'withdraw'}", item=item))
            return
        if target["status"] == "merged":
            self.errors.append(error("item_merged", f"{item} was merged into {target['merged_into']}; "
                                     f"write {target['merged_into']} instead",
                                     item=item, merged_into=target["merged_into"]))
            return
        if in_list and target["parent"] != decl.list_parent:
            self.errors.append(error("unsupported_move",
                                     f"{item} belongs to {_layer_name(target['parent'])}, "
                                     f"not to the children of {decl.list_parent}; items cannot move",
                                     item=item, from_parent=target["parent"], to_parent=decl.list_parent))
            return
        if word == "withdraw" and target["status"] != "active":
            self.errors.append(error("item_inactive", f"{item} is already {target['status']}",
                                     item=item, status=target["status"]))

    def item_exists(self, item: str) -> None:
        status = self.state.items[item]["status"]
        self.errors.append(error("item_exists", f"id {item} is already used (status {status}); "
                                 "ids are never reused: choose a new id, or supersede it", item=item))

    def check_merge(self, raw: dict, decl: Declaration, item: str, merged: tuple[str, ...], in_list: bool) -> None:
        items = self.state.items
        sources = list(merged)
        if item in items:
            self.item_exists(item)
        if "children" in raw:
            self.errors.append(error("unsupported_merge_structure",
                                     "a merge result cannot carry children", item=item, sources=sources))
        every_source_found = True
        for source in sources:
            record = items.get(source)
            if record is None:
                every_source_found = False
                self.errors.append(error("item_not_found", f"no item {source} to merge", item=source))
            elif record["status"] == "merged":
                self.errors.append(error("item_merged", f"{source} was already merged into "
                                         f"{record['merged_into']}", item=source,
                                         merged_into=record["merged_into"]))
            elif record["status"] != "active":
                self.errors.append(error("item_inactive", f"{source} is {record['status']}; "
                                         "only active items can be merged", item=source,
                                         status=record["status"]))
            elif record["ever_had_children"]:
                self.errors.append(error("unsupported_merge_structure",
                                         f"{source} has or had children; only leaves can be merged",
                                         item=item, sources=sources))
        if not every_source_found:
            return
        inherited = F.merge_sources(decl.values.get("sources", []), [items[source]["sources"] for source in sources])
        if len(inherited) > F.MAX_SOURCES:
            self.invalid(item, "sources", f"the merge result would hold {len(inherited)} sources after "
                                          f"inheriting its sources' lists; at most {F.MAX_SOURCES}")
        layers = [items[source]["parent"] for source in sources]
        if len(set(layers)) > 1:
            self.errors.append(error("merge_layer_mismatch", "merge sources must share one layer",
                                     item=item, sources=sources, layers=layers))
        elif in_list and layers[0] != decl.list_parent:
            self.errors.append(error("merge_layer_mismatch",
                                     f"the sources sit in {_layer_name(layers[0])}, but the merge is "
                                     f"listed under {decl.list_parent}", item=item, sources=sources,
                                     layers=layers))

    def check_reason(self, raw: dict, decl: Declaration, targets_ok: bool) -> None:
        word = decl.relation.word if decl.relation else None
        if "reason" in decl.values or (raw.get("reason") is not None):
            return  # given (a bad value was already reported)
        causes: list[str] = []
        if word == "withdraw":
            causes.append("a withdraw")
        elif targets_ok and word is not None:
            stored = self.state.items.get(decl.id) if word == "supersedes" and decl.id is not None else None
            weight = decl.values.get("weight")
            if stored is not None and weight is not None and weight_rank(weight) > weight_rank(stored["weight"]):
                causes.append(f"lowering the weight from {stored['weight']} to {weight}")
            if "share" in decl.values:
                declared = decl.values.get("share")
                current = stored["explicit_share"] if stored is not None else None
                if declared != current:
                    action = "setting" if current is None else ("cancelling" if declared is None else "changing")
                    causes.append(f"{action} the share override")
        if causes:
            self.invalid(decl.id, "reason", f"reason is required for {' and '.join(causes)}")


def _layer_name(parent: str | None) -> str:
    return "the root layer" if parent is None else f"the children of {parent}"


def read_declarations(state: State, declarations: list, budget: int) -> tuple[list[Declaration], list[dict]]:
    """Every declaration in document order (depth first) and the errors found."""
    walk = _Walk(state, budget)
    for index, raw in enumerate(declarations):
        raw_id = raw.get("id") if isinstance(raw, dict) else None
        depth = 1
        if isinstance(raw_id, str) and raw_id in state.items:
            depth = walk.depth_of(raw_id)
        walk.visit(raw, f"declarations[{index}]", TOP, depth, True)
    return walk.order, walk.errors
