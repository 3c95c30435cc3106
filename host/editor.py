"""Asking the editor, at most ``max_attempts`` times per window (contract §9).

Each attempt: call the backend → check the answer (``dispositions``) →
keep it as the commit intent → commit through the store. A host error or a
kernel rejection goes back to the editor as the receipt of that attempt (a
``Correction``) and the editor answers with a complete corrected object.
Every attempt — answered, refused, unreachable — is one row of
``agent_calls`` with its latency and token counts.

An unreachable editor (network, HTTP error, timeout, a crashing program)
ends the window at once: asking again within the same cycle would only
hammer it. Either way a window that was not accepted leaves its
observations pending (``windows.note_failure``): nothing is lost.
``StoreUnavailable`` is not a rejection — the outcome is unknown — so it is
raised to the caller with the intent kept for the next cycle.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field

from fold_core.errors import StoreError
from fold_core.plugin_api import AgentRequest, AgentUnavailable, Correction, Reply
from fold_host.dispositions import check_output, host_receipt
from fold_host.windows import Window, save_intent

__all__ = ["Attempts", "ask_editor", "log_call"]

KEEP_REQUESTS = 200  # agent_calls rows that keep their full request body


@dataclass
class Attempts:
    """What the editor loop ended with."""

    attempts: int = 0
    receipt: dict | None = None  # the accepted receipt
    dispositions: list = field(default_factory=list)
    error: dict | None = None  # why the window failed (the last receipt or the transport error)

    @property
    def accepted(self) -> bool:
        return self.receipt is not None


def ask_editor(host, db, window: Window, document: dict, now: str) -> Attempts:
    """Run the attempts of one window; the accepted receipt or the failure."""
    result = Attempts()
    corrections: list[Correction] = []
    revision = document["state"]["revision"]
    for attempt in range(1, host.config.host.max_attempts + 1):
        result.attempts = attempt
        request = AgentRequest(input=document, skill=host.skill, attempt=attempt, corrections=tuple(corrections),
                               output_schema=host.output_schema)
        started = time.monotonic()
        try:
            reply = host.agent.propose(request)
        except Exception as error:
            failure = _unavailable(error)
            log_call(db, host, window, request, now=now, latency_ms=failure.latency_ms or _ms(started),
                     outcome="unavailable", error=failure.to_error(), stderr=failure.stderr)
            result.error = failure.to_error()
            return result
        if reply.latency_ms is None:
            reply.latency_ms = _ms(started)
        errors = check_output(reply.output, window.event_ids) if reply.output is not None else \
            [{"code": "invalid_json", "message": reply.error or "the reply holds no JSON object"}]
        if errors:
            receipt = host_receipt(window.batch_id, revision, errors)
        else:
            output = reply.output
            save_intent(db, window, actor=host.actor, batch=output["batch"], dispositions=output["dispositions"],
                        now=now)
            try:
                answer = host.store.commit(output["batch"], actor=host.actor, now=now, batch_id=window.batch_id)
            except StoreError as error:  # outcome unknown: the intent stays, the next cycle finishes it
                log_call(db, host, window, request, reply=reply, now=now, outcome="store_unavailable",
                         error=error.to_error())
                raise
            if answer.exit_code == 0:
                log_call(db, host, window, request, reply=reply, now=now, outcome="accepted")
                result.receipt, result.dispositions = answer.document, output["dispositions"]
                return result
            receipt = answer.document
        log_call(db, host, window, request, reply=reply, now=now, outcome="rejected", error=receipt)
        corrections.append(Correction(reply=reply.raw, receipt=receipt))
        result.error = receipt
        if {e.get("code") for e in receipt.get("errors", ())} == {"batch_conflict"}:
            break  # the batch_id is taken: no answer of the editor can fix that (the cycle re-derives it)
    return result


def log_call(db, host, window: Window, request: AgentRequest, *, now: str, outcome: str, reply: Reply | None = None,
             error: dict | None = None, latency_ms: float | None = None, stderr: str | None = None) -> None:
    """One row of ``agent_calls``; older rows drop their request body (the inbox keeps the events)."""
    body = {"input": request.input, "attempt": request.attempt,
            "corrections": [c.receipt for c in request.corrections]} if request.attempt == 1 else \
        {"attempt": request.attempt, "corrections": [c.receipt for c in request.corrections]}
    db.log_call(batch_id=window.batch_id, attempt=request.attempt, backend=host.agent_type, at=now,
                latency_ms=reply.latency_ms if reply is not None else latency_ms,
                request=json.dumps(body, ensure_ascii=False),
                response=reply.raw if reply is not None else None,
                stderr=(reply.stderr if reply is not None else stderr),
                input_tokens=reply.input_tokens if reply is not None else None,
                output_tokens=reply.output_tokens if reply is not None else None,
                outcome=outcome, error=error, keep_requests=KEEP_REQUESTS)


def _unavailable(error: Exception) -> AgentUnavailable:
    if isinstance(error, AgentUnavailable):
        return error
    return AgentUnavailable("crash", f"the backend failed: {type(error).__name__}: {error}")


def _ms(started: float) -> float:
    return round((time.monotonic() - started) * 1000, 1)
