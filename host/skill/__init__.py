"""The editor's skill: its instructions and the JSON Schema of its answer (contract §9, §11.2).

``load_skill(lang)`` returns the instructions shipped as package data
(``zh.md``, the primary text, and ``en.md``), written from the design of the editor's skill; the LLM
backends send them as the system text with the §9 input, ``foldctl skill``
prints them. ``output_schema()`` is the JSON Schema of the §9 output, built
from ``fold_core.models`` (the batch wire shapes) plus the dispositions, for
servers that accept a schema (``AgentRequest.output_schema``).
"""

from __future__ import annotations

from functools import cache
from importlib import resources
from typing import Any

from fold_host.skill.output import AgentOutput

__all__ = ["LANGUAGES", "load_skill", "output_schema"]

LANGUAGES = ("zh", "en")


@cache
def load_skill(lang: str = "zh") -> str:
    """The skill text in ``lang`` (``zh`` or ``en``); ValueError for another language."""
    if lang not in LANGUAGES:
        raise ValueError(f"no skill text in {lang!r}: expected one of {', '.join(LANGUAGES)}")
    return resources.files(__name__).joinpath(f"{lang}.md").read_text(encoding="utf-8")


def output_schema() -> dict[str, Any]:
    """JSON Schema of the §9 agent output (a fresh copy each call)."""
    return AgentOutput.model_json_schema()
