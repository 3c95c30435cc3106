"""The bounded view of a big state for an editor that can look items up (contract §9, "Big states").

A state of a thousand active items is mostly trace items: each one costs the
editor about 550 bytes of the §9 input on every call (summary, reason,
sources, time projections), though the editor only needs to know it is there,
what it is called and how much of its layer it takes. When the active state
holds more than ``BRIEF_ABOVE`` items and the editor is offered the lookup
tools, every **trace** item is sent brief — ``{"id", "title", "weight",
"kind", "share", "brief": true}`` (its ``children`` layer, when it has one,
still listed under the same rule) — and the editor reads the whole item with
``fold_get_item`` when it needs it. The layers keep their ``budget``,
``used`` and ``free``, so budgets are still checked on the whole state.

Items the window points at are always sent whole: the target of a feedback or
reminder event, an item with a pending annotation, an item an earlier
observation of one of the window's threads was related to, and an item
carrying a decision frame. Editors without tools (the baseline, ``command``,
an LLM backend with ``max_tool_calls = 0``) always get the whole state.

``editor_view(document, backend, db)`` gives the document one backend reads;
``brief_state(document, keep)`` is the pure transformation. Neither changes
the document it is given.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fold_host.hostdb import HostDB

__all__ = ["BRIEF_ABOVE", "BRIEF_FIELDS", "brief_state", "editor_view", "offers_tools", "whole_ids"]

BRIEF_ABOVE = 50  # active items; a state of at most this many is always sent whole
BRIEF_FIELDS = ("id", "title", "weight", "kind", "share")
THREAD_LOOKBACK = 200  # as the not-active references of ``context``: earlier observations of the same threads


def offers_tools(backend: Any) -> bool:
    """Whether the backend's model is offered the lookup tools (and so can read a brief item whole)."""
    settings = getattr(backend, "settings", None)
    return bool(getattr(backend, "uses_llm", False)) and int(getattr(settings, "max_tool_calls", 0) or 0) > 0


def active_count(layer: Mapping[str, Any] | None) -> int:
    """Active items in a §8 layer and every layer below it."""
    return sum(1 + active_count(view.get("children")) for view in (layer or {}).get("items") or ())


def whole_ids(document: Mapping[str, Any], db: HostDB | None) -> set[str]:
    """The items the window points at (see the module text): always sent whole."""
    found: set[str] = set()
    for note in document.get("pending_annotations") or ():
        for key in ("item", "resolved_item"):
            if isinstance(note.get(key), str):
                found.add(note[key])
    threads = set()
    for event in document.get("events") or ():
        for link in (event.get("feedback"), event.get("reminder")):
            if isinstance(link, Mapping) and isinstance(link.get("target"), str):
                found.add(link["target"])
        if isinstance(event.get("thread"), str):
            threads.add(event["thread"])
    if db is not None and threads:
        found |= db.related_in_threads(threads, THREAD_LOOKBACK)
    return found


def brief_state(document: Mapping[str, Any], keep: set[str] | frozenset[str] = frozenset()) -> dict:
    """The document with the trace items of a big state made brief (a new dict; the given one is untouched)."""
    state = document.get("state")
    if not isinstance(state, Mapping) or active_count(state.get("root")) <= BRIEF_ABOVE:
        return dict(document)
    shown = dict(state)
    shown["root"] = _layer(state["root"], keep)
    return {**document, "state": shown}


def _layer(layer: Mapping[str, Any], keep: set[str] | frozenset[str]) -> dict:
    shown = dict(layer)
    shown["items"] = [_item(view, keep) for view in layer.get("items") or ()]
    return shown


def _item(view: Mapping[str, Any], keep: set[str] | frozenset[str]) -> dict:
    children = view.get("children")
    if view.get("weight") != "trace" or view.get("id") in keep or view.get("decision"):
        shown = dict(view)
    else:
        shown = {key: view.get(key) for key in BRIEF_FIELDS}
        shown["brief"] = True
    if children:
        shown["children"] = _layer(children, keep)
    return shown


def editor_view(document: Mapping[str, Any], backend: Any, db: HostDB | None) -> Mapping[str, Any]:
    """What ``backend`` is sent: the brief view of a big state when it can look items up, else the document."""
    state = document.get("state")
    if not offers_tools(backend) or not isinstance(state, Mapping) or active_count(state.get("root")) <= BRIEF_ABOVE:
        return document
    return brief_state(document, whole_ids(document, db))
