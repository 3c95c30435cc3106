"""Random kernel histories for the property tests (contract §1–§5).

A history is a list of steps (commits and annotations) drawn against the
state the earlier steps produced. Commit modes: ``valid`` (1–3 valid
declarations), ``noop`` (patches that change nothing: ``checked``), ``acks``
(acknowledgements only) — these are *meant to be accepted*, and ``Builder``
keeps them acceptable as a whole (budgets, parents, children lists; see its
docstring) — and ``mixed`` (valid declarations plus one invalid one),
``single`` (one batch-wide problem), ``nonobject`` and ``batch-level``, each
with the error codes it must produce.

Shares are the contract's table (``kernel_oracle.contract_share``), never
the kernel's ``derive_share``.
"""

from __future__ import annotations

import copy
import json
import unicodedata
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone

from hypothesis import strategies as st

from fold_core.kernel import Accepted, Rejected, apply_batch, empty_state, save_annotation
from fold_core.shares import KINDS, WEIGHTS
from kernel_oracle import contract_share

BUDGETS = (8, 16, 64)
MAX_DEPTH = 6
T0 = datetime(2026, 10, 9, 8, 0, tzinfo=timezone(timedelta(hours=8)))
MEANT_VALID = ("valid", "noop", "acks")  # commit modes whose batches the generator means to be accepted

# -- values ------------------------------------------------------------------

_LINE_CHARS = st.characters(blacklist_categories=("Cc", "Cs", "Zl", "Zp"))
TITLES = st.sampled_from(["签证材料缺银行流水，12日截止", "Pay rent", "Dentist", "x", "Q3 report draft",
                          "Ⅻ ✓ émoji 🎉", "a" * 24]) | \
    st.text(_LINE_CHARS, min_size=1, max_size=24).filter(lambda text: not text.isspace())
SUMMARIES = st.sampled_from(["bank statement missing", "two of three done", "见邮件", "s" * 60]) | \
    st.text(_LINE_CHARS, min_size=1, max_size=60).filter(lambda text: not text.isspace())
REASONS = st.sampled_from(["user asked", "done", "no longer relevant", "duplicate of another item", "r" * 200])
WEIGHT = st.sampled_from(WEIGHTS)
KIND = st.sampled_from(KINDS)
ACTORS = st.sampled_from(["agent", "host", "代理", "user-2"])
OFFSETS = (timedelta(hours=8), timedelta(0), timedelta(hours=-5), timedelta(hours=5, minutes=30))


def spell(moment: datetime, draw) -> str:
    """The same instant in one of several spellings (offsets, ``Z``, seconds)."""
    offset = draw(st.sampled_from(OFFSETS))
    local = moment.astimezone(timezone(offset))
    text = local.isoformat()
    if offset == timedelta(0) and draw(st.booleans()):
        text = text[:-6] + "Z"
    return text


def instants(draw) -> str:
    return spell(T0 + timedelta(minutes=draw(st.integers(-10_000, 200_000))), draw)


def respell(text: str, draw) -> str:
    """Another spelling of a stored instant (not a change, §1 "times")."""
    return spell(datetime.fromisoformat(text), draw)


def sources(draw) -> list[dict]:
    result = []
    for index in range(draw(st.integers(0, 3))):
        source = {"channel": draw(st.sampled_from(["email", "rss", "worklog"])),
                  "ref": draw(st.sampled_from(["event:e-1", "event:e-2", f"msg-{index}", "https://x.test/a"]))}
        if draw(st.booleans()):
            source["quote"] = draw(st.sampled_from(["see attached", "line one\nline two", ""]))
        if draw(st.booleans()):
            source["observed_at"] = instants(draw)
        result.append(source)
    return result


# -- histories ---------------------------------------------------------------

@dataclass
class Step:
    """One input of a history and what the generator knows about its outcome."""

    op: str  # "commit" | "annotate"
    args: dict
    expect_codes: frozenset = frozenset()  # a rejection must hold each of these codes
    expect_type: str | None = None  # e.g. "checked" for batches that change nothing
    note: str = ""


@dataclass
class History:
    budget: int
    steps: list[Step]
    outputs: list[str] = field(default_factory=list)  # what the generating run answered


class _Ids:
    """Fresh ids for the generator (never used before in this history)."""

    def __init__(self) -> None:
        self.count = 0

    def fresh(self, prefix: str = "i") -> str:
        self.count += 1
        return f"{prefix}{self.count}"


def run_step(state, step: Step):
    """Apply one step; an exception is returned (not raised) so that it can be reported."""
    try:
        if step.op == "annotate":
            return save_annotation(state, **step.args)
        return apply_batch(state, **step.args)
    except Exception as problem:  # noqa: BLE001 - the property is that nothing is raised
        return problem


def output_text(outcome) -> str:
    if isinstance(outcome, Accepted):
        return json.dumps({"receipt": outcome.receipt, "record": outcome.record})
    if isinstance(outcome, Rejected):
        return json.dumps(outcome.document)
    return f"raised {type(outcome).__name__}: {outcome}"


def _active(state) -> list[str]:
    return sorted(item_id for item_id, item in state.items.items() if item["status"] == "active")


def _active_children(state, parent: str) -> list[str]:
    return sorted(state.active.get(parent, ()))


def _depth(state, item_id: str) -> int:
    depth, parent = 1, state.items[item_id]["parent"]
    while parent is not None:
        depth, parent = depth + 1, state.items[parent]["parent"]
    return depth


class Builder:
    """Draws declarations against one state, keeping a batch meant to be valid acceptable.

    ``taken`` keeps ids distinct inside a batch and also blocks the moves that
    would make a batch of valid declarations fail as a whole: a withdraw takes
    its whole subtree (so nothing below it is named elsewhere: no
    ``inactive_parent``); a restore and a merge take the parent of their
    layer (so its children list is not given and it is not withdrawn); a
    children list needs every active child of its parent untaken (no
    ``explicit_withdraw_required``). ``used`` follows every layer's budget
    through the batch (shares from the contract's table, ``contract_share``),
    so weights and shares are chosen to fit (no ``layer_budget``).
    """

    def __init__(self, draw, state, ids: _Ids) -> None:
        self.draw = draw
        self.state = state
        self.ids = ids
        self.budget = state.budget
        self.taken: set[str] = set()
        self.used: dict[str | None, int] = {}

    def pick(self, pool) -> str | None:
        pool = sorted(item for item in pool if item not in self.taken)
        if not pool:
            return None
        chosen = self.draw(st.sampled_from(pool))
        self.taken.add(chosen)
        return chosen

    # -- the batch's effect, as far as the generator needs it

    def layer_used(self, layer: str | None) -> int:
        if layer not in self.used:
            items = self.state.items
            self.used[layer] = sum(items[item]["share"] for item in self.state.active.get(layer, ()))
        return self.used[layer]

    def fits(self, layer: str | None, delta: int) -> bool:
        return self.layer_used(layer) + delta <= self.budget

    def charge(self, layer: str | None, delta: int) -> None:
        self.used[layer] = self.layer_used(layer) + delta

    def share_of(self, weight: str, explicit: int | None) -> int:
        return contract_share(weight, explicit, self.budget)

    def subtree(self, item_id: str) -> set[str]:
        below, frontier = set(), [item_id]
        children: dict = defaultdict(list)
        for other, record in self.state.items.items():
            children[record["parent"]].append(other)
        while frontier:
            for child in children.get(frontier.pop(), ()):
                below.add(child)
                frontier.append(child)
        return below

    def free_parent(self, parent: str | None) -> bool:
        """A layer whose parent the batch leaves alone (root always)."""
        return parent is None or (self.state.items[parent]["status"] == "active" and parent not in self.taken)

    def may_restore_into(self, parent: str | None) -> bool:
        """A free layer whose parent may get an active child (it has a summary)."""
        return self.free_parent(parent) and (parent is None or self.state.items[parent]["summary"] is not None)

    # -- valid declarations ------------------------------------------------

    def new(self, depth: int = 1, layer: str | None = None, count: bool = True) -> dict | None:
        """A new item (maybe with new children) in ``layer``; None when the layer has no room left."""
        draw = self.draw
        decl = {"id": self.ids.fresh(), "title": draw(TITLES), "weight": draw(WEIGHT), "kind": draw(KIND)}
        if draw(st.booleans()):
            decl["relation"] = "new"
        if draw(st.integers(0, 2)) == 0:
            decl["summary"] = draw(st.none() | st.just("") | SUMMARIES)
        if draw(st.integers(0, 5)) == 0:
            decl["share"] = draw(st.integers(1, self.budget))
            decl["reason"] = draw(REASONS)
        if draw(st.integers(0, 3)) == 0:
            decl["due_at"] = instants(draw)
        if draw(st.integers(0, 5)) == 0:
            decl["stale_after"] = instants(draw)
        if draw(st.integers(0, 3)) == 0:
            decl["sources"] = sources(draw)
        if count:
            share = self.share_of(decl["weight"], decl.get("share"))
            if not self.fits(layer, share):
                decl.pop("share", None)
                decl["weight"], share = "trace", 1
                if not self.fits(layer, share):
                    return None
            self.charge(layer, share)
        if depth < 3 and draw(st.integers(0, 2)) == 0:
            children = [self.new(depth + 1, decl["id"], count) for _ in range(draw(st.integers(0, 3)))]
            decl["children"] = [child for child in children if child is not None]
            if decl["children"]:
                decl["summary"] = draw(SUMMARIES)
        self.taken.add(decl["id"])
        return decl

    def noop_patch(self, item_id: str) -> dict:
        """A supersedes that repeats the stored values (possibly respelled): not a change."""
        draw, stored = self.draw, self.state.items[item_id]
        decl = {"id": item_id, "relation": f"supersedes:{item_id}", "weight": stored["weight"],
                "kind": stored["kind"]}
        if draw(st.booleans()):
            decl["title"] = stored["title"]
        if draw(st.booleans()):
            decl["summary"] = stored["summary"]
        if draw(st.booleans()):
            decl["share"] = stored["explicit_share"]  # the value it has, or null when none: no reason needed
        for key in ("due_at", "stale_after"):
            if draw(st.booleans()):
                decl[key] = stored[key] if stored[key] is None else respell(stored[key], draw)
        if draw(st.booleans()):
            decl["sources"] = copy.deepcopy(stored["sources"])
        if draw(st.integers(0, 3)) == 0:
            decl["reason"] = draw(REASONS)  # a reason alone is not a change
        return decl

    def patch(self) -> dict | None:
        """A supersedes of an active or withdrawn item, with or without a change."""
        draw, items = self.draw, self.state.items
        item_id = self.pick(item for item, record in items.items() if record["status"] == "active"
                            or (record["status"] == "withdrawn" and self.may_restore_into(record["parent"])))
        if item_id is None:
            return None
        stored = items[item_id]
        restoring = stored["status"] == "withdrawn"
        if restoring and stored["parent"] is not None:
            self.taken.add(stored["parent"])
        decl = self.noop_patch(item_id)
        change = draw(st.sampled_from(["title", "summary", "weight", "kind", "due_at", "sources", "none"]))
        if change == "title":
            decl["title"] = draw(TITLES)
        elif change == "summary" and not _active_children(self.state, item_id):
            decl["summary"] = draw(st.none() | st.just("") | SUMMARIES)
        elif change == "weight":
            decl["weight"] = draw(WEIGHT)
        elif change == "kind":
            decl["kind"] = draw(KIND)
        elif change == "due_at":
            decl["due_at"] = draw(st.none()) if draw(st.booleans()) else instants(draw)
        elif change == "sources":
            decl["sources"] = sources(draw)
        held = 0 if restoring else stored["share"]
        if not self.fits(stored["parent"], self.share_of(decl["weight"], stored["explicit_share"]) - held):
            decl["weight"] = stored["weight"] if not restoring else "trace"
        share = self.share_of(decl["weight"], stored["explicit_share"])
        if not self.fits(stored["parent"], share - held):
            return None  # (a restore into a full layer)
        self.charge(stored["parent"], share - held)
        if WEIGHTS.index(decl["weight"]) > WEIGHTS.index(stored["weight"]):
            decl["reason"] = draw(REASONS)
        return decl

    def withdraw(self) -> dict | None:
        state = self.state
        pool = [item for item in _active(state) if not self.subtree(item) & self.taken]
        parents = [item for item in pool if _active_children(state, item)]
        item_id = self.pick(parents) if parents and self.draw(st.booleans()) else None
        item_id = item_id or self.pick(pool)
        if item_id is None:
            return None
        self.taken |= self.subtree(item_id)
        self.charge(state.items[item_id]["parent"], -state.items[item_id]["share"])
        return {"id": item_id, "relation": "withdraw", "reason": self.draw(REASONS)}

    def restore(self) -> dict | None:
        item_id = self.pick(item for item, record in self.state.items.items()
                            if record["status"] == "withdrawn" and self.may_restore_into(record["parent"]))
        if item_id is None:
            return None
        stored = self.state.items[item_id]
        if stored["parent"] is not None:
            self.taken.add(stored["parent"])
        decl = {"id": item_id, "relation": f"supersedes:{item_id}", "weight": stored["weight"],
                "kind": stored["kind"]}
        if self.draw(st.booleans()):
            decl["reason"] = self.draw(REASONS)
        share = self.share_of(decl["weight"], stored["explicit_share"])
        if not self.fits(stored["parent"], share) and stored["explicit_share"] is None:
            decl["weight"], decl["reason"], share = "trace", self.draw(REASONS), 1
        if not self.fits(stored["parent"], share):
            return None
        self.charge(stored["parent"], share)
        return decl

    def merge(self) -> dict | None:
        draw = self.draw
        layers: dict = defaultdict(list)
        for item_id, record in self.state.items.items():
            if record["status"] == "active" and not record["ever_had_children"] and item_id not in self.taken \
                    and self.free_parent(record["parent"]):
                layers[record["parent"]].append(item_id)
        candidates = sorted((members for members in layers.values() if len(members) >= 2), key=sorted)
        if not candidates:
            return None
        members = sorted(draw(st.sampled_from(candidates)))
        chosen = draw(st.lists(st.sampled_from(members), min_size=2, max_size=min(3, len(members)), unique=True))
        self.taken.update(chosen)
        layer = self.state.items[chosen[0]]["parent"]
        if layer is not None:
            self.taken.add(layer)
        spelled = draw(st.sampled_from([", ".join(chosen), ",".join(chosen),
                                        ", ".join(f'"{item}"' for item in chosen), " " + " , ".join(chosen) + " "]))
        decl = {"id": self.ids.fresh("m"), "relation": f"merges:[{spelled}]", "title": draw(TITLES),
                "weight": draw(WEIGHT), "kind": draw(KIND)}
        freed = sum(self.state.items[item]["share"] for item in chosen)
        if not self.fits(layer, self.share_of(decl["weight"], None) - freed):
            decl["weight"] = "trace"
        self.charge(layer, self.share_of(decl["weight"], None) - freed)
        if draw(st.booleans()):
            decl["sources"] = sources(draw)
        self.taken.add(decl["id"])
        return decl

    def share(self) -> dict | None:
        item_id = self.pick(_active(self.state))
        if item_id is None:
            return None
        stored = self.state.items[item_id]
        decl = {"id": item_id, "relation": f"supersedes:{item_id}", "weight": stored["weight"],
                "kind": stored["kind"], "reason": self.draw(REASONS)}
        room = self.budget - self.layer_used(stored["parent"]) + stored["share"]  # ≥ the share it holds
        derived = self.share_of(stored["weight"], None)
        if stored["explicit_share"] is not None and derived <= room and self.draw(st.booleans()):
            decl["share"] = None
        else:
            decl["share"] = self.draw(st.integers(1, room))
        self.charge(stored["parent"], self.share_of(stored["weight"], decl["share"]) - stored["share"])
        return decl

    def children(self) -> dict | None:
        """A parent's full target set: its active children (patched), new ones, maybe a withdraw."""
        draw, state = self.draw, self.state
        parent = self.pick(item for item in _active(state) if _depth(state, item) < MAX_DEPTH
                           and not set(_active_children(state, item)) & self.taken)
        if parent is None:
            return None
        stored = state.items[parent]
        existing = _active_children(state, parent)
        self.taken.update(existing)
        listed: list[dict] = []
        leavable = [child for child in existing if not self.subtree(child) & self.taken]
        withdrawn = draw(st.sampled_from(leavable)) if leavable and draw(st.integers(0, 3)) == 0 else None
        for child in existing:
            if child == withdrawn:
                listed.append({"id": child, "relation": "withdraw", "reason": draw(REASONS)})
                self.taken |= self.subtree(child)
                self.charge(parent, -state.items[child]["share"])
            else:
                listed.append(self.noop_patch(child))
        depth = _depth(state, parent) + 1
        fresh = [self.new(depth, parent) for _ in range(draw(st.integers(0, 2)))]
        listed += [child for child in fresh if child is not None]
        listed = draw(st.permutations(listed))
        decl = {"id": parent, "relation": f"supersedes:{parent}", "weight": stored["weight"],
                "kind": stored["kind"], "summary": stored["summary"] or draw(SUMMARIES), "children": listed}
        if not listed and draw(st.booleans()):
            decl["children"] = None  # null empties the layer too
        return decl

    VALID = ("new", "new", "patch", "withdraw", "withdraw", "restore", "merge", "share", "children", "children")

    def valid(self) -> dict | None:
        kind = self.draw(st.sampled_from(self.VALID))
        return self.new() if kind == "new" else getattr(self, kind)()

    # -- invalid declarations (robust: the code is reported whatever else the batch holds) --

    def invalid(self) -> tuple[dict, str]:
        draw, state = self.draw, self.state
        kind = draw(st.sampled_from(["unknown", "unknown-withdraw", "unknown-merge-source", "reused",
                                     "missing-reason", "bad-field", "huge", "unknown-key", "bad-relation"]))
        if kind == "unknown":
            item_id = self.ids.fresh("zz")
            return {"id": item_id, "relation": f"supersedes:{item_id}", "weight": draw(WEIGHT),
                    "kind": draw(KIND)}, "item_not_found"
        if kind == "unknown-withdraw":
            return {"id": self.ids.fresh("zz"), "relation": "withdraw", "reason": "gone"}, "item_not_found"
        if kind == "unknown-merge-source":
            known = self.pick(_active(state)) or self.ids.fresh("zz")
            return {"id": self.ids.fresh("m"), "relation": f"merges:[{known}, {self.ids.fresh('zz')}]",
                    "title": "merged", "weight": "low", "kind": "fyi"}, "item_not_found"
        if kind == "reused" and state.items:
            item_id = self.pick(state.items)
            if item_id is not None:
                return {"id": item_id, "title": draw(TITLES), "weight": draw(WEIGHT), "kind": draw(KIND)}, \
                    "item_exists"
        if kind == "missing-reason":
            item_id = self.pick(_active(state))
            if item_id is not None:
                return {"id": item_id, "relation": "withdraw"}, "invalid_field"
        if kind == "bad-field":
            decl = self.new(count=False)
            key, value = draw(st.sampled_from([
                ("title", 3), ("title", None), ("title", ""), ("title", "x" * 25), ("title", "a\nb"),
                ("weight", "urgent"), ("weight", 3), ("weight", None), ("kind", "todo"), ("kind", False),
                ("share", "3"), ("share", 0), ("share", self.budget + 1), ("share", 2.5), ("share", True),
                ("summary", "x" * 61), ("summary", 5), ("due_at", "tomorrow"), ("due_at", "2026-10-12T18:00:00"),
                ("due_at", 20261012), ("due_at", []), ("stale_after", {}), ("stale_after", "2026-13-01T00:00:00Z"),
                ("sources", "x"), ("sources", [1]),
                ("sources", [{"channel": "c"}]), ("sources", [{"channel": "c", "ref": "r", "observed_at": ["x"]}]),
                ("children", "x"), ("children", 5), ("id", "UPPER"), ("id", 5),
            ]))
            decl[key] = value
            if key == "share":
                decl["reason"] = "r"
            return decl, "invalid_field"
        if kind == "huge":
            decl = self.new(count=False)
            key = draw(st.sampled_from(["title", "summary", "reason", "id"]))
            decl[key] = "h" * draw(st.sampled_from([201, 10_000, 1_000_000]))
            return decl, "invalid_field"
        if kind == "unknown-key":
            decl = self.valid() or self.new(count=False)
            decl[draw(st.sampled_from(["colour", "priority", "Title", "parent", "status"]))] = "x"
            return decl, "invalid_field"
        relation, code = draw(st.sampled_from([("detail-of:x", "unsupported_relation"),
                                               ("supersedes:someone-else", "invalid_field"),
                                               ("merges:[a]", "invalid_field"), ("withdraw:x", "invalid_field")]))
        decl = self.new(count=False)
        decl["relation"] = relation
        return decl, code

    # -- single-declaration invalid batches (the code depends on the whole batch) --

    def over_budget(self) -> tuple[dict, str]:
        """A new parent whose two children need B + 2 of their layer's B."""
        half = self.budget // 2 + 1
        children = [{"id": self.ids.fresh(), "title": "big", "weight": "normal", "kind": "fyi",
                     "share": half, "reason": "r"} for _ in range(2)]
        return {"id": self.ids.fresh(), "title": "parent", "summary": "over budget", "weight": "trace",
                "kind": "fyi", "children": children}, "layer_budget"

    def partial_children(self) -> tuple[dict, str] | None:
        parents = [item for item in _active(self.state) if _active_children(self.state, item)]
        if not parents:
            return None
        parent = self.draw(st.sampled_from(parents))
        existing = _active_children(self.state, parent)
        dropped = self.draw(st.sampled_from(existing))
        stored = self.state.items[parent]
        return {"id": parent, "relation": f"supersedes:{parent}", "weight": stored["weight"],
                "kind": stored["kind"], "summary": stored["summary"],
                "children": [self.noop_patch(child) for child in existing if child != dropped]}, \
            "explicit_withdraw_required"

    def duplicate(self) -> tuple[dict, str]:
        return self.new(count=False), "duplicate_declaration"

    def parent_without_summary(self) -> tuple[dict, str]:
        """An item that would have active children but no summary (§3.5)."""
        draw = self.draw
        parents = [item for item in _active(self.state) if _active_children(self.state, item)]
        if parents and draw(st.booleans()):
            parent = draw(st.sampled_from(parents))  # clear the summary of an existing parent
            stored = self.state.items[parent]
            return {"id": parent, "relation": f"supersedes:{parent}", "weight": stored["weight"],
                    "kind": stored["kind"], "summary": draw(st.sampled_from([None, ""]))}, "invalid_field"
        leaves = [item for item in _active(self.state) if self.state.items[item]["summary"] is None
                  and _depth(self.state, item) < MAX_DEPTH and not _active_children(self.state, item)]
        if leaves and draw(st.booleans()):
            parent = draw(st.sampled_from(leaves))  # give children to an item without a summary
            stored = self.state.items[parent]
            return {"id": parent, "relation": f"supersedes:{parent}", "weight": stored["weight"],
                    "kind": stored["kind"], "children": [self.new(MAX_DEPTH, count=False)]}, "invalid_field"
        decl = self.new(MAX_DEPTH, count=False)  # a new item with children and no summary
        decl.pop("summary", None)
        decl["children"] = [self.new(MAX_DEPTH, count=False)]
        return decl, "invalid_field"


NON_OBJECTS = st.sampled_from([[], ["x"], "batch", "", 3, -1, 2.5, None, True, False])


@st.composite
def commit_step(draw, state, ids: _Ids, index: int, now: str) -> Step:
    builder = Builder(draw, state, ids)
    batch_id = f"b-{index}"
    args = {"actor": draw(ACTORS), "now": now}
    mode = draw(st.sampled_from(["valid"] * 12 + ["noop", "acks"] + ["mixed"] * 3 + ["single"] * 2
                                + ["nonobject", "batch-level"]))
    codes: set[str] = set()
    expect_type = None
    declarations: list = []
    batch: dict = {}
    if mode == "nonobject":
        args.update(batch=draw(NON_OBJECTS), batch_id=batch_id)
        return Step("commit", args, frozenset({"invalid_json"}), note=mode)
    if mode in ("valid", "mixed"):
        for _ in range(draw(st.integers(1, 3))):
            decl = builder.valid()
            if decl is not None:
                declarations.append(decl)
        if mode == "mixed":
            decl, code = builder.invalid()
            declarations.insert(draw(st.integers(0, len(declarations))), decl)
            codes.add(code)
    elif mode == "noop":
        pool = [item for item in _active(state)]
        for item_id in draw(st.lists(st.sampled_from(pool), max_size=3, unique=True)) if pool else []:
            declarations.append(builder.noop_patch(item_id))
        expect_type = "checked"
    elif mode == "single":
        choice = draw(st.sampled_from(["over_budget", "partial_children", "duplicate", "parent_without_summary"]))
        found = getattr(builder, choice)()
        if found is None:
            found = builder.over_budget()
        decl, code = found
        declarations = [decl, copy.deepcopy(decl)] if code == "duplicate_declaration" else [decl]
        codes.add(code)
    if declarations or draw(st.booleans()):
        batch["declarations"] = declarations
    notes = sorted(state.annotations)
    if notes and (mode == "acks" or draw(st.integers(0, 3)) == 0):
        batch["acknowledges"] = draw(st.lists(st.sampled_from(notes), min_size=1, max_size=4))
        if expect_type == "checked" and any(state.annotations[n]["status"] == "saved" for n in batch["acknowledges"]):
            expect_type = None
    if mode == "batch-level":
        problem = draw(st.sampled_from(["stale", "bad-batch-id", "declarations-type", "unknown-ack",
                                        "unknown-key", "no-batch-id"]))
        if problem == "stale":
            batch["base_revision"] = state.revision + draw(st.integers(1, 3))
            codes.add("stale_revision")
        elif problem == "bad-batch-id":
            batch["batch_id"] = draw(st.sampled_from(["has space", "", "x" * 129, "ü"]))
            codes.add("invalid_field")
        elif problem == "declarations-type":
            batch["declarations"] = draw(st.sampled_from([{}, "x", 5]))
            codes.add("invalid_field")
        elif problem == "unknown-ack":
            batch["acknowledges"] = [f"ann-{len(state.annotations) + draw(st.integers(1, 5))}"]
            codes.add("annotation_not_found")
        elif problem == "unknown-key":
            batch["colour"] = "red"
            codes.add("invalid_field")
        else:
            args["batch"] = batch
            return Step("commit", args, frozenset({"invalid_field"}), note="no batch_id")
    elif draw(st.integers(0, 3)) == 0:
        batch["base_revision"] = state.revision
    # batch_id in the object, from the caller, or both (equal)
    if "batch_id" not in batch:
        where = draw(st.sampled_from(["object", "caller", "both"]))
        if where in ("object", "both"):
            batch["batch_id"] = batch_id
        if where in ("caller", "both"):
            args["batch_id"] = batch_id
    args["batch"] = batch
    return Step("commit", args, frozenset(codes), expect_type, note=mode)


@st.composite
def annotate_step(draw, state, now: str) -> Step:
    pool = sorted(state.items)
    expected: set[str] = set()
    if pool and draw(st.integers(0, 9)) > 0:
        item = draw(st.sampled_from(pool))
        if state.items[item]["status"] == "merged":
            expected.add("item_merged")
    else:
        item = "no-such-item"
        expected.add("item_not_found")
    text = draw(st.sampled_from(["please call back", "多谢\n第二行", "x" * 2000, "\tindented", "ok\r\n"])
                | st.sampled_from(["x" * 2001, " ", "\n", "a\x00b", "a\u2028b"]) | st.text(min_size=1, max_size=40))
    # §1: 1–2,000 code points, line breaks allowed, the title's character rule otherwise
    if len(text) > 2000 or text.isspace() or any(
            char not in "\n\r\t" and unicodedata.category(char) in ("Cc", "Cs", "Zl", "Zp") for char in text):
        expected.add("invalid_field")
    args = {"item": item, "text": text, "author": draw(st.sampled_from(["user", "用户"])), "now": now}
    return Step("annotate", args, frozenset(expected), note="annotate")


@st.composite
def histories(draw, max_steps: int = 24) -> History:
    budget = draw(st.sampled_from(BUDGETS))
    state = empty_state(budget)
    ids = _Ids()
    history = History(budget, [])
    minutes = 0
    for index in range(draw(st.integers(1, max_steps))):
        minutes += draw(st.integers(0, 3000))
        now = spell(T0 + timedelta(minutes=minutes), draw)
        if draw(st.integers(0, 9)) == 0:
            step = draw(annotate_step(state, now))
        else:
            step = draw(commit_step(state, ids, index, now))
        history.steps.append(step)
        outcome = run_step(state, step)
        history.outputs.append(output_text(outcome))
        if isinstance(outcome, Accepted):
            state = outcome.state
    return history
