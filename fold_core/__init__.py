"""Fold core: the pure kernel, state and replay, stores, models and the CLI.

Public names are loaded lazily so that ``foldctl state`` pays only for what
it uses (pydantic, for instance, is imported only when ``fold_core.models``
is touched).
"""

from __future__ import annotations

from importlib import import_module

__all__ = [
    "Accepted",
    "Answer",
    "FoldError",
    "Rejected",
    "State",
    "Store",
    "StoreCorrupt",
    "StoreUnavailable",
    "UsageError",
    "apply_batch",
    "apply_record",
    "derive_share",
    "empty_state",
    "hookimpl",
    "memory_store",
    "replay",
    "save_annotation",
    "state_document",
]

_HOMES = {
    "Accepted": "fold_core.kernel",
    "Answer": "fold_core.store",
    "FoldError": "fold_core.errors",
    "Rejected": "fold_core.kernel",
    "State": "fold_core.state",
    "Store": "fold_core.store",
    "StoreCorrupt": "fold_core.errors",
    "StoreUnavailable": "fold_core.errors",
    "UsageError": "fold_core.errors",
    "apply_batch": "fold_core.kernel",
    "apply_record": "fold_core.state",
    "derive_share": "fold_core.shares",
    "empty_state": "fold_core.state",
    "hookimpl": "fold_core.hookspecs",
    "memory_store": "fold_core.store",
    "replay": "fold_core.state",
    "save_annotation": "fold_core.kernel",
    "state_document": "fold_core.kernel",
}


def __getattr__(name: str) -> object:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'fold_core' has no attribute {name!r}")
    value = getattr(import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
