"""Header values of one message → facts: ids, addresses, the date, the fingerprint (for ``fold_adapters.mime``).

Values arrive as the parser kept them (``fold_adapters.mailpolicy``: raw,
folded, 8-bit bytes as surrogates); whatever they hold, these functions
return bounded text or None and never raise.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from datetime import datetime, timezone
from email.utils import getaddresses, parsedate_to_datetime

from fold_adapters.mailtext import clean_line, header_text
from fold_core.observation import bound_text

__all__ = ["addresses", "first_id", "fingerprint", "message_date"]

_ID = re.compile(r"<([^<>\s]{1,900})>")
_ADDR = r"[^<>\s,;\"()\\@]+@[^<>\s,;\"()\\@]+"
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
    if not value:
        return None, "no Date header"
    try:
        moment = parsedate_to_datetime(clean_line(value))
    except (TypeError, ValueError, IndexError, OverflowError):
        return None, f"the Date header is unreadable: {clean_line(value)[:80]!r}"
    if not 1970 <= moment.year <= 2200:
        return None, f"the Date header is out of range: {clean_line(value)[:80]!r}"
    if moment.tzinfo is None:
        return moment.replace(tzinfo=timezone.utc), "the Date header has no zone (-0000); read as UTC"
    return moment, None


def fingerprint(headers: dict[str, str]) -> str:
    parts = [(first_id(headers.get("message-id")) or "").lower()]
    for name in ("date", "from", "to", "subject"):
        parts.append(" ".join((headers.get(name) or "").split()))
    return hashlib.sha256("\n".join(parts).encode("utf-8", "surrogateescape")).hexdigest()[:24]
