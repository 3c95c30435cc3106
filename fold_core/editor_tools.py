"""The editor's tools: what an LLM editor may look up while it works on a window (contract §9).

The host hands a backend a read-only ``EditorTools`` (``AgentRequest.tools``);
nothing in it can write. A backend that speaks a tool-calling protocol wraps
it in a ``ToolBox`` per attempt, offers ``ToolBox.specs`` to the model and
answers each call with ``ToolBox.call(name, arguments)``:

* ``fold_get_item {"id"}`` — the item as in the state document (an active
  one with its children and annotations; a withdrawn or merged one from its
  stored record);
* ``fold_get_history {"item", "limit" ≤ 50}`` — the records that touched it,
  newest first;
* ``fold_get_observation {"id"}`` — one observation whole, as ``foldctl inbox
  show`` gives it;
* ``fold_search_observations {"query", "limit" ≤ 20}`` — full-text search
  over the observations' titles and texts;
* ``fold_list_not_active {"query"?, "limit" ≤ 50}`` — withdrawn and merged
  items, newest first.

The box is bounded: at most ``max_calls`` calls per attempt, each answer at
most ``max_bytes`` bytes (UTF-8 JSON; a list is shortened from its end and
says how many entries it left out, anything else is cut with a mark). A call
of an unknown tool, with arguments that are not what the tool takes, over the
bound, or one that fails, is answered with ``{"error": {"code", "message"}}``
and counts like any other: nothing a model asks can stop the cycle.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["EditorTools", "TOOLS", "ToolAnswer", "ToolBox", "fit"]


class EditorTools(ABC):
    """Read-only lookups the host offers an editor; every answer is a JSON-ready dict."""

    @abstractmethod
    def get_item(self, item_id: str) -> dict:
        """``{"found": true, "status", "item"}`` or ``{"found": false, "item": null}``."""

    @abstractmethod
    def get_history(self, item_id: str, limit: int) -> dict:
        """``{"item", "total", "records": [...]}``: the records that touched the item, newest first."""

    @abstractmethod
    def get_observation(self, observation_id: str) -> dict:
        """As ``foldctl inbox show``: ``{"found", "observation", "status"?, "dispositions"?}``."""

    @abstractmethod
    def search_observations(self, query: str, limit: int) -> dict:
        """``{"query", "hits": [{"id", "source", "at", "title", "snippet"}]}``."""

    @abstractmethod
    def list_not_active(self, query: str | None, limit: int) -> dict:
        """``{"total", "entries": [§8 not_active entries]}``, newest first, filtered by ``query``."""


_ID = {"type": "string", "minLength": 1, "maxLength": 512}


def _limit(maximum: int, default: int) -> dict:
    return {"type": "integer", "minimum": 1, "maximum": maximum, "default": default}


def _object(properties: dict, required: tuple[str, ...] = ()) -> dict:
    return {"type": "object", "properties": properties, "required": list(required), "additionalProperties": False}


@dataclass(frozen=True)
class Tool:
    """One tool: its name, what it is for (the model reads it), its parameters and the lookup it calls."""

    name: str
    description: str
    parameters: dict
    call: Any  # (EditorTools, arguments) -> dict

    def spec(self) -> dict:
        return {"name": self.name, "description": self.description, "parameters": self.parameters}


TOOLS: tuple[Tool, ...] = (
    Tool("fold_get_item",
         "One item by id, as in the state document: an active item with its children layer and annotations; "
         "a withdrawn or merged item with its stored fields, status and reason (restore a withdrawn one with "
         "relation supersedes:<id>).",
         _object({"id": _ID}, ("id",)),
         lambda tools, a: tools.get_item(a["id"])),
    Tool("fold_get_history",
         "The records that touched an item, newest first: when, by whom, what each did to it (created, "
         "updated, withdrawn, merged, restored) and its title, summary, weight, kind and reason then; "
         "annotations saved on it.",
         _object({"item": _ID, "limit": _limit(50, 10)}, ("item",)),
         lambda tools, a: tools.get_history(a["item"], a.get("limit", 10))),
    Tool("fold_get_observation",
         "One observation whole (an event of this round or of an earlier one): title, text, url, thread, "
         "meta, its status and every disposition it was given. Follows a source ref event:<id> back to its "
         "input (give the id without 'event:').",
         _object({"id": _ID}, ("id",)),
         lambda tools, a: tools.get_observation(a["id"].removeprefix("event:"))),
    Tool("fold_search_observations",
         "Search the titles and texts of all observations received so far (this round's and earlier ones). "
         "Words separated by spaces must all occur (as substrings, any language, case-insensitive). Hits "
         "give id, source, at, title and a snippet; open one with fold_get_observation.",
         _object({"query": {"type": "string", "minLength": 1, "maxLength": 200}, "limit": _limit(20, 10)},
                 ("query",)),
         lambda tools, a: tools.search_observations(a["query"], a.get("limit", 10))),
    Tool("fold_list_not_active",
         "Withdrawn and merged items, most recently changed first; with query, only those whose id, title "
         "or reason contains it. The state lists only the most recent ones: look here before creating an "
         "item that may have existed.",
         _object({"query": {"type": "string", "maxLength": 200}, "limit": _limit(50, 20)}),
         lambda tools, a: tools.list_not_active(a.get("query") or None, a.get("limit", 20))),
)
_BY_NAME = {tool.name: tool for tool in TOOLS}
_LISTS = ("records", "hits", "entries")


def _dumps(document: Any) -> str:
    return json.dumps(document, ensure_ascii=False, separators=(",", ":"))


def fit(document: Mapping[str, Any], limit: int) -> str:
    """``document`` as JSON text of at most ``limit`` UTF-8 bytes: a list shortened, else the text cut with a mark."""
    text = _dumps(document)
    if len(text.encode("utf-8")) <= limit:
        return text
    shortened = dict(document)
    for key in _LISTS:
        entries = shortened.get(key)
        if not isinstance(entries, list) or not entries:
            continue
        entries = list(entries)
        while entries:
            entries.pop()
            shortened[key] = entries
            shortened["cut"] = {"omitted": len(document[key]) - len(entries),
                                "why": f"the answer was over max_tool_bytes ({limit} bytes): ask for fewer"}
            text = _dumps(shortened)
            if len(text.encode("utf-8")) <= limit:
                return text
    encoded = text.encode("utf-8")
    mark = f"…[cut: {len(encoded)} bytes, max_tool_bytes is {limit}]"
    keep = max(0, limit - len(mark.encode("utf-8")))
    return encoded[:keep].decode("utf-8", "ignore") + mark


@dataclass(frozen=True)
class ToolAnswer:
    """The text that goes back to the model, and whether it is an error."""

    text: str
    error: bool = False


@dataclass
class ToolBox:
    """One attempt's tools: bounded calls and answers, and the record of what was called."""

    tools: EditorTools
    max_calls: int = 8
    max_bytes: int = 16_384
    calls: list[dict] = field(default_factory=list)

    @property
    def specs(self) -> list[dict]:
        """``[{"name", "description", "parameters"}]`` (JSON Schema parameters)."""
        return [tool.spec() for tool in TOOLS]

    @property
    def exhausted(self) -> bool:
        """Whether the bound is reached (the next request should ask for the answer, not more calls)."""
        return len(self.calls) >= self.max_calls

    def call(self, name: Any, arguments: Any) -> ToolAnswer:
        """Answer one call (``arguments``: JSON text or an object); never raises."""
        record: dict[str, Any] = {"name": name if isinstance(name, str) else repr(name)[:80]}
        self.calls.append(record)
        parsed, problem = _arguments(arguments)
        record["arguments"] = parsed if parsed is not None else (str(arguments)[:500] if arguments else None)
        if len(self.calls) > self.max_calls:
            return self._error(record, "too_many_tool_calls", f"the limit of {self.max_calls} tool calls in one "
                               "answer is reached: answer now with the JSON object")
        tool = _BY_NAME.get(name) if isinstance(name, str) else None
        if tool is None:
            return self._error(record, "unknown_tool", f"no tool {record['name']!r}; the tools are "
                               f"{', '.join(_BY_NAME)}")
        problem = problem if parsed is None else _check(parsed, tool.parameters)
        if problem is not None or parsed is None:  # (no arguments parsed: a problem says why)
            return self._error(record, "invalid_arguments", f"{tool.name}: {problem}")
        try:
            answer = tool.call(self.tools, parsed)
        except Exception as error:  # a lookup that fails is an answer to the model, never a crash
            return self._error(record, "tool_failed", f"{tool.name} failed: {type(error).__name__}: {error}"[:500])
        text = fit(answer, self.max_bytes)
        record["bytes"] = len(text.encode("utf-8"))
        return ToolAnswer(text)

    def _error(self, record: dict, code: str, message: str) -> ToolAnswer:
        record["error"] = code
        text = _dumps({"error": {"code": code, "message": message}})
        record["bytes"] = len(text.encode("utf-8"))
        return ToolAnswer(text, error=True)


def _arguments(arguments: Any) -> tuple[dict | None, str | None]:
    if arguments is None or arguments == "":
        return {}, None
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except ValueError:
            return None, "the arguments are not JSON (expected one JSON object)"
    if not isinstance(arguments, Mapping):
        return None, f"the arguments must be a JSON object, found {type(arguments).__name__}"
    return dict(arguments), None


def _check(arguments: dict, schema: dict) -> str | None:
    """What is wrong with ``arguments`` for a tool's (flat) parameter schema, or None."""
    properties = schema["properties"]
    for key in arguments:
        if key not in properties:
            return f"unknown argument {key!r}; it takes {', '.join(properties) or 'none'}"
    for key in schema["required"]:
        if key not in arguments:
            return f"the argument {key!r} is required"
    for key, value in arguments.items():
        rule = properties[key]
        if rule["type"] == "integer":
            if isinstance(value, bool) or not isinstance(value, int):
                return f"{key} must be an integer, found {value!r}"[:200]
            if not rule["minimum"] <= value <= rule["maximum"]:
                return f"{key} must be between {rule['minimum']} and {rule['maximum']}, found {value}"
        elif rule["type"] == "string":
            if not isinstance(value, str):
                return f"{key} must be a string, found {value!r}"[:200]
            if not rule.get("minLength", 0) <= len(value) <= rule["maxLength"]:
                return f"{key} must be {rule.get('minLength', 0)}–{rule['maxLength']} characters"
    return None
