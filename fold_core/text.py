"""Text rules of contract §1: ids, titles, summaries, reasons, names.

Lengths are counted in Unicode code points, never bytes or display columns.
Each check returns None when the value is acceptable, else a short English
explanation (what was expected, what was found) for an ``invalid_field``
message. Values are never echoed in full: item text is untrusted and may be
huge.
"""

from __future__ import annotations

import re
import unicodedata

__all__ = [
    "ANNOTATION_ID",
    "BATCH_ID",
    "ITEM_ID",
    "check_line_text",
    "check_multiline_text",
    "check_name",
    "preview",
]

ITEM_ID = re.compile(r"[a-z0-9-]{1,64}")
BATCH_ID = re.compile(r"[A-Za-z0-9._:-]{1,128}")
ANNOTATION_ID = re.compile(r"ann-[1-9][0-9]{0,17}")

# Cs (lone surrogates) cannot be written as UTF-8, so they are refused too.
_FORBIDDEN_LINE = frozenset({"Cc", "Cs", "Zl", "Zp"})
_ALLOWED_BREAKS = frozenset("\n\r\t")


def preview(value: object, limit: int = 40) -> str:
    """A short, safe rendering of an untrusted value for an error message.

    Strings are quoted and cut; numbers are shown unless huge; containers are
    named by type only (their repr could be huge or too deep to build).
    """
    if isinstance(value, str):
        text = value if len(value) <= limit else value[:limit] + f"… ({len(value)} code points)"
        return repr(text)
    if value is None or isinstance(value, bool):
        return {None: "null", True: "true", False: "false"}[value]
    if isinstance(value, int):
        return str(value) if -10**18 < value < 10**18 else "a huge integer"
    if isinstance(value, float):
        return repr(value)
    return f"an {type_name(value)}" if type_name(value) in ("array", "object") else type_name(value)


def _first_forbidden(text: str, allow_breaks: bool) -> str | None:
    if text.isprintable():
        return None  # printable text holds no Cc, Cs, Zl or Zp: skip the per-character look-up
    for char in text:
        if allow_breaks and char in _ALLOWED_BREAKS:
            continue
        if unicodedata.category(char) in _FORBIDDEN_LINE:
            return char
    return None


def check_line_text(value: object, low: int, high: int, what: str) -> str | None:
    """One line of text: ``low``–``high`` code points, some non-whitespace, no Cc/Zl/Zp."""
    if not isinstance(value, str):
        return f"{what} must be a string, got {type_name(value)}"
    if not low <= len(value) <= high:
        return f"{what} must be {low}–{high} code points, got {len(value)}"
    if value.isspace() or not value:
        return f"{what} must contain a non-whitespace character"
    bad = _first_forbidden(value, allow_breaks=False)
    if bad is not None:
        return f"{what} must not contain control or line-break characters (found U+{ord(bad):04X})"
    return None


def check_multiline_text(value: object, low: int, high: int, what: str, *, require_visible: bool) -> str | None:
    """Text where line breaks and tabs are allowed (quotes, annotation text)."""
    if not isinstance(value, str):
        return f"{what} must be a string, got {type_name(value)}"
    if not low <= len(value) <= high:
        return f"{what} must be {low}–{high} code points, got {len(value)}"
    if require_visible and (not value or value.isspace()):
        return f"{what} must contain a non-whitespace character"
    bad = _first_forbidden(value, allow_breaks=True)
    if bad is not None:
        return f"{what} must not contain control characters other than line breaks (found U+{ord(bad):04X})"
    return None


def check_name(value: object, what: str) -> str | None:
    """An actor or author: 1–64 printable characters."""
    if not isinstance(value, str):
        return f"{what} must be a string, got {type_name(value)}"
    if not 1 <= len(value) <= 64:
        return f"{what} must be 1–64 characters, got {len(value)}"
    if not value.isprintable() or value.isspace():
        return f"{what} must be printable characters, got {preview(value)}"
    return None


def type_name(value: object) -> str:
    """The JSON name of a value's type, for messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, (list, tuple)):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__
