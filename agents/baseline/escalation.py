"""An agent's escalation is a matter of its own (the baseline editor's identifiers).

A coding agent that finds a CVE while running a benchmark writes the
escalation in the benchmark's thread; read as an update, it would overwrite
the benchmark's result. ``new_identifier(text, said)`` finds the first
identifier the message names — a CVE (``CVE-2026-41234``), a GitHub advisory
(``GHSA-xxxx-xxxx-xxxx``), a ticket (``ABC-123``): letters and digits, never
a bare number — that the item's words (``said``) do not state;
``escalation_id`` is the id of the item it gets. The editor uses them for a
request inside the thread or matter of a result or progress item. Pure.
"""

from __future__ import annotations

import re

__all__ = ["NAMED", "escalation_id", "new_identifier"]

NAMED = re.compile(r"\bCVE-\d{4}-\d{4,}\b|\bGHSA(?:-[0-9a-z]{4}){3}\b|\b[A-Z]{2,10}-\d{2,}\b")


def new_identifier(text: str, said: str) -> str | None:
    """The first identifier in ``text`` that ``said`` does not state (case-insensitive), or None."""
    known = said.lower()
    for found in NAMED.finditer(text):
        if found.group(0).lower() not in known:
            return found.group(0)
    return None


def escalation_id(thread_item: str, ident: str) -> str:
    """The item id of an escalation: its thread's item id and the identifier, slugged (at most 64)."""
    return f"{thread_item}-{re.sub(r'[^a-z0-9]+', '-', ident.lower())}".strip("-")[:64]
