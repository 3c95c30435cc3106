"""The pure kernel (contract §1–§5, §8).

Pure functions over frozen data: no clock, no file, no randomness, no plugin
machinery. ``now`` and ``actor`` are always explicit inputs.
"""

__all__ = [
    "NOT_ACTIVE_DEFAULT",
    "Accepted",
    "Rejected",
    "RequestIdentity",
    "State",
    "apply_batch",
    "apply_record",
    "batch_conflict",
    "empty_state",
    "replay",
    "request_identity",
    "save_annotation",
    "state_document",
]

# Submodules load on first use, so that a state read does not import the
# batch machinery (and a commit does not import the state view). Plain
# import statements, no importlib: the kernel imports nothing dynamically.
def __getattr__(name: str) -> object:
    if name in ("apply_batch", "batch_conflict", "request_identity"):
        from fold_core.kernel import batch as home
    elif name in ("NOT_ACTIVE_DEFAULT", "state_document"):
        from fold_core.kernel import view as home
    elif name in ("Accepted", "Rejected", "RequestIdentity"):
        from fold_core.kernel import outcome as home
    elif name == "save_annotation":
        from fold_core.kernel import annotate as home
    elif name in ("State", "apply_record", "empty_state", "replay"):
        from fold_core import state as home
    else:
        raise AttributeError(f"module 'fold_core.kernel' has no attribute {name!r}")
    value = getattr(home, name)
    globals()[name] = value
    return value
