"""Untrusted one-line strings bounded for an observation (contract §10: ids, titles, senders ≤ their limits).

``cut_line(text, limit)`` is ``mailtext.clean_line`` (controls and line
breaks become single spaces) cut to ``limit`` code points, a cut one ending
with ``…``. Only the first part of a huge string is cleaned, so a 1 MB
one-line title costs no more than its first few hundred characters.
"""

from __future__ import annotations

from fold_adapters.mailtext import clean_line

__all__ = ["cut_line"]


def cut_line(text: str | None, limit: int) -> str:
    """``clean_line(text)`` of at most ``limit`` code points; a cut one ends with ``…``."""
    if not text:
        return ""
    head = text[: limit * 2 + 64]
    line = clean_line(head)
    if len(line) <= limit and len(head) == len(text):
        return line
    return line[: limit - 1].rstrip() + "…"
