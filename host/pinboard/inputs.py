"""The user's inputs on the Pinboard: annotate and feedback (contract §7 ``annotate``, §11.2 ``feedback``, §12).

Each form goes through the same code path as its command — an annotation is
``Store.annotate`` (what ``foldctl annotate`` calls), feedback is
``fold_host.cycle.feedback.save_feedback`` (what ``foldctl feedback`` calls) — and
nothing else: the Pinboard never writes an item field. The page then says
what happens next (``annotation_notice``, ``feedback_notice``) or shows the
refusal beside the form (``refusal``: the kernel's or the feedback check's
own message).

Form bodies are ``application/x-www-form-urlencoded`` and small (the guard
caps them); fields are capped again here, before any store is touched.
``until`` comes from a quick choice or from the picker, whose text is read
by ``fold_host.timephrase`` in the host's time zone (a ``datetime-local``
value, or a phrase like ``tomorrow 09:00`` / ``明天 9:00``: the same reading as
``foldctl feedback --until``), and always reaches ``save_feedback`` as an
instant with an offset.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from urllib.parse import parse_qsl
from zoneinfo import ZoneInfo

from fold_host.timephrase import TimePhraseError, read_time

__all__ = ["FEEDBACK_MEANINGS", "QUICK_UNTIL", "annotation_notice", "feedback_notice", "parse_form", "refusal",
           "resolve_until", "text_field"]

FEEDBACK_MEANINGS = ("ack", "decide", "act", "input", "snooze")
TEXT_LIMIT = 2000  # code points: the contract's annotation text, and the feedback value's bound
FIELD_LIMIT = 64
QUICK_UNTIL = (("1h", "in 1 hour"), ("3h", "in 3 hours"), ("evening", "this evening 18:00"),
               ("tomorrow", "tomorrow 09:00"), ("week", "in a week, 09:00"), ("custom", "at the time below"))


def parse_form(body: bytes) -> dict[str, str]:
    """The fields of a urlencoded body (the first value of each name); ValueError when it is not text."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError("the form is not UTF-8 text") from None
    fields: dict[str, str] = {}
    for name, value in parse_qsl(text, keep_blank_values=True, max_num_fields=32):
        fields.setdefault(name, value)
    return fields


def text_field(fields: dict, name: str, limit: int = TEXT_LIMIT) -> str | None:
    """A text field without its surrounding blank lines; None when blank. ValueError when too long."""
    value = fields.get(name, "").replace("\r\n", "\n").strip("\n")
    if len(value) > limit:
        raise ValueError(f"{name} holds {len(value)} characters; at most {limit} are kept")
    return value if value.strip() else None


def resolve_until(choice: str, picked: str, now: datetime, zone: str) -> str:
    """``until`` as an instant with an offset, from a quick choice or the picker (host time zone)."""
    tz = ZoneInfo(zone)
    local = now.astimezone(tz)
    morning = local.replace(hour=9, minute=0, second=0, microsecond=0)
    if choice == "1h":
        when = local + timedelta(hours=1)
    elif choice == "3h":
        when = local + timedelta(hours=3)
    elif choice == "evening":
        when = local.replace(hour=18, minute=0, second=0, microsecond=0)
        if when <= local:
            when += timedelta(days=1)
    elif choice == "tomorrow":
        when = morning + timedelta(days=1)
    elif choice == "week":
        when = morning + timedelta(days=7)
    elif choice == "custom":
        if len(picked) > FIELD_LIMIT or not picked:
            raise ValueError("pick a date and time for the reminder")
        try:
            when = datetime.fromisoformat(read_time(picked, local, zone))
        except TimePhraseError:
            raise ValueError(f"the reminder time {picked!r} is not a date and time") from None
    else:
        raise ValueError("choose when to be reminded")
    if when <= local:
        raise ValueError("the reminder time is in the past")
    return when.replace(microsecond=0).isoformat()


def _english(template: str, **values) -> str:
    return template.format(**values)


def annotation_notice(note: str, t=_english) -> str:
    """What happens after a saved note (``t``: the Pinboard's words)."""
    return t("Your note is saved ({note}). The editor reads it the next time it looks at your sources; it then shows"
             " here as read. A note never changes the item by itself.", note=note)


def feedback_notice(meaning: str, until: str | None, t=_english) -> str:
    """What happens after feedback (``t``: the Pinboard's words)."""
    if meaning == "snooze":
        return t("You will be reminded {until}: the item goes back to the editor then. Until then nothing about it"
                 " changes.", until=until)
    words = {"ack": "Noted: you have seen it", "decide": "Your decision is noted", "act": "Noted: you have done it",
             "input": "Your addition is noted"}[meaning]
    return t("{what}. The editor reads it the next time it looks at your sources and updates the item;"
             " the Pinboard never changes the item itself.", what=t(words))


def refusal(document: dict) -> str:
    """The first error of a §4.2-shaped refusal, as the page shows it."""
    errors = document.get("errors") or [{}]
    first = errors[0]
    return first.get("message") or first.get("code") or "refused"
