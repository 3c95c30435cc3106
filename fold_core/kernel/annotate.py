"""Saving a user annotation (contract §1 "annotation", §4, §7 ``annotate``).

An annotation is its own record type: it increments event_seq but not
revision. Its id is assigned in save order (``ann-1``, ``ann-2``, …). The item
may be active or withdrawn; a merged item answers ``item_merged`` with its
successor.
"""

from __future__ import annotations

from fold_core.kernel.outcome import Accepted, Rejected, error, rejection
from fold_core.state import State, apply_record
from fold_core.text import ITEM_ID, check_multiline_text, check_name, preview
from fold_core.timefmt import parse_instant

__all__ = ["save_annotation"]


def save_annotation(state: State, *, item: str, text: str, author: str, now: str) -> Accepted | Rejected:
    """Save ``text`` on ``item`` at ``now``; the receipt is ``{ok, annotation, event_seq}``."""
    errors: list[dict] = []
    target = state.items.get(item) if isinstance(item, str) else None
    if not isinstance(item, str) or ITEM_ID.fullmatch(item) is None:
        errors.append(error("invalid_field", f"item must be an item id, got {preview(item)}", field="item"))
    elif target is None:
        errors.append(error("item_not_found", f"no item {item} to annotate", item=item))
    elif target["status"] == "merged":
        errors.append(error("item_merged", f"{item} was merged into {target['merged_into']}; "
                            f"annotate {target['merged_into']} instead",
                            item=item, merged_into=target["merged_into"]))
    problem = check_multiline_text(text, 1, 2000, "text", require_visible=True)
    if problem:
        errors.append(error("invalid_field", problem, field="text"))
    problem = check_name(author, "author")
    if problem:
        errors.append(error("invalid_field", problem, field="author"))
    if parse_instant(now) is None:
        errors.append(error("invalid_field", f"now must be an ISO 8601 time with an offset, got {preview(now)}",
                            field="now"))
    if errors:
        return rejection(errors, revision=state.revision)
    event_seq = state.event_seq + 1
    note_id = f"ann-{len(state.annotations) + 1}"
    record = {
        "v": 1, "event_seq": event_seq, "type": "annotation", "at": now, "actor": author,
        "annotation": {"id": note_id, "item": item, "text": text, "author": author, "created_at": now},
    }
    receipt = {"ok": True, "annotation": note_id, "event_seq": event_seq}
    return Accepted(apply_record(state, record), receipt, record)
