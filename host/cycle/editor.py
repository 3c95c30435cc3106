"""Asking the editor, at most ``max_attempts`` times per window (contract §9).

Each attempt: call the backend → check the answer (``dispositions``) →
keep it as the commit intent → commit through the store. A host error or a
kernel rejection goes back to the editor as the receipt of that attempt (a
``Correction``) and the editor answers with a complete corrected object.
Every attempt — answered, refused, unreachable — is one row of
``agent_calls`` with its latency, token counts, model, skill digest, tool
calls and outcome (committed, checked, acknowledged, rejected, invalid,
unavailable). The request carries the window's read-only tools
(``HostTools``), for backends whose model may look things up.

When the configured editor cannot be reached and ``[agent] fallback`` asks
for it, the baseline editor settles the window instead (``fold_host.cycle.fallback``).

An unreachable editor (network, HTTP error, timeout, a crashing program)
ends the window at once: asking again within the same cycle would only
hammer it. Either way a window that was not accepted leaves its
observations pending (``windows.note_failure``): nothing is lost.
``StoreUnavailable`` is not a rejection — the outcome is unknown — so it is
raised to the caller with the intent kept for the next cycle.

An answer that repeats a secret of the configuration verbatim (``secrets``)
is refused like any other invalid answer (``secret_in_output``); every
secret the host knows is masked in what the call log keeps and in the reply
quoted back to the editor.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial

from fold_core.errors import StoreError
from fold_core.plugin_api import AgentRequest, AgentUnavailable, Correction, Reply
from fold_host.cycle.bounded_view import editor_view
from fold_host.cycle.dispositions import check_output, host_receipt
from fold_host.cycle.fallback import Editor, fallback_editor, note_reached, note_unreachable
from fold_host.cycle.host import Host
from fold_host.cycle.secrets import known_secrets, masker, secret_problems
from fold_host.cycle.tools import HostTools
from fold_host.cycle.windows import Window, save_intent
from fold_host.hostdb import HostDB

__all__ = ["Attempts", "OUTCOMES", "ask_editor", "log_call", "skill_digest"]

OUTCOMES = {"commit": "committed", "checked": "checked", "acknowledge": "acknowledged"}

KEEP_REQUESTS = 200  # agent_calls rows that keep their full request body


@dataclass
class Attempts:
    """What the editor loop ended with."""

    attempts: int = 0
    receipt: dict | None = None  # the accepted receipt
    dispositions: list = field(default_factory=list)
    error: dict | None = None  # why the window failed (the last receipt or the transport error)
    fallback: bool = False  # the baseline editor settled the window in the configured one's place
    unreachable: int = 0  # windows in a row (this one included) the configured editor could not be reached

    @property
    def accepted(self) -> bool:
        return self.receipt is not None

    @property
    def was_unreachable(self) -> bool:
        return (self.error or {}).get("code") == "agent_unavailable"


def ask_editor(host: Host, db: HostDB, window: Window, document: dict, now: str, *,
               fallback: bool = True) -> Attempts:
    """The window's attempts with the configured editor; the fallback editor's when that one is out of reach.

    ``fallback=False`` (the skill evaluation) asks the configured editor only and keeps no count.
    """
    tools = HostTools(host.location, document["now"])
    result = _attempts(host, db, window, document, now, Editor(host.agent, host.agent_type, host.actor), tools)
    if not fallback:
        return result
    if not result.was_unreachable:
        note_reached(db)
        return result
    count = note_unreachable(db, now, result.error)
    stand_in = fallback_editor(host.config)
    if stand_in is None or count < host.agent_instance.settings.fallback_after:
        result.unreachable = count
        return result
    attempts = result.attempts
    result = _attempts(host, db, window, document, now, stand_in, tools)
    result.attempts += attempts
    result.fallback, result.unreachable = True, count
    return result


def _attempts(host: Host, db: HostDB, window: Window, document: dict, now: str, editor: Editor,
              tools: HostTools) -> Attempts:
    """Run the attempts of one window with one editor; the accepted receipt or the failure."""
    result = Attempts()
    corrections: list[Correction] = []
    revision = document["state"]["revision"]
    log = partial(log_call, db, host, window, editor=editor, now=now)
    secrets = known_secrets(host)
    mask = masker(secrets)
    shown = editor_view(document, editor.backend, db)  # a big state's trace items brief for an editor with tools
    for attempt in range(1, host.config.host.max_attempts + 1):
        result.attempts = attempt
        request = AgentRequest(input=shown, skill=host.skill, attempt=attempt, corrections=tuple(corrections),
                               output_schema=host.output_schema, tools=tools)
        started = time.monotonic()
        try:
            reply = editor.backend.propose(request)
        except Exception as error:
            failure = _unavailable(error)
            result.error = _scrubbed(host, failure.to_error())  # it reaches stderr and doctor: no key in it
            log(request, latency_ms=failure.latency_ms or _ms(started), outcome="unavailable",
                error=result.error, stderr=failure.stderr)
            return result
        if reply.latency_ms is None:
            reply.latency_ms = _ms(started)
        errors = check_output(reply.output, window.event_ids) if reply.output is not None else \
            [{"code": "invalid_json", "message": reply.error or "the reply holds no JSON object"}]
        if not errors:
            errors = secret_problems(reply.output, secrets)
        if errors:
            receipt = host_receipt(window.batch_id, revision, errors)
        else:
            output = reply.output
            save_intent(db, window, actor=editor.actor, batch=output["batch"], dispositions=output["dispositions"],
                        now=now)
            try:
                answer = host.store.commit(output["batch"], actor=editor.actor, now=now, batch_id=window.batch_id)
            except StoreError as error:  # outcome unknown: the intent stays, the next cycle finishes it
                log(request, reply=reply, outcome="store_unavailable", error=error.to_error())
                raise
            if answer.exit_code == 0:
                log(request, reply=reply, outcome=OUTCOMES[answer.document["type"]])
                result.receipt, result.dispositions = answer.document, output["dispositions"]
                return result
            receipt = answer.document
        log(request, reply=reply, outcome="invalid" if reply.output is None else "rejected", error=receipt)
        corrections.append(Correction(reply=mask(reply.raw), receipt=receipt))
        result.error = _scrubbed(host, receipt)
        if {e.get("code") for e in receipt.get("errors", ())} == {"batch_conflict"}:
            break  # the batch_id is taken: no answer of the editor can fix that (the cycle re-derives it)
    return result


def log_call(db: HostDB, host: Host, window: Window, request: AgentRequest, *, editor: Editor, now: str,
             outcome: str, reply: Reply | None = None, error: dict | None = None, latency_ms: float | None = None,
             stderr: str | None = None) -> None:
    """One row of ``agent_calls``; older rows drop their request body (the inbox keeps the events).

    Every secret the host knows (``secrets.known_secrets``: the agent's keys, passwords, tokens) is
    blanked out of everything kept.
    """
    body = {"input": request.input, "attempt": request.attempt,
            "corrections": [c.receipt for c in request.corrections]} if request.attempt == 1 else \
        {"attempt": request.attempt, "corrections": [c.receipt for c in request.corrections]}
    scrub = _scrubber(host)
    told = reply.stderr if reply is not None else stderr
    db.log_call(batch_id=window.batch_id, attempt=request.attempt, backend=editor.type_name, at=now,
                latency_ms=reply.latency_ms if reply is not None else latency_ms,
                request=scrub(json.dumps(body, ensure_ascii=False)),
                response=scrub(reply.raw) if reply is not None else None,
                stderr=scrub(told) if told is not None else None,
                input_tokens=reply.input_tokens if reply is not None else None,
                output_tokens=reply.output_tokens if reply is not None else None,
                cached_tokens=reply.cached_tokens if reply is not None else None, cost=_cost(editor, reply),
                outcome=outcome, error=scrub(json.dumps(error, ensure_ascii=False)) if error is not None else None,
                model=(reply.model if reply is not None else None) or getattr(editor.backend.settings, "model", None),
                skill=skill_digest(request.skill), tools=(reply.tools or None) if reply is not None else None,
                fallback=editor.fallback, keep_requests=KEEP_REQUESTS)


def _cost(editor: Editor, reply: Reply | None) -> float | None:
    """The call's cost under ``[agent] prices`` (None without prices or token counts)."""
    prices = getattr(editor.backend.settings, "prices", None)
    if prices is None or reply is None:
        return None
    return prices.cost(reply.input_tokens, reply.cached_tokens, reply.output_tokens)


def skill_digest(skill: str) -> str:
    """A short digest of the skill text (which version of the instructions an answer was given under)."""
    return hashlib.sha256(skill.encode("utf-8")).hexdigest()[:12]


def _scrubbed(host: Host, document: dict) -> dict:
    """``document`` with the agent's secret values blanked out."""
    return json.loads(_scrubber(host)(json.dumps(document, ensure_ascii=False)))


def _scrubber(host: Host) -> Callable[[str], str]:
    """A function that blanks every secret the host knows out of a text."""
    return masker(known_secrets(host))


def _unavailable(error: Exception) -> AgentUnavailable:
    if isinstance(error, AgentUnavailable):
        return error
    return AgentUnavailable("crash", f"the backend failed: {type(error).__name__}: {error}")


def _ms(started: float) -> float:
    return round((time.monotonic() - started) * 1000, 1)
