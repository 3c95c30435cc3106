"""Weights, kinds, derived shares and rank (contract §2).

* ``derive_share``: ``explicit_share`` if set, else ``max(1, floor(B·ρ(w)))``
  with ρ = critical 3/8, high 3/16, normal 3/32, low 3/64; trace is always 1.
* ``rank_key``: the total order inside a layer — share descending, weight
  (critical first), due_at ascending (none last), updated_at descending, id
  ascending. Rank is computed at read time and never stored.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from fold_core.timefmt import instant_key

__all__ = ["KINDS", "MIN_BUDGET", "MAX_BUDGET", "WEIGHTS", "derive_share", "rank_items", "rank_key"]

WEIGHTS = ("critical", "high", "normal", "low", "trace")
KINDS = ("needs-you", "done", "in-progress", "fyi")
MIN_BUDGET, MAX_BUDGET = 8, 4096

# ρ(w) as (numerator, denominator); trace is fixed at one share.
_RHO = {"critical": (3, 8), "high": (3, 16), "normal": (3, 32), "low": (3, 64)}
_WEIGHT_ORDER = {weight: position for position, weight in enumerate(WEIGHTS)}


def derive_share(weight: str, explicit_share: int | None, budget: int) -> int:
    """The share an item holds in its layer."""
    if explicit_share is not None:
        return explicit_share
    if weight == "trace":
        return 1
    numerator, denominator = _RHO[weight]
    return max(1, budget * numerator // denominator)


def weight_rank(weight: str) -> int:
    """0 for critical … 4 for trace."""
    return _WEIGHT_ORDER[weight]


def rank_key(item: Mapping) -> tuple:
    """Sort key giving the contract's rank order (first = rank 1)."""
    due = item["due_at"]
    return (
        -item["share"],
        _WEIGHT_ORDER[item["weight"]],
        due is None,
        instant_key(due) if due is not None else 0.0,
        -instant_key(item["updated_at"]),
        item["id"],
    )


def rank_items(items: Iterable[Mapping]) -> list:
    """Items of one layer in rank order."""
    return sorted(items, key=rank_key)
