"""The baseline editor's output: bundle items and the declarations of the batch (contract §3, §9).

``Output`` is the part of the baseline planner that writes: a bundle item is
created or restored on first use (its fixed id, its weight), named by what it
holds once the budget fit is done ("另有 N 件待你处理", "其他 N 条动态"); every
planned change becomes one declaration, the new children of a bundle inside
its ``children`` list together with every active child it keeps (the target
set of §3.4), and the fit's withdrawals close the batch with their reasons.
"""

from __future__ import annotations

from typing import Any

from fold_core.timefmt import parse_instant
from fold_agents.baseline.draft import Draft, merge_sources
from fold_agents.baseline.plan import BUNDLE_IDS, Change, bundle_id, rank_entries
from fold_agents.baseline.rules import WEIGHT_STEPS, heavier

__all__ = ["Output"]


class Output(Draft):
    """Bundles and declarations of the baseline planner."""

    _listing: set[str | None]  # the bundles whose new children are written in their children list

    def _bundle(self, name: str, level: int = 1) -> Change:
        holder = bundle_id(name, level)
        if holder in self.changes:
            return self.changes[holder]
        entry = self.known.not_active.get(holder) or {}
        if holder in self.known.active:
            change = self.change(holder, "patch")
        elif entry.get("status") == "withdrawn" or holder in self.exists:
            change = self.change(holder, "restore")  # its parent bundle, if any, is planned in this batch too
        else:
            change = self.change(holder, "new")
        change.bundle = name
        if change.weight is None or change.mode == "restore":
            change.weight, change.kind = {"needs-you": ("high", "needs-you"), "updates": ("low", "fyi")}[name]
        change.parent = None if level == 1 else bundle_id(name, level - 1)
        return change

    def _leaves(self, holder: str, withdrawn: list[str]) -> list[str]:
        """The items a bundle holds, those of the bundles inside it included (not the bundles)."""
        found = []
        for child in rank_entries(self.known, self.changes, holder, self.now):
            if child in withdrawn:
                continue
            found += self._leaves(child, withdrawn) if child in BUNDLE_IDS else [child]
        return found

    def _name_bundles(self, withdrawn: list[str]) -> None:
        for holder in sorted(BUNDLE_IDS & set(self.changes)):
            change = self.changes[holder]
            if change.bundle is None:
                continue
            name = change.bundle
            children = self._leaves(holder, withdrawn)
            count = len(children)
            change.title = self.words(f"bundle_{name.replace('-', '_')}", limit=24, count=count)
            read = [parse_instant((self.changes[i].due_at if i in self.changes else
                                   self.known.active[i].get("due_at")) or "") for i in children]
            dues = [d for d in read if d is not None]
            raised = self._raised_child(change, children)
            if raised is not None:  # raised for a child: say which, so the parent's weight reads right
                change.summary = self.words("bundle_raised_summary", limit=60, count=count, title=raised)
            elif name == "needs-you" and dues and self.moment is not None:
                change.summary = self.words("bundle_needs_you_summary", limit=60, count=count,
                                            due=self.words.when(min(dues), self.moment))
            else:
                change.summary = self.words(f"bundle_{name.replace('-', '_')}" + (
                    "_plain" if name == "needs-you" else "_summary"), limit=60, count=count)
            change.reason = change.reason or self.words("bundle_reason")  # a parent raised for a child says so

    def _raised_child(self, change: Change, children: list[str]) -> str | None:
        """The title of the heaviest child when an updates bundle was raised above its own weight for it."""
        if change.bundle != "updates" or change.weight in (None, "low", "trace") or not children:
            return None
        def weight(item: str) -> str:
            planned = self.changes.get(item)
            return planned.weighed() if planned is not None else self.known.active[item]["weight"]
        top = min(children, key=lambda item: WEIGHT_STEPS.index(weight(item)))
        planned = self.changes.get(top)
        return str((planned.title if planned is not None and planned.title else None)
                   or (self.known.active.get(top) or {}).get("title") or top)

    def _declarations(self, withdrawn: list[str]) -> list[dict]:
        self._listing = {c.parent for c in self.changes.values() if c.mode == "new" and c.parent in BUNDLE_IDS}
        declarations = []
        for change in self.changes.values():
            if change.parent in self._listing:
                continue  # written inside its bundle's children list
            declarations.append(self._declaration(change, withdrawn))
        withdraw_reason = {True: self.words("withdraw_budget"), False: self.words("withdraw_open")}
        for item_id in withdrawn:
            finished = self.known.active[item_id]["kind"] in ("done", "fyi")
            declarations.append({"id": item_id, "relation": "withdraw", "reason": withdraw_reason[finished]})
        return declarations

    def _children(self, holder: str, withdrawn: list[str]) -> list[dict]:
        """The target set of a bundle's children (§3.4): every active child it keeps, and the new ones."""
        listed = []
        for child in self.known.children.get(holder, []) if holder in self.known.active else []:
            if child in withdrawn:
                continue
            if child in self.changes:
                listed.append(self._declaration(self.changes[child], withdrawn))
            else:
                view = self.known.active[child]
                listed.append({"id": child, "relation": f"supersedes:{child}", "weight": view["weight"],
                               "kind": view["kind"]})
        listed += [self._declaration(c, withdrawn) for c in self.changes.values()
                   if c.parent == holder and c.id not in self.known.active]
        return listed

    def _declaration(self, change: Change, withdrawn: list[str]) -> dict:
        declaration: dict[str, Any] = {"id": change.id}
        if change.mode == "new":
            declaration["relation"] = "new"
            declaration["title"] = change.title or self.words("untitled")
        else:
            declaration["relation"] = f"supersedes:{change.id}"
            if change.title and change.title != (self.known.active.get(change.id) or {}).get("title"):
                declaration["title"] = change.title
        if change.summary:
            declaration["summary"] = change.summary
        declaration["weight"] = change.weight
        declaration["kind"] = change.kind
        if change.due_at and (change.mode != "patch" or change.due_at != self.known.active[change.id].get("due_at")):
            declaration["due_at"] = change.due_at
        if change.due_cleared and change.due_at is None and change.mode == "patch":
            declaration["due_at"] = None
        if change.stale_after:
            declaration["stale_after"] = change.stale_after
        framed = change.decision is not None
        if change.frame_set and (framed or change.mode != "new") and (not framed or change.kind == "needs-you"):
            # a frame only on needs-you (§3.6); null clears a stored one
            declaration["decision"] = change.decision
        lowered = change.base_weight is not None and heavier(change.base_weight, change.weighed()) != change.weight
        reason = (change.lowered_reason or change.reason or self.words("demote_budget")) if lowered else change.reason
        if reason:
            declaration["reason"] = reason
        if change.new_sources:
            declaration["sources"] = merge_sources(change.base_sources, change.new_sources)
        if change.id in self._listing:
            declaration["children"] = self._children(change.id, withdrawn)
        return declaration
