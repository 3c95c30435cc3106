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

from typing import TYPE_CHECKING

from fold_core.kernel.annotate import save_annotation
from fold_core.kernel.outcome import Accepted, Rejected, RequestIdentity
from fold_core.kernel.view import NOT_ACTIVE_DEFAULT, state_document
from fold_core.state import State, apply_record, empty_state, replay

if TYPE_CHECKING:
    from fold_core.kernel.batch import apply_batch, batch_conflict, request_identity


def __getattr__(name: str) -> object:
    """The batch machinery, loaded on first use. Plain import statements, no importlib: the kernel imports
    nothing dynamically."""
    if name not in ("apply_batch", "batch_conflict", "request_identity"):
        raise AttributeError(f"module 'fold_core.kernel' has no attribute {name!r}")
    # lazy: declarations, candidates and checks are for writes only; a state read never loads them
    from fold_core.kernel import batch

    value = getattr(batch, name)
    globals()[name] = value
    return value
