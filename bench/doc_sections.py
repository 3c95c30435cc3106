"""A section of ``docs/benchmarks.md`` owned by one benchmark script.

``run_all.py`` regenerates the document and carries over every section
between ``<!-- NAME benchmark: begin -->`` and ``<!-- NAME benchmark: end -->``
(its ``KEPT_SECTION``). ``replace_section(path, name, body)`` writes such a
section, replacing the old one or appending it; ``replace_block`` does the
same for a block that carries its own markers.
"""

from __future__ import annotations

import re

__all__ = ["replace_block", "replace_section"]


def replace_section(path: str, name: str, body: str) -> None:
    """Write ``body`` as the section ``name`` of the Markdown document at ``path``."""
    begin, end = f"<!-- {name} benchmark: begin -->", f"<!-- {name} benchmark: end -->"
    replace_block(path, begin, end, f"{begin}\n{body.rstrip()}\n{end}\n")


def replace_block(path: str, begin: str, end: str, block: str) -> None:
    """Put ``block`` (its own ``begin`` … ``end`` markers included) in place of the marked one, or append it."""
    block = block.rstrip("\n") + "\n"
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except FileNotFoundError:
        text = "# Benchmarks\n"
    pattern = re.compile(re.escape(begin) + r".*?" + re.escape(end) + r"\n?", re.S)
    text = pattern.sub(lambda _: block, text) if pattern.search(text) else text.rstrip("\n") + "\n\n" + block
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text)
