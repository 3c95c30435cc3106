"""The pure kernel (contract §1–§5, §8; seed 000 §3, §7).

Pure functions over frozen data: no clock, no file, no randomness, no plugin
machinery. ``now`` and ``actor`` are always explicit inputs.
"""

from fold_core.kernel.annotate import save_annotation
from fold_core.kernel.batch import apply_batch, batch_conflict, request_identity
from fold_core.kernel.outcome import Accepted, Rejected, RequestIdentity
from fold_core.kernel.view import NOT_ACTIVE_DEFAULT, state_document
from fold_core.state import State, apply_record, empty_state, replay

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
