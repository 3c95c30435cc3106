"""The host's checks of the editor's answer, before the kernel (contract §9).

Like the kernel's, the outcome is a value: a list of error records in the
§4.2 shape (``code``, ``message`` and locators), empty when the answer may
go to the kernel. The errors, in the order they are reported:

* ``invalid_json`` — the reply holds no JSON object;
* ``invalid_output`` (``field``) — not ``{"dispositions": [...], "batch": {...}}``;
* ``disposition_invalid`` (``event``?, ``field``) — an entry that is not
  ``{event, disposition ∈ noise|duplicate|used|deferred, why, related?}``;
* ``disposition_unknown_event`` (``event``) — names an event not in this input;
* ``disposition_duplicate`` (``event``) — a second disposition for an event;
* ``disposition_missing`` (``events``) — input events without a disposition;
* ``disposition_conflict`` (``event``, ``item``, ``disposition``) — an event
  of this input cited by a source ``ref: "event:<id>"`` whose disposition is
  not ``used`` (refs to events of earlier windows are fine).

The receipt that goes back to the agent is ``{"ok": false, "batch_id",
"revision", "errors"}`` — the kernel's rejection shape — so the agent reads
host and kernel errors the same way.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from fold_host.skill.output import DISPOSITIONS

__all__ = ["check_output", "host_receipt"]

WHY_LIMIT = 500
OUTPUT_KEYS = ("dispositions", "batch")


def host_receipt(batch_id: str, revision: int, errors: Sequence[Mapping[str, Any]]) -> dict:
    """The receipt for an answer the host refused (the §4.2 rejection shape)."""
    return {"ok": False, "batch_id": batch_id, "revision": revision, "errors": list(errors)}


def _error(code: str, message: str, **locators: Any) -> dict:
    return {"code": code, "message": message, **locators}


def check_output(output: Any, event_ids: Sequence[str]) -> list[dict]:
    """The §9 errors of ``output`` for an input holding ``event_ids`` (empty list: fine)."""
    if not isinstance(output, dict):
        return [_error("invalid_json", "the answer must be one JSON object")]
    errors = [_error("invalid_output", f"unknown key {key!r}; the answer holds only dispositions and batch",
                     field=key) for key in output if key not in OUTPUT_KEYS]
    dispositions, batch = output.get("dispositions"), output.get("batch")
    if not isinstance(dispositions, list):
        errors.append(_error("invalid_output", "dispositions must be a list (one entry per input event)",
                             field="dispositions"))
    if not isinstance(batch, dict):
        errors.append(_error("invalid_output", "batch must be an object {declarations, acknowledges}",
                             field="batch"))
    if errors or not isinstance(dispositions, list) or not isinstance(batch, dict):
        return errors
    known = set(event_ids)
    given: dict[str, str] = {}
    attempted: set[str] = set()  # events named by an entry that is itself invalid
    for index, entry in enumerate(dispositions):
        problem = _entry_problem(entry, index)
        if problem is not None:
            errors.append(problem)
            if problem.get("event") is not None:
                attempted.add(problem["event"])
            continue
        event = entry["event"]
        if event not in known:
            errors.append(_error("disposition_unknown_event", f"dispositions[{index}]: no event {event!r} in this "
                                 "input", event=event))
        elif event in given:
            errors.append(_error("disposition_duplicate", f"event {event!r} has more than one disposition",
                                 event=event))
        else:
            given[event] = entry["disposition"]
    missing = [event for event in event_ids if event not in given and event not in attempted]
    if missing:
        errors.append(_error("disposition_missing", f"{len(missing)} event(s) have no disposition: "
                             f"{', '.join(missing[:10])}{' …' if len(missing) > 10 else ''}", events=missing))
    for item, event in _cited_events(batch.get("declarations")):
        if event in given and given[event] != "used":
            errors.append(_error("disposition_conflict", f"item {item!r} cites event:{event}, whose disposition "
                                 f"is {given[event]!r}; an event cited by a source is 'used'",
                                 event=event, item=item, disposition=given[event]))
    return errors


def _entry_problem(entry: Any, index: int) -> dict | None:
    where = f"dispositions[{index}]"
    if not isinstance(entry, dict):
        return _error("disposition_invalid", f"{where} must be an object {{event, disposition, why, related}}",
                      field=where)
    event = entry.get("event") if isinstance(entry.get("event"), str) else None
    extra = [key for key in entry if key not in ("event", "disposition", "why", "related")]
    if extra:
        return _error("disposition_invalid", f"{where}: unknown key {extra[0]!r}", event=event,
                      field=f"{where}.{extra[0]}")
    if event is None:
        return _error("disposition_invalid", f"{where}.event must be an event id (a string)", field=f"{where}.event")
    if entry.get("disposition") not in DISPOSITIONS:
        return _error("disposition_invalid", f"{where}.disposition must be one of {', '.join(DISPOSITIONS)}; "
                      f"found {entry.get('disposition')!r}", event=event, field=f"{where}.disposition")
    why = entry.get("why")
    if not isinstance(why, str) or not why.strip() or len(why) > WHY_LIMIT:
        return _error("disposition_invalid", f"{where}.why must be one sentence (1–{WHY_LIMIT} characters)",
                      event=event, field=f"{where}.why")
    related = entry.get("related", [])
    if related is not None and (not isinstance(related, list) or not all(isinstance(r, str) for r in related)):
        return _error("disposition_invalid", f"{where}.related must be a list of item ids", event=event,
                      field=f"{where}.related")
    return None


def _cited_events(declarations: Any) -> Iterator[tuple[str, str]]:
    """``(item id, event id)`` for every ``event:<id>`` source ref, children included."""
    if not isinstance(declarations, list):
        return
    for declaration in declarations:
        if not isinstance(declaration, dict):
            continue
        named = declaration.get("id")
        item = named if isinstance(named, str) else "?"
        sources = declaration.get("sources")
        for source in sources if isinstance(sources, list) else ():
            ref = source.get("ref") if isinstance(source, dict) else None
            if isinstance(ref, str) and ref.startswith("event:"):
                yield item, ref[len("event:"):]
        yield from _cited_events(declaration.get("children"))
