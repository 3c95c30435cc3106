"""User feedback as observations (contract §9 ``events[].feedback``, §11.2 ``foldctl feedback``).

``save_feedback`` is the one path for feedback — the CLI and the Pinboard
both call it. It checks the target item against the store (unknown →
``item_not_found``, merged → ``item_merged``: the §4.2 shape without
``batch_id``, exit 1), then keeps one observation of channel ``feedback`` in
the inbox; a snooze also schedules its reminder, in the same host.db
transaction, and what the feedback teaches about the item's senders and
threads (``fold_host.cycle.learning``; ``input`` clears it). The editor reads the
feedback at its next cycle: feedback never edits an item itself. Annotations stay ``foldctl annotate``.

A snooze's ``until`` is read by ``fold_host.timephrase`` (``2h``, ``tomorrow
09:00``, ``明天 9:00``, an ISO instant …) in the caller's ``[host] timezone``
at ``now``; the answer says what it was read as (``until``: given, instant,
timezone) and the reminder keeps the instant.
"""

from __future__ import annotations

import hashlib
import json
from datetime import timezone

from fold_core.errors import UsageError
from fold_core.observation import Observation
from fold_core.store.locate import open_store
from fold_core.timefmt import instant, parse_instant
from fold_host.cycle.learning import learning_for
from fold_host.hostdb import open_host_db
from fold_host.timephrase import TimePhraseError, read_time

__all__ = ["FEEDBACK_SOURCE", "MEANINGS", "UnreadableUntil", "save_feedback"]

FEEDBACK_SOURCE = "feedback"
MEANINGS = ("ack", "decide", "act", "input", "snooze")
VALUE_LIMIT = 2000


class UnreadableUntil(UsageError):
    """``until`` is none of the time forms (the message lists them); exit 2 like any usage error."""


def save_feedback(store_dir: str, item: str, meaning: str, value: str | None, until: str | None, now: str,
                  *, via: str = "cli", action: str | None = None, extra: dict | None = None,
                  timezone_name: str = "UTC", text: str | None = None) -> tuple[dict, int]:
    """Keep one feedback observation (and the reminder of a snooze); ``(document, exit code)``.

    :param via: how it came: ``cli``, ``button`` (Pinboard), ``reply`` or ``mcp`` (``foldctl mcp``).
    :param action: the concrete action the user took (default: the meaning).
    :param extra: more fields of the feedback (an answer's ``option``, ``digest``, ``revision``, ``note``).
    :param timezone_name: the IANA zone a phrase in ``until`` is read in (``[host] timezone``).
    :param text: the observation's readable text when there is no ``value`` (an answer: "decided: …"); not
        part of its id, which stays derived from the feedback and ``now``.
    """
    _check(meaning, value, until, now)
    given = until
    if until is not None:
        try:
            until = read_time(until, instant(now), timezone_name)
        except TimePhraseError as error:
            raise UnreadableUntil(f"--until: {error}") from None
    rejection, refs = _check_item(store_dir, item, now)
    if rejection is not None:
        return rejection, 1
    feedback = {"target": item, "action": action or meaning, "meaning": meaning, "via": via}
    if value is not None:
        feedback["value"] = value
    if until is not None:
        feedback["until"] = until
    feedback.update(extra or {})
    key = hashlib.sha256(json.dumps([feedback, now], sort_keys=True, ensure_ascii=False).encode()).hexdigest()[:10]
    stamp = instant(now).astimezone(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    native = f"{stamp}-{key}"
    observation = Observation(id=f"{FEEDBACK_SOURCE}:{native}", source=FEEDBACK_SOURCE, channel="feedback",
                              sender="user", at=now, observed_at=now, title=f"{meaning}: {item}",
                              text=value or text or "", feedback=feedback)
    reminder = None
    if meaning == "snooze":
        reminder = {"id": native, "target": item, "feedback": observation.id, "due_at": until, "requested_at": now}
    with open_host_db(store_dir) as db:
        db.add_feedback(observation, reminder, learning_for(db, item, refs, meaning, now))
    document: dict = {"ok": True, "observation": observation.to_event(), "reminder": reminder}
    if until is not None:
        document["until"] = {"given": given, "instant": until, "timezone": timezone_name}
    return document, 0


def _check(meaning: str, value: str | None, until: str | None, now: str) -> None:
    if meaning not in MEANINGS:
        raise UsageError(f"--meaning must be one of {', '.join(MEANINGS)}; got {meaning!r}")
    if meaning == "snooze" and until is None:
        raise UsageError("--meaning snooze needs --until WHEN: when to be reminded (2h, tomorrow 09:00, "
                         "明天 9:00, …)")
    if meaning != "snooze" and until is not None:
        raise UsageError(f"--until belongs to --meaning snooze; got --meaning {meaning}")
    if value is not None and not 1 <= len(value) <= VALUE_LIMIT:
        raise UsageError(f"--value must hold 1–{VALUE_LIMIT} characters; got {len(value)}")
    if parse_instant(now) is None:
        raise UsageError(f"now must be an instant with an offset; got {now!r}")


def _check_item(store_dir: str, item: str, now: str) -> tuple[dict | None, list[str]]:
    """``(None, observation ids its sources cite)`` when feedback may target ``item`` (active or
    withdrawn); else ``(the rejection, [])``."""
    answer = open_store(store_dir).state_document(now=now, item=item, depth=0, not_active=0)
    if answer.exit_code == 0:
        view = answer.document.get("item") or {}
        refs = [str(s.get("ref"))[len("event:"):] for s in view.get("sources") or ()
                if isinstance(s, dict) and str(s.get("ref") or "").startswith("event:")]
        return None, refs
    codes = {error.get("code") for error in answer.document.get("errors", ())}
    return (None, []) if codes == {"item_inactive"} else (answer.document, [])
