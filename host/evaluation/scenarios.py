"""Scenario files of the skill evaluation (contract §15): loading and validation.

A scenario is one agent call (plus its corrections) on a fixed starting
point. ``load_scenarios(dir)`` reads every ``*.json`` in a directory, in name
order, and validates each with pydantic; a malformed file is a
``ConfigError`` (exit 2) naming the file and the field. Pairs are checked
too: a ``pair.with`` must name a scenario of the same run; ``context`` and
``missing-context`` pairs say how the weight should move (``expect_change``:
up, down or same); an ``old-version`` pair names the ``items`` that must keep
their weight and kind.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from fold_core.errors import ConfigError
from fold_core.timefmt import parse_instant

__all__ = ["Scenario", "load_scenarios"]

WEIGHTS = ("trace", "low", "normal", "high", "critical")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


def _instant(value: str) -> str:
    if parse_instant(value) is None:
        raise ValueError(f"expected an ISO 8601 instant with an offset, found {value!r}")
    return value


def _regex(value: str) -> str:
    try:
        re.compile(value)
    except re.error as error:
        raise ValueError(f"not a valid regular expression ({error})") from None
    return value


class SetupStep(_Strict):
    now: str
    batch: dict[str, Any]
    _now = field_validator("now")(_instant)


class AnnotationStep(_Strict):
    now: str
    item: str
    text: str
    author: str = "user"
    _now = field_validator("now")(_instant)


class Surface(_Strict):
    match: str
    min_weight: Literal["trace", "low", "normal", "high", "critical"] = "trace"
    kind: Literal["needs-you", "done", "in-progress", "fyi"] | None = None
    due: bool | None = None  # true: the item has a due_at; false: it has none
    seen: bool = False  # true: the weight compared is the lightest of the item's and its ancestors' (as it is seen)
    _match = field_validator("match")(_regex)


class AtMost(_Strict):
    match: str
    max_weight: Literal["trace", "low", "normal", "high", "critical"]
    _match = field_validator("match")(_regex)


class Absent(_Strict):
    match: str
    _match = field_validator("match")(_regex)


class Mentions(_Strict):
    match: str  # an active item whose title or summary matches this …
    states: str  # … states this (a regular expression) in its title or summary
    _match = field_validator("match", "states")(_regex)


class FrameExpect(_Strict):
    """The decision frame (§3.6) of the active item whose title or summary matches ``match``."""

    match: str
    question: str | None = None  # the frame's question matches this: the question was kept
    options: list[str] | None = None  # exactly these option ids, in any order: the options were kept
    fallback: str | bool | None = None  # a regex its fallback summary matches; false: no fallback (none invented)
    evidence: list[Literal["complete", "partial", "missing", "conflicting"]] | None = None
    cleared: bool = False  # true: the item carries no frame (moved on after the answer)
    _match = field_validator("match")(_regex)

    @field_validator("question")
    @classmethod
    def _question(cls, value: str | None) -> str | None:
        return value if value is None else _regex(value)

    @field_validator("fallback")
    @classmethod
    def _fallback(cls, value: str | bool | None) -> str | bool | None:
        if value is True:
            raise ValueError("give a regular expression the fallback's summary matches, or false for none")
        return _regex(value) if isinstance(value, str) else value


class Expect(_Strict):
    outcome: Literal["committed", "checked", "acknowledged", "failed"] | None = None
    surface: list[Surface] = Field(default_factory=list)
    absent: list[Absent] = Field(default_factory=list)
    at_most: list[AtMost] = Field(default_factory=list)
    mentions: list[Mentions] = Field(default_factory=list)
    not_prefix: bool = False  # no active item's summary is the first characters of an observation it cites
    frames: list[FrameExpect] = Field(default_factory=list)
    forbidden: list[str] = Field(default_factory=list)
    dispositions: dict[str, list[Literal["noise", "duplicate", "used", "deferred"]]] = Field(default_factory=dict)
    acknowledge_all: bool = False
    restored: list[str] = Field(default_factory=list)
    max_attempts: int | None = Field(default=None, ge=1, le=10)


class Pair(_Strict):
    with_: str = Field(alias="with")
    kind: Literal["paraphrase", "context", "missing-context", "old-version"]
    expect_change: Literal["up", "down", "same"] | None = None
    items: list[str] = Field(default_factory=list)  # the items whose weight (and kind) the pair compares


class Signal(_Strict):
    type: Literal["events", "review"] = "events"
    reason: str | None = None
    coverage: list[dict[str, Any]] = Field(default_factory=list)


class Event(_Strict):
    id: str = Field(pattern=r"^[A-Za-z0-9._:-]{1,128}$")
    channel: str
    source: str | None = None
    sender: str | None = Field(default=None, alias="from")
    at: str | None = None
    title: str | None = None
    text: str = ""
    url: str | None = None
    thread: str | None = None
    meta: dict[str, Any] | None = None
    feedback: dict[str, Any] | None = None
    reminder: dict[str, Any] | None = None

    def to_event(self) -> dict[str, Any]:
        event = {"id": self.id, "source": self.source or self.channel, "channel": self.channel,
                 "from": self.sender, "at": self.at, "title": self.title, "text": self.text}
        for key in ("url", "thread", "meta", "feedback", "reminder"):
            value = getattr(self, key)
            if value is not None:
                event[key] = value
        return event


class LearnedEntry(_Strict):
    """One ``user.learned`` entry (contract §9): a sender or a thread and the user's feedback on it."""

    sender: str | None = None
    thread: str | None = None
    snoozed: int = Field(default=0, ge=0)
    acknowledged: int = Field(default=0, ge=0)
    acted: int = Field(default=0, ge=0)
    last: str | None = None

    @model_validator(mode="after")
    def _one_key(self) -> "LearnedEntry":
        if (self.sender is None) == (self.thread is None):
            raise ValueError("name exactly one of sender and thread")
        return self


class User(_Strict):
    background: str = ""
    purpose: str = ""
    feedback_policy: str = ""
    learned: list[LearnedEntry] = Field(default_factory=list, max_length=50)

    def document(self) -> dict[str, Any]:
        """The §9 ``user`` object (``learned`` only when it has entries)."""
        user: dict[str, Any] = {"background": self.background, "purpose": self.purpose,
                                "feedback_policy": self.feedback_policy}
        if self.learned:
            user["learned"] = [e.model_dump(exclude_none=True) for e in self.learned]
        return user


class Scenario(_Strict):
    name: str = Field(pattern=r"^[a-z0-9][a-z0-9-]{0,63}$")
    about: str = ""
    lang: Literal["zh", "en"] = "zh"
    budget: int = Field(default=64, ge=8, le=4096)
    user: User = Field(default_factory=User)
    setup: list[SetupStep] = Field(default_factory=list)
    annotations: list[AnnotationStep] = Field(default_factory=list)
    now: str
    signal: Signal = Field(default_factory=Signal)
    events: list[Event] = Field(default_factory=list)
    expect: Expect = Field(default_factory=Expect)
    pair: Pair | None = None
    _now = field_validator("now")(_instant)


def load_scenarios(directory: str | Path) -> list[tuple[Path, Scenario]]:
    """Every scenario in ``directory`` (name order); ``ConfigError`` names file and field."""
    folder = Path(directory)
    if not folder.is_dir():
        raise ConfigError(f"{directory}: not a directory of scenarios", file=str(directory))
    loaded: list[tuple[Path, Scenario]] = []
    for path in sorted(folder.glob("*.json")):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError) as error:
            raise ConfigError(f"{path}: not a JSON scenario ({error})", file=str(path)) from None
        try:
            loaded.append((path, Scenario.model_validate(data)))
        except ValidationError as error:
            first = error.errors()[0]
            field = ".".join(str(part) for part in first["loc"]) or "(scenario)"
            raise ConfigError(f"{path}: field {field!r}: {first['msg']}", file=str(path), field=field) from None
    if not loaded:
        raise ConfigError(f"{directory}: no *.json scenarios found", file=str(directory))
    names = {scenario.name: path for path, scenario in loaded}
    if len(names) != len(loaded):
        seen: set[str] = set()
        for path, scenario in loaded:
            if scenario.name in seen:
                raise ConfigError(f"{path}: field 'name': {scenario.name!r} is used by another scenario",
                                  file=str(path), field="name")
            seen.add(scenario.name)
    for path, scenario in loaded:
        if scenario.pair is not None and scenario.pair.with_ not in names:
            raise ConfigError(f"{path}: field 'pair.with': no scenario named {scenario.pair.with_!r} in {directory}",
                              file=str(path), field="pair.with")
        pair = scenario.pair
        if pair is not None and pair.kind in ("context", "missing-context") and pair.expect_change is None:
            raise ConfigError(f"{path}: field 'pair.expect_change': a {pair.kind} pair needs \"up\", \"down\" or "
                              "\"same\"", file=str(path), field="pair.expect_change")
        if pair is not None and pair.kind == "old-version" and not pair.items:
            raise ConfigError(f"{path}: field 'pair.items': an old-version pair names the items that must keep "
                              "their weight and kind", file=str(path), field="pair.items")
    return loaded
