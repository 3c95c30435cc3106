"""The baseline editor's working model: what the state shows, the planned changes, the budget fit.

* ``Known`` indexes the §8 state document of the input: active items with
  their layer and children, the not-active index, the budget;
* ``Change`` is one planned declaration (new, patch of an active item, or
  restore of a withdrawn one) with the events it rests on;
* ``fit_budget`` makes every layer the plan touches fit its budget B with the
  contract's share table (§2), so the kernel never rejects the batch for
  ``layer_budget``. Who gives way follows the skill's order of value:

  1. finished and for-your-information items at low or trace are withdrawn
     (done before fyi, the oldest first), bigger ones are first lowered to low;
  2. at the root, new items that do not fit go into a **bundle**, an item whose
     children layer has its own budget: "更多待你处理" (needs-you) or "其他动态"
     (everything else) — several pressing matters share a parent rather than
     push each other out; a bundle's layer that does not fit moves its least
     pressing new items into a bundle of the same kind inside it (at most
     ``MAX_LEVEL`` deep);
  3. items still in progress and requests without a near deadline are lowered
     to low, then withdrawn;
  4. a needs-you item due within 7 days (or overdue) is *protected*: lowered
     to high at most, and below that only when nothing else is left.

  Last of all the batch's own new items are dropped (their events deferred);
  that always suffices, since what is left then uses no more than the layer
  did before and the state it came from was valid.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from fold_core.shares import derive_share, rank_key
from fold_core.timefmt import parse_instant

__all__ = ["BUNDLES", "BUNDLE_IDS", "Change", "Fit", "Known", "bundle_id", "fit_budget", "protected"]

WEIGHTS = ("critical", "high", "normal", "low", "trace")
BUNDLES = {"needs-you": "fold-needs-you", "updates": "fold-updates"}
MAX_LEVEL = 4  # a bundle inside a bundle, at most four deep (items stay within the contract's depth 6)


def bundle_id(name: str, level: int = 1) -> str:
    """The fixed id of the bundle ``name`` at ``level`` (1: in the root; 2: inside the level-1 bundle, …)."""
    return BUNDLES[name] if level == 1 else f"{BUNDLES[name]}-{level}"


BUNDLE_IDS = frozenset(bundle_id(name, level) for name in BUNDLES for level in range(1, MAX_LEVEL + 1))
_BUNDLE_WEIGHT = {"needs-you": ("high", "needs-you"), "updates": ("low", "fyi")}
_CLASS: dict[str | None, int] = {"done": 0, "fyi": 1, "in-progress": 2, "needs-you": 3}


class Known:
    """What the input's state document shows."""

    def __init__(self, state: Mapping[str, Any]) -> None:
        self.budget: int = int(state.get("budget") or (state.get("root") or {}).get("budget") or 64)
        self.active: dict[str, dict] = {}
        self.parent: dict[str, str | None] = {}
        self.children: dict[str | None, list[str]] = {}
        self._walk(state.get("root"), None)
        self.not_active: dict[str, Mapping[str, Any]] = {
            entry["id"]: entry for entry in state.get("not_active") or () if isinstance(entry, Mapping) and "id" in entry}

    def _walk(self, layer: Mapping[str, Any] | None, parent: str | None) -> None:
        for view in (layer or {}).get("items") or ():  # a depth-limited layer has a count, no items
            self.active[view["id"]] = view
            self.parent[view["id"]] = parent
            self.children.setdefault(parent, []).append(view["id"])
            self._walk(view.get("children"), view["id"])

    def ancestors(self, item_id: str | None) -> list[str]:
        """The active ancestors of an item (or of a layer's parent, itself included)."""
        found = []
        while item_id is not None and item_id in self.parent and item_id not in found:
            found.append(item_id)
            item_id = self.parent[item_id]
        return found

    def known_ids(self) -> set[str]:
        return set(self.active) | set(self.not_active)


@dataclass
class Change:
    """One planned declaration."""

    id: str
    mode: str  # "new" | "patch" | "restore"
    parent: str | None
    weight: str | None
    kind: str | None
    base_weight: str | None = None  # the stored weight (patch); None when unknown (restore) or absent (new)
    share_override: int | None = None
    due_at: str | None = None
    title: str | None = None
    summary: str | None = None  # None: keep (never clears)
    base_sources: list[dict] = field(default_factory=list)
    new_sources: list[dict] = field(default_factory=list)
    reason: str | None = None
    lowered_reason: str | None = None
    events: list[str] = field(default_factory=list)  # events this change rests on (all get "used")
    bundle: str | None = None  # "needs-you" | "updates" for a bundle item
    updated_at: str | None = None  # the stored item's (patch), for "oldest first"
    judged: str | None = None  # the weight the message was judged at, before any budget fitting
    stale_after: str | None = None  # a status fact that ages (a parcel in transit, a build running): when to re-check
    decision: dict | None = None  # the frame to declare (§3.6) when ``frame_set``; None with it clears the frame
    frame_set: bool = False  # False: the stored frame is kept (the declaration says nothing of it)
    due_cleared: bool = False  # the due date was the answered frame's decide_by: declared null

    def weighed(self) -> str:
        """The planned weight: every change has one once the events are read (only a restore starts without)."""
        if self.weight is None:
            raise ValueError(f"the change of {self.id!r} has no weight")
        return self.weight

    def share(self, budget: int) -> int:
        return self.share_override if self.share_override is not None else derive_share(self.weighed(), None, budget)


@dataclass
class Fit:
    """What the budget fit decided."""

    withdrawn: list[str] = field(default_factory=list)
    demoted: list[str] = field(default_factory=list)  # ids lowered for the budget (patches it may have created)
    dropped: list[str] = field(default_factory=list)
    moved: dict[str, list[str]] = field(default_factory=dict)  # bundle id -> new items placed in it


def protected(kind: str | None, due_at: str | None, now: datetime | None, weight: str | None = None) -> bool:
    """A needs-you item due within 7 days of ``now`` (or overdue), or judged critical: kept at high or above."""
    due = parse_instant(due_at) if due_at else None
    near = due is not None and now is not None and due <= now + timedelta(days=7)
    return kind == "needs-you" and (near or weight == "critical")


class _Layer:
    """One layer while fitting: its items (a planned change or the stored view) and the moves made."""

    def __init__(self, known: Known, changes: dict[str, Change], parent: str | None, now: datetime | None,
                 fit: Fit, held: frozenset[str] = frozenset()) -> None:
        self.known, self.changes, self.parent, self.now, self.fit = known, changes, parent, now, fit
        self.ids = [i for i in known.children.get(parent, []) if i not in fit.withdrawn]
        self.ids += [c.id for c in changes.values() if c.parent == parent and c.id not in self.ids]
        self.keep = {a for c in changes.values() for a in known.ancestors(c.parent)}
        self.keep |= {a for i in held for a in known.ancestors(i)}  # an event of this batch rests on them
        # The weights as judged, before fitting: an item judged critical stays guarded in any layer.
        self.judged = {i: (self.changes[i].judged if i in self.changes else None) or self.weight(i) for i in self.ids}

    def weight(self, item: str) -> str:
        return self.changes[item].weighed() if item in self.changes else self.known.active[item]["weight"]

    def kind(self, item: str) -> str | None:
        return self.changes[item].kind if item in self.changes else self.known.active[item]["kind"]

    def share(self, item: str) -> int:
        if item in self.changes:
            return self.changes[item].share(self.known.budget)
        view = self.known.active[item]
        return view["share"] if view.get("share_override") else derive_share(view["weight"], None, self.known.budget)

    def over(self) -> int:
        return sum(self.share(i) for i in self.ids) - self.known.budget

    def guarded(self, item: str) -> bool:
        due = self.changes[item].due_at if item in self.changes else self.known.active[item].get("due_at")
        judged = self.changes[item].judged if item in self.changes else None
        return protected(self.kind(item), due, self.now, judged or self.judged.get(item) or self.weight(item))

    def slack(self, item: str) -> tuple:
        """Who is lowered first: the biggest share, then the least pressing (no or the latest deadline), the oldest."""
        due = parse_instant((self.changes[item].due_at if item in self.changes else
                             self.known.active[item].get("due_at")) or "")
        moment = due or (self.now + timedelta(days=3) if self.now else None)  # no deadline: neither near nor far
        view = self.known.active.get(item) or {}
        updated = (self.changes[item].updated_at if item in self.changes else view.get("updated_at")) or ""
        return (-self.share(item), _CLASS.get(self.kind(item), 1), self.guarded(item),
                -(moment.timestamp() if moment else 0.0), updated, item)

    def untouched(self, item: str) -> bool:
        return item not in self.changes and item not in self.keep

    def order(self, items, *, largest: bool = False) -> list[str]:
        def key(item):
            view = self.known.active.get(item) or {}
            updated = (self.changes[item].updated_at if item in self.changes else view.get("updated_at")) or ""
            size = -self.share(item) if largest else WEIGHTS.index(self.weight(item)) * -1
            return (_CLASS.get(self.kind(item), 1), size, updated, item)
        return sorted(items, key=key)

    def withdraw(self, select: Callable[[str], bool], *, bundles: bool = False) -> None:
        """Withdraw untouched selected items, the least valuable first (a bundle only when ``bundles``)."""
        able = [i for i in self.ids if self.untouched(i) and select(i) and (bundles or i not in BUNDLE_IDS)]
        for item in self.order(able):
            if self.over() <= 0:
                return
            self.ids.remove(item)
            self.fit.withdrawn.append(item)

    def demote(self, select: Callable[[str], bool], floor: str) -> None:
        """Lower the selected items one step at a time, the biggest first, not below ``floor``."""
        while self.over() > 0:
            able = [i for i in self.ids if select(i) and WEIGHTS.index(self.weight(i)) < WEIGHTS.index(floor)
                    and not (i in self.changes and self.changes[i].share_override is not None)]
            if not able:
                return
            item = min(able, key=self.slack)
            self._lower(item, WEIGHTS[WEIGHTS.index(self.weight(item)) + 1])

    def _lower(self, item: str, weight: str) -> None:
        if item not in self.changes:
            view = self.known.active[item]
            self.changes[item] = Change(item, "patch", self.parent, view["weight"], view["kind"],
                                        base_weight=view["weight"], due_at=view.get("due_at"),
                                        updated_at=view.get("updated_at"))
        self.changes[item].weight = weight
        if item not in self.fit.demoted:
            self.fit.demoted.append(item)


def fit_budget(known: Known, changes: dict[str, Change], now: str,
               bundle: Callable[[str, int], Change] | None = None, held: frozenset[str] = frozenset()) -> Fit:
    """Adjust ``changes`` in place (demote, move into bundles, drop) and choose withdrawals so every layer fits.

    ``held``: active items an event of this batch was used for (a result that only confirms one): they are
    never withdrawn in the cycle the event arrived, though they may still be lowered.

    ``bundle(name, level)`` gives the planned change of the bundle ``name`` at ``level`` (created on first
    use); without it nothing is moved. A bundle's own layer that does not fit moves its least pressing new
    items into a bundle of the same name one level deeper.
    """
    fit, moment = Fit(), parse_instant(now)
    touched = sorted({c.parent for c in changes.values() if c.parent not in BUNDLE_IDS},
                     key=lambda p: (p is not None, p or ""))
    for parent in touched:
        root = (lambda name: bundle(name, 1)) if bundle is not None and parent is None else None
        _fit_layer(_Layer(known, changes, parent, moment, fit, held), root)
    for level in range(1, MAX_LEVEL + 1):
        for name in BUNDLES:
            holder = bundle_id(name, level)
            if any(c.parent == holder for c in changes.values()):
                deeper = None
                if bundle is not None and level < MAX_LEVEL:
                    deeper = lambda wanted, name=name, level=level: (  # noqa: E731 - the same kind, one deeper
                        bundle(wanted, level + 1) if wanted == name else None)
                _fit_layer(_Layer(known, changes, holder, moment, fit, held), deeper)
    fit.demoted = [i for i in fit.demoted if i in changes]
    return fit


def _fit_layer(layer: _Layer, bundle: Callable[[str], Change | None] | None) -> None:
    finished = lambda i: _CLASS.get(layer.kind(i), 1) <= 1  # noqa: E731 - done and fyi
    open_ = lambda i: not finished(i) and not layer.guarded(i)  # noqa: E731 - in progress, requests
    plain = lambda i: i not in BUNDLE_IDS  # noqa: E731 - a bundle's weight follows what it holds
    layer.withdraw(lambda i: finished(i) and layer.weight(i) in ("low", "trace"))
    layer.demote(lambda i: layer.untouched(i) and finished(i) and plain(i), "low")
    layer.withdraw(lambda i: finished(i) and layer.weight(i) in ("low", "trace"))
    if bundle is not None:
        _move(layer, bundle, "updates", lambda i: _CLASS.get(layer.kind(i), 1) <= 2)
    layer.demote(lambda i: layer.untouched(i) and open_(i) and plain(i), "low")
    if bundle is not None:
        _move(layer, bundle, "needs-you", lambda i: not layer.guarded(i))
    layer.demote(lambda i: layer.guarded(i) and plain(i), "high")
    if bundle is not None:
        _move(layer, bundle, "needs-you", lambda i: True)
    layer.demote(lambda i: not layer.untouched(i) and open_(i) and plain(i), "normal")
    layer.withdraw(lambda i: open_(i) and layer.weight(i) in ("low", "trace"))
    layer.demote(lambda i: plain(i) and layer.kind(i) == "needs-you", "normal")  # the latest deadlines first
    layer.demote(lambda i: not plain(i), "trace")
    layer.demote(lambda i: plain(i) and not layer.guarded(i), "low")
    layer.demote(lambda i: not layer.guarded(i), "trace")
    layer.withdraw(lambda i: not layer.guarded(i))
    layer.demote(lambda i: True, "trace")
    _drop(layer)
    layer.withdraw(lambda i: True, bundles=True)


def _move(layer: _Layer, bundle: Callable[[str], Change | None], name: str, select: Callable[[str], bool]) -> None:
    """Move the layer's new items (selected, least valuable first) into the bundle ``name`` (when it may
    have one)."""
    able = [i for i in layer.ids if i in layer.changes and layer.changes[i].mode == "new"
            and layer.changes[i].bundle is None and select(i)
            and (name == "needs-you") == (layer.kind(i) == "needs-you")]
    if name == "needs-you":  # the least pressing first: unprotected, lighter, the latest deadline
        def key(item):
            due = parse_instant(layer.changes[item].due_at or "")
            return (layer.guarded(item), -WEIGHTS.index(layer.weight(item)), -(due.timestamp() if due else 0.0), item)
        able.sort(key=key)
    else:
        able = layer.order(able)
    for item in able:
        if layer.over() <= 0:
            return
        holder = bundle(name)
        if holder is None:
            return
        if holder.id not in layer.ids:
            layer.ids.append(holder.id)
        layer.changes[item].parent = holder.id
        layer.ids.remove(item)
        layer.fit.moved.setdefault(holder.id, []).append(item)


def _drop(layer: _Layer) -> None:
    for item in layer.order([i for i in layer.ids if i in layer.changes]):
        if layer.over() <= 0:
            return
        change = layer.changes[item]
        if change.mode == "patch" or change.bundle is not None:
            continue
        layer.ids.remove(item)
        del layer.changes[item]
        layer.fit.dropped.append(item)


def rank_entries(known: Known, changes: dict[str, Change], parent: str | None, now: str) -> list[str]:
    """The ids of a layer after the plan, in rank order (for titles and summaries of bundles)."""
    entries: list[dict[str, Any]] = []
    for item in known.children.get(parent, []) + [c.id for c in changes.values() if c.parent == parent]:
        change = changes.get(item)
        view = known.active.get(item, {})
        weight = change.weight if change else view["weight"]
        entries.append({"id": item, "share": change.share(known.budget) if change else view["share"],
                        "weight": weight, "due_at": (change.due_at if change else view.get("due_at")),
                        "updated_at": (now if change else view["updated_at"])})
    unique = {e["id"]: e for e in entries}
    return [e["id"] for e in sorted(unique.values(), key=rank_key)]
