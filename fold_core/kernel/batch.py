"""``apply_batch``: accept or reject one batch (contract §3, §4, §6.1).

Pure: the state, the batch, ``actor`` and ``now`` go in; an ``Accepted``
(new state, receipt, record) or a ``Rejected`` (every error found, in the
contract's order) comes out. No clock, file, randomness or plugin is touched.
The new state is produced by applying the record with T (``apply_record``),
so the live state and a replay of the log are equal by construction.
"""

from __future__ import annotations

from typing import TypeGuard

from fold_core.digest import normalized_request, request_digest
from fold_core.kernel.candidate import Candidate
from fold_core.kernel.checks import final_state_errors, touched_layers
from fold_core.kernel.declarations import read_declarations
from fold_core.kernel.outcome import Accepted, Rejected, RequestIdentity, error, rejection
from fold_core.state import State, apply_record
from fold_core.text import BATCH_ID, check_name, preview, type_name
from fold_core.timefmt import parse_instant

__all__ = ["apply_batch", "batch_conflict", "request_identity"]

BATCH_KEYS = ("batch_id", "base_revision", "declarations", "acknowledges")
RECORD_VERSION = 1


def _valid_batch_id(value: object) -> TypeGuard[str]:
    return isinstance(value, str) and len(value) <= 128 and BATCH_ID.fullmatch(value) is not None


def request_identity(batch: object, *, actor: str, batch_id: str | None = None) -> RequestIdentity | None:
    """The batch_id and request digest of a well-formed request, or None.

    None means the request cannot be identified (not an object, no usable
    batch_id, a flag/object mismatch): the kernel then rejects it.
    """
    if not isinstance(batch, dict):
        return None
    in_object = batch.get("batch_id")
    if batch_id is not None and in_object is not None and in_object != batch_id:
        return None
    chosen = batch_id if batch_id is not None else in_object
    if not _valid_batch_id(chosen):
        return None
    try:
        digest = request_digest(actor, normalized_request(batch))
    except (RecursionError, ValueError, TypeError):
        return None
    return RequestIdentity(chosen, digest)


def batch_conflict(state: State, batch_id: str, event_seq: int) -> dict:
    """The rejection for a batch_id already accepted with a different request."""
    return rejection([error("batch_conflict",
                            f"batch_id {batch_id} was already accepted (event_seq {event_seq}) with a "
                            "different request; use a new batch_id for a new request",
                            batch_id=batch_id, event_seq=event_seq)],
                     revision=state.revision, batch_id=batch_id).document


def _batch_level(state: State, batch: dict, *, actor: object, now: object,
                 batch_id: str | None) -> tuple[str | None, list[dict]]:
    """Errors of group (1): batch keys, batch_id, base_revision, inputs; then stale_revision."""
    errors: list[dict] = []
    for key in batch:
        if key not in BATCH_KEYS:
            errors.append(error("invalid_field", f"unknown key {preview(key)} in the batch",
                                field=key if len(key) <= 64 else key[:64] + "…"))
    in_object = batch.get("batch_id")
    chosen = None
    if in_object is not None and not _valid_batch_id(in_object):
        errors.append(error("invalid_field", "batch_id must match [A-Za-z0-9._:-]{1,128}, "
                            f"got {preview(in_object)}", field="batch_id"))
    elif batch_id is not None and not _valid_batch_id(batch_id):
        errors.append(error("invalid_field", "batch_id must match [A-Za-z0-9._:-]{1,128}, "
                            f"got {preview(batch_id)}", field="batch_id"))
    elif batch_id is not None and in_object is not None and batch_id != in_object:
        errors.append(error("invalid_field", f"batch_id given twice and different: {preview(batch_id)} "
                            f"by the caller, {preview(in_object)} in the batch", field="batch_id"))
    elif batch_id is None and in_object is None:
        errors.append(error("invalid_field", "batch_id is required (in the batch or from the caller)",
                            field="batch_id"))
    else:
        chosen = batch_id if batch_id is not None else in_object
    base = batch.get("base_revision")
    base_ok = base is None or (isinstance(base, int) and not isinstance(base, bool) and 0 <= base < 2**63)
    if not base_ok:
        errors.append(error("invalid_field", "base_revision must be a non-negative integer below 2^63 "
                            f"or null, got {preview(base)}", field="base_revision"))
    for key in ("declarations", "acknowledges"):
        if key in batch and not isinstance(batch[key], list):
            errors.append(error("invalid_field", f"{key} must be an array, got {type_name(batch[key])}",
                                field=key))
    problem = check_name(actor, "actor")
    if problem:
        errors.append(error("invalid_field", problem, field="actor"))
    if parse_instant(now) is None:
        errors.append(error("invalid_field", "now must be an ISO 8601 time with an offset, "
                            f"got {preview(now)}", field="now"))
    if base_ok and base is not None and base != state.revision:
        errors.append(error("stale_revision", f"the batch was written against revision {base}; "
                            f"the store is at revision {state.revision}: read the state again",
                            base_revision=base, revision=state.revision))
    return chosen, errors


def _acknowledges(state: State, entries: list) -> tuple[list[str], list[str], list[dict]]:
    """(newly acknowledged, already acknowledged, errors) in list order, duplicates ignored."""
    fresh: list[str] = []
    already: list[str] = []
    errors: list[dict] = []
    seen: set[str] = set()
    for index, entry in enumerate(entries):
        if not isinstance(entry, str):
            errors.append(error("invalid_field", f"acknowledges[{index}] must be an annotation id, "
                                f"got {type_name(entry)}", field="acknowledges"))
            continue
        if entry in seen:
            continue
        seen.add(entry)
        note = state.annotations.get(entry)
        if note is None:
            errors.append(error("annotation_not_found", f"no annotation {preview(entry)}",
                                annotation=entry if len(entry) <= 64 else entry[:64] + "…"))
        elif note["status"] == "acknowledged":
            already.append(entry)
        else:
            fresh.append(entry)
    return fresh, already, errors


def apply_batch(state: State, batch: object, *, actor: str, now: str, batch_id: str | None = None,
                budget: int | None = None, identity: RequestIdentity | None = None) -> Accepted | Rejected:
    """Accept or reject ``batch`` against ``state`` at the caller's ``now``.

    ``identity`` is what ``request_identity`` gave for this same request (a
    store computes it first, to look the batch up); passing it saves hashing
    the request twice.
    """
    if budget is not None and budget != state.budget:
        raise ValueError(f"budget {budget} differs from the state's budget {state.budget}")
    if not isinstance(batch, dict):
        return rejection([error("invalid_json", f"a batch must be a JSON object, got {type_name(batch)}")],
                         revision=state.revision, batch_id=batch_id if _valid_batch_id(batch_id) else None)
    chosen, errors = _batch_level(state, batch, actor=actor, now=now, batch_id=batch_id)
    raw_declarations = batch.get("declarations", [])
    raw_acks = batch.get("acknowledges", [])
    declarations, found = read_declarations(
        state, raw_declarations if isinstance(raw_declarations, list) else [], state.budget)
    errors += found
    fresh, already, found = _acknowledges(state, raw_acks if isinstance(raw_acks, list) else [])
    errors += found

    # Every id the batch names, applied or not, in document order (first mention).
    named: dict[str, str] = {}
    for decl in declarations:
        if decl.id is not None:
            named.setdefault(decl.id, decl.relation.word if decl.relation is not None else "unparsed")
        for source in decl.relation.sources if decl.relation is not None else ():
            named.setdefault(source, "source")
    candidate = Candidate(state, now, named)
    for decl in declarations:
        if decl.applied:
            candidate.apply(decl)
    errors += final_state_errors(candidate, declarations)
    if errors or chosen is None:  # (no batch_id was chosen only when that is an error)
        return rejection(errors, revision=state.revision, batch_id=chosen)
    digest = identity.digest if identity is not None and identity.batch_id == chosen else None
    return _accept(state, batch, candidate, fresh, already, actor=actor, now=now, batch_id=chosen, digest=digest)


def _accept(state: State, batch: dict, candidate: Candidate, fresh: list[str], already: list[str], *,
            actor: str, now: str, batch_id: str, digest: str | None) -> Accepted:
    if candidate.ops:
        kind, revision = "commit", state.revision + 1
    elif fresh:
        kind, revision = "acknowledge", state.revision + 1
    else:
        kind, revision = "checked", state.revision
    event_seq = state.event_seq + 1
    changed = [candidate.item(item) for item in candidate.ops]
    receipt = {
        "ok": True, "type": kind, "batch_id": batch_id, "event_seq": event_seq,
        "revision": revision, "previous_revision": state.revision, "at": now, "actor": actor,
        "changes": [{"item": item["id"], "op": candidate.ops[item["id"]], "layer": item["parent"],
                     "share": item["share"]} for item in changed],
        "acknowledged": fresh, "already_acknowledged": already,
        "layers": [{"layer": layer, "budget": state.budget,
                    "used": candidate.used(layer)}
                   for layer in touched_layers(candidate)],
        "replayed": False,
    }
    images = changed + [candidate.item(item) for item in sorted(candidate.bookkeeping)]
    request = normalized_request(batch)
    record = {
        "v": RECORD_VERSION, "event_seq": event_seq, "type": kind, "at": now, "actor": actor,
        "batch_id": batch_id, "request_digest": digest or request_digest(actor, request),
        "revision": revision, "previous_revision": state.revision, "request": request,
        "changes": [{"item": image} for image in images],
        "acks": [{"annotation": note, "revision": revision, "at": now, "by": actor} for note in fresh],
        "receipt": receipt,
    }
    return Accepted(apply_record(state, record), receipt, record)

