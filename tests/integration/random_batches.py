"""Random declarations for the store tests (crash matrix, stateful file-vs-memory).

One generator serves both: a mix of valid declarations (new items, parents
with children, patches with and without the reason a lower weight or share
needs, withdraws, restores, merges of root leaves) and invalid ones (a reused
id, a bad weight, an unsupported relation, an unknown key, a bad id).
"""

from __future__ import annotations

import random
from collections.abc import Callable

from fold_core.shares import KINDS, WEIGHTS

__all__ = ["KINDS", "TITLES", "WEIGHTS", "random_declaration"]

TITLES = ("签证材料缺银行流水", "Read the paper", "订酒店", "call mom", "报销 Q3", "x", "出差安排")


def random_declaration(rng: random.Random, items: dict, used: set, new_id: Callable[[], str],
                       when: Callable[[], str]) -> dict | None:
    """One declaration against ``items`` (ids in ``used`` are avoided, then added), or None."""
    active = sorted(i for i, r in items.items() if r["status"] == "active" and i not in used)
    withdrawn = sorted(i for i, r in items.items() if r["status"] == "withdrawn" and i not in used)
    choice = rng.choices(("new", "parent", "patch", "withdraw", "merge", "restore", "invalid"),
                         weights=(6, 1, 3, 2, 1, 2, 1))[0]
    if choice == "restore" and not withdrawn:
        choice = "new"
    if choice == "new" or (choice in ("patch", "withdraw") and not active):
        decl = {"id": new_id(), "title": rng.choice(TITLES), "weight": rng.choice(WEIGHTS), "kind": rng.choice(KINDS)}
        if rng.random() < 0.2:
            decl[rng.choice(("due_at", "stale_after"))] = when()
        if rng.random() < 0.2:
            decl["sources"] = [{"channel": "mail", "ref": f"msg-{rng.randint(1, 9)}"}]
    elif choice == "parent":
        children = [{"id": new_id(), "title": rng.choice(TITLES), "weight": rng.choice(WEIGHTS[2:]),
                     "kind": rng.choice(KINDS)} for _ in range(rng.randint(1, 2))]
        decl = {"id": new_id(), "title": rng.choice(TITLES), "summary": "几件事", "weight": rng.choice(WEIGHTS[1:]),
                "kind": "in-progress", "children": children}
        used.update(child["id"] for child in children)
    elif choice == "patch":
        item = rng.choice(active)
        weight = rng.choice(WEIGHTS)
        decl = {"id": item, "relation": f"supersedes:{item}", "weight": weight, "kind": rng.choice(KINDS)}
        if rng.random() < 0.5:
            decl["title"] = rng.choice(TITLES)
        if rng.random() < 0.2:
            decl["share"] = rng.randint(1, 8)
        lowered = WEIGHTS.index(weight) > WEIGHTS.index(items[item]["weight"])
        if (lowered or "share" in decl) and rng.random() < 0.85:  # else: a missing reason
            decl["reason"] = "优先级调整"
    elif choice == "withdraw":
        decl = {"id": rng.choice(active), "relation": "withdraw", "reason": "done"}
    elif choice == "restore":  # a patch of a withdrawn item brings it back (maybe an archived one)
        item = rng.choice(withdrawn)
        decl = {"id": item, "relation": f"supersedes:{item}", "weight": rng.choice(WEIGHTS[2:]),
                "kind": rng.choice(KINDS), "reason": "又回来了"}
    elif choice == "merge":
        leaves = [i for i in active if items[i]["parent"] is None and not items[i]["ever_had_children"]]
        if len(leaves) < 2:
            return None
        sources = rng.sample(leaves, 2)
        decl = {"id": new_id(), "relation": f"merges:[{sources[0]}, {sources[1]}]", "title": "合并",
                "weight": rng.choice(WEIGHTS[1:]), "kind": "fyi"}
        used.update(sources)
    else:  # one invalid declaration
        item = new_id()
        decl = rng.choice((
            {"id": next(iter(items), "a"), "title": "again", "weight": "normal", "kind": "fyi"},
            {"id": item, "title": "t", "weight": "huge", "kind": "fyi"},
            {"id": item, "relation": "detail-of:x", "title": "t", "weight": "low", "kind": "fyi"},
            {"id": item, "title": "t", "weight": "low", "kind": "fyi", "colour": "red"},
            {"id": "Bad Id", "title": "t", "weight": "low", "kind": "fyi"},
        ))
    used.add(decl["id"])
    return decl
