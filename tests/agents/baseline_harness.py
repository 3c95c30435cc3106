"""A small host stand-in for baseline tests: §9 input from a real store, the §9 checks, the commit.

Not the real host cycle (that is [host-cycle]'s): just enough to run the
baseline editor against the real kernel (``fold_core.store.memory_store``) and
check its answers the way the contract says the host must (§9).
"""

from __future__ import annotations

from fold_core.plugin_api import AgentRequest, Correction
from fold_agents.baseline.editor import BaselineBackend
from fold_host.skill import load_skill

DISPOSITIONS = {"noise", "duplicate", "used", "deferred"}


def agent_input(store, now: str, events: list[dict], *, not_active: int | None = 200, batch_id: str = "b") -> dict:
    document = store.state_document(now=now, not_active=not_active).document
    signal_type = "events" if events else "review"
    return {"now": now, "batch_id": batch_id, "user": {"background": "", "purpose": "", "feedback_policy": ""},
            "state": document, "pending_annotations": document["pending_annotations"], "events": events,
            "signal": {"type": signal_type, "reason": "test", "received": len(events),
                       "window": {"from": now, "to": now}, "coverage": [], "reminders": 0}}


def disposition_errors(document: dict, output: dict) -> list[dict]:
    """The host's §9 checks, before the kernel."""
    events = [e["id"] for e in document["events"]]
    errors, seen = [], {}
    for disposition in output.get("dispositions", []):
        event = disposition.get("event")
        if event not in events:
            errors.append({"code": "disposition_unknown_event", "event": event})
        elif event in seen:
            errors.append({"code": "disposition_duplicate", "event": event})
        elif disposition.get("disposition") not in DISPOSITIONS:
            errors.append({"code": "invalid_field", "event": event, "field": "disposition"})
        seen.setdefault(event, disposition.get("disposition"))
    errors += [{"code": "disposition_missing", "event": e} for e in events if e not in seen]

    def cited(declarations):
        for declaration in declarations:
            for source in declaration.get("sources") or ():
                if source["ref"].startswith("event:"):
                    yield source["ref"][len("event:"):]
            yield from cited(declaration.get("children") or ())

    for event in cited(output["batch"]["declarations"]):
        if event in seen and seen[event] != "used":
            errors.append({"code": "disposition_conflict", "event": event})
    return errors


class Editor:
    """Runs the baseline like a host would: propose, check, commit, send the receipt back."""

    def __init__(self, store, lang: str = "zh", max_attempts: int = 3) -> None:
        self.store, self.backend, self.skill = store, BaselineBackend(BaselineBackend.Settings()), load_skill(lang)
        self.max_attempts, self.calls, self.rejections = max_attempts, 0, []

    def cycle(self, now: str, events: list[dict], *, batch_id: str, not_active: int | None = 200):
        """(receipt, outputs of every attempt, the input)."""
        document = agent_input(self.store, now, events, not_active=not_active, batch_id=batch_id)
        corrections, outputs = (), []
        for attempt in range(1, self.max_attempts + 1):
            reply = self.backend.propose(AgentRequest(document, self.skill, attempt, corrections))
            self.calls += 1
            assert reply.error is None and reply.output is not None
            outputs.append(reply.output)
            problems = disposition_errors(document, reply.output)
            if problems:
                receipt = {"ok": False, "errors": problems}
            else:
                receipt = self.store.commit({"batch_id": batch_id, **reply.output["batch"]}, actor="baseline",
                                            now=now).document
                if receipt["ok"]:
                    return receipt, outputs, document
            self.rejections += receipt["errors"]
            corrections = (*corrections, Correction(reply.raw, receipt))
        return receipt, outputs, document
