"""Writing an item from one message: its title and summary from the facts, how soon its status ages, and whether
a request names something its item does not state yet (an escalation: a matter of its own).

A mixin of the baseline planner (``fold_agents.baseline.editor``), beside ``Attention`` and ``Frames``.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from fold_agents.baseline.draft import Draft
from fold_agents.baseline.escalation import escalation_id, new_identifier
from fold_agents.baseline.facts import about, ageing_hours, read_facts
from fold_agents.baseline.mail import own_words
from fold_agents.baseline.rules import thread_item_id
from fold_agents.baseline.writing import write

__all__ = ["Composing"]


class Composing(Draft):
    """What the planner writes from one message; see the module's docstring."""

    def escalation(self, event: Mapping[str, Any], verdict, item_id: str | None) -> tuple[str, str] | None:
        """(identifier, item id) when a request names something its thread's or matter's item — a result or
        progress, not a request — does not state (``baseline_escalation``): a matter of its own."""
        if verdict.kind != "needs-you" or item_id is None:
            return None
        view = self.known.active.get(item_id, {})
        planned = self.changes.get(item_id)
        kind = planned.kind if planned is not None and planned.kind else view.get("kind")
        if kind == "needs-you" or kind is None:
            return None
        said = " ".join(str(part or "") for part in [view.get("title"), view.get("summary")]
                        + ([planned.title, planned.summary] if planned is not None else [])
                        + [s.get("quote") for s in view.get("sources") or ()])
        ident = new_identifier(own_words(str(event.get("text") or ""))[:1500], said)
        return None if ident is None else (ident, escalation_id(thread_item_id(dict(event)), ident))

    def written(self, event: Mapping[str, Any], verdict, ident: str | None = None) -> tuple[str, str | None]:
        """Title and summary from the facts of the message (``baseline_facts``), in the source's language;
        ``ident``: the identifier an escalation is about (its title, and the fact its ask is about)."""
        facts = read_facts(event, own_words(str(event.get("text") or "")), self.moment)
        if ident is not None:
            facts = about(facts, ident, own_words(str(event.get("text") or "")))
        title, summary = write(facts, verdict.rule, verdict.kind, verdict.due_at, self.moment)
        return title, summary or None

    def ageing(self, event: Mapping[str, Any], kind: str | None) -> str | None:
        """``stale_after`` for an in-progress status that ages (in transit: 48 h, running or in review: 24 h)."""
        hours = ageing_hours(f"{event.get('title') or ''} {own_words(str(event.get('text') or ''))[:600]}")
        if kind != "in-progress" or hours is None or self.moment is None:
            return None
        return (self.moment + timedelta(hours=hours)).isoformat()
