"""Header values of one message → facts: ids, addresses, the date, the fingerprint (for ``fold_adapters.mail.mime``).

Values arrive as the parser kept them (``fold_adapters.mail.policy``: raw,
folded, 8-bit bytes as surrogates); whatever they hold, these functions
return bounded text or None and never raise.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from datetime import datetime, timedelta, timezone
from email.utils import getaddresses, parsedate_to_datetime
from typing import Any

from fold_adapters.text.clean import clean_line, header_text
from fold_core.observation import bound_text

__all__ = ["BULK_HEADERS", "addresses", "delivery_facts", "first_id", "fingerprint", "message_date"]

_ID = re.compile(r"<([^<>\s]{1,900})>")
_ADDR = r"[^<>\s,;\"()\\@]+@[^<>\s,;\"()\\@]+"
_DATE = re.compile(r"\s*(?:[A-Za-z]{3},\s*)?(\d{1,2})\s+([A-Za-z]{3})\s+(\d{4})\s+(\d{1,2}):(\d{2})(?::(\d{2}))?"
                   r"\s+([+-])(\d{2})(\d{2})(?:\s*\([^()]*\))?\s*\Z")
_MONTHS = {m: n for n, m in enumerate(("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov",
                                       "dec"), start=1)}
_ZONES: dict[str, timezone] = {}
_SIMPLE_ADDRESS = re.compile(rf"\s*(?:([^\"<>,;()\\]*?)\s*<({_ADDR})>|({_ADDR}))\s*\Z")


def first_id(value: str | None) -> str | None:
    if not value:
        return None
    match = _ID.search(value)
    if match:
        return clean_line(match.group(1))[:900] or None
    value = clean_line(value)
    return value[:900] if value and " " not in value else None


def addresses(value: str | None, hints: Iterable[str], limit: int) -> list[str]:
    if not value:
        return []
    shown = []
    pairs = _address_pairs(value.replace("\r", " ").replace("\n", " "))
    for name, address in pairs:
        name = header_text(name, hints)[0] if name else ""
        address = clean_line(address)[:320]
        if not (name or address):
            continue
        shown.append(bound_text(f"{name} <{address}>" if name and address else (address or name), 160))
        if len(shown) >= limit:
            shown.append(f"… and {len(pairs) - limit} more")
            break
    return shown


def _address_pairs(value: str) -> list[tuple[str, str]]:
    """``(name, address)`` pairs; the plain shapes by a pattern, the rest by ``getaddresses``."""
    if '"' not in value and "(" not in value and ":" not in value and "\\" not in value:
        pairs = []
        for piece in value.split(","):
            if not piece.strip():
                continue
            match = _SIMPLE_ADDRESS.match(piece)
            if match is None:
                break
            pairs.append((match.group(1) or "", match.group(2) or match.group(3)))
        else:
            return pairs
    try:
        return getaddresses([value])
    except Exception:  # a header getaddresses cannot take apart: keep its text as one "name"
        return [(value, "")]


def message_date(value: str | None) -> tuple[datetime | None, str | None]:
    """The Date header as a tz-aware datetime, or None and why."""
    if not value:
        return None, "no Date header"
    moment = _common_date(value)
    if moment is not None:
        return moment, None
    try:
        moment = parsedate_to_datetime(clean_line(value))
    except (TypeError, ValueError, IndexError, OverflowError):
        return None, f"the Date header is unreadable: {clean_line(value)[:80]!r}"
    if not 1970 <= moment.year <= 2200:
        return None, f"the Date header is out of range: {clean_line(value)[:80]!r}"
    if moment.tzinfo is None:
        return moment.replace(tzinfo=timezone.utc), "the Date header has no zone (-0000); read as UTC"
    return moment, None


def _common_date(value: str) -> datetime | None:
    """The usual shape (``Mon, 12 Oct 2026 10:30:00 +0800``) read directly; anything else: None."""
    match = _DATE.match(value)
    if match is None:
        return None
    day, month, year, hour, minute, second, sign, zone_hours, zone_minutes = match.groups()
    month_number = _MONTHS.get(month.lower())
    offset = int(zone_hours) * 60 + int(zone_minutes)
    if month_number is None or offset == 0 and sign == "-" or not 1970 <= int(year) <= 2200:
        return None  # -0000 ("no zone") and odd values take the general path
    try:
        zone = _ZONES.get(sign + zone_hours + zone_minutes) or _ZONES.setdefault(
            sign + zone_hours + zone_minutes, timezone(timedelta(minutes=offset if sign == "+" else -offset)))
        return datetime(int(year), month_number, int(day), int(hour), int(minute), int(second or 0), tzinfo=zone)
    except ValueError:
        return None


def fingerprint(headers: dict[str, str]) -> str:
    parts = [(first_id(headers.get("message-id")) or "").lower()]
    for name in ("date", "from", "to", "subject"):
        parts.append(" ".join((headers.get(name) or "").split()))
    return hashlib.sha256("\n".join(parts).encode("utf-8", "surrogateescape")).hexdigest()[:24]


#: headers that bulk-sending services and campaign tools add (their names are kept, never their values).
BULK_HEADERS = ("feedback-id", "list-unsubscribe-post", "x-campaign", "x-campaign-id", "x-campaignid",
                "x-csa-complaints", "x-mailchimp-campaign", "x-mailgun-sid", "x-mailgun-tag", "x-mailjet-campaign",
                "x-mandrill-user", "x-mc-user", "x-report-abuse", "x-ses-outgoing", "x-sg-eid", "x-sib-id")


def delivery_facts(headers: dict) -> dict[str, Any]:
    """The few header facts that tell bulk and automated mail (names and short tokens, never addresses)."""
    facts: dict[str, Any] = {}
    for key, name in (("precedence", "precedence"), ("auto_submitted", "auto-submitted")):
        value = clean_line(str(headers.get(name) or "")).split(";")[0].strip().lower()[:32]
        if value and not (key == "auto_submitted" and value == "no"):
            facts[key] = value
    if "auto_submitted" not in facts and ("x-autoreply" in headers or "x-autorespond" in headers):
        facts["auto_submitted"] = "auto-replied"
    if "list-unsubscribe" in headers:
        facts["list_unsubscribe"] = True
    bulk = [name for name in BULK_HEADERS if name in headers]
    if bulk:
        facts["bulk_headers"] = bulk
    return facts
