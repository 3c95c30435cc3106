"""The canonical observation (contract §10) and the small value types plugins see.

An adapter turns raw channel data into ``Observation`` values and returns them
in a ``Poll`` together with its new cursor and the health of the source. It
never decides importance: it keeps the source's own words, bounded, and says
what it could not read (``meta["unreadable"]``, a paraphrase, never an
invention).

Invariants kept here:

* ``id`` is ``"<source>:<native id>"`` and stable across polls and restarts;
* every time is an ISO 8601 instant with an offset (``at`` may be null when
  the source gives none — the adapter then says so in ``meta``);
* ``text`` is plain text of at most ``TEXT_LIMIT`` code points; longer text is
  cut by ``bound_text`` with a visible mark;
* a ``Poll`` is JSON-serialisable (the cursor round-trips through JSON).
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator

from fold_core.timefmt import parse_instant

__all__ = [
    "CHANNEL_PATTERN",
    "Health",
    "Observation",
    "Poll",
    "TEXT_LIMIT",
    "bound_text",
    "sender_key",
]

TEXT_LIMIT = 4000
TITLE_LIMIT = 1000
CHANNEL_PATTERN = r"^[a-z0-9][a-z0-9-]{0,63}$"
KEY_LIMIT = 320  # a longer sender or thread is not a key worth keeping
TRUNCATION_MARK = "…[truncated: {dropped} more characters]"


def bound_text(text: str | None, limit: int = TEXT_LIMIT) -> str:
    """``text`` cut to ``limit`` code points with a mark that says how much was dropped."""
    if not text:
        return ""
    if len(text) <= limit:
        return text
    mark = TRUNCATION_MARK.format(dropped=len(text) - limit)
    return text[:limit] + mark


def _instant(value: str | None) -> str | None:
    if value is not None and parse_instant(value) is None:
        raise ValueError(f"expected an ISO 8601 instant with an offset, found {value!r}")
    return value


Instant = Annotated[str, AfterValidator(_instant)]


class Observation(BaseModel):
    """One canonical observation (§10); ``to_event`` gives its §9 agent-input shape."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    id: str = Field(min_length=3, max_length=512, pattern=r"^[a-z0-9-]{1,32}:[^\r\n]+$")
    source: str = Field(pattern=r"^[a-z0-9-]{1,32}$")
    channel: str = Field(pattern=CHANNEL_PATTERN)
    sender: str | None = Field(default=None, alias="from", max_length=TITLE_LIMIT)
    at: Instant | None = None
    observed_at: Instant
    title: str | None = Field(default=None, max_length=TITLE_LIMIT)
    text: str = Field(default="", max_length=TEXT_LIMIT + len(TRUNCATION_MARK) + 12)
    url: str | None = Field(default=None, max_length=4096)
    thread: str | None = Field(default=None, max_length=1024)
    meta: dict[str, Any] = Field(default_factory=dict)
    feedback: dict[str, Any] | None = None
    reminder: dict[str, Any] | None = None

    @field_validator("id", "title", "sender", "thread", "url")
    @classmethod
    def _no_nul(cls, value: str | None) -> str | None:
        if value is not None and "\x00" in value:
            raise ValueError("must not contain NUL characters")
        return value

    @field_validator("meta")
    @classmethod
    def _small_json(cls, value: dict[str, Any]) -> dict[str, Any]:
        try:
            encoded = json.dumps(value, ensure_ascii=False)
        except (TypeError, ValueError) as error:
            raise ValueError(f"meta must be JSON ({error})") from None
        if len(encoded) > 16_000:
            raise ValueError(f"meta must stay small (≤ 16,000 characters as JSON), found {len(encoded)}")
        return value

    def to_event(self, text_limit: int = TEXT_LIMIT) -> dict[str, Any]:
        """The §9 ``events[]`` entry (optional keys only when set; text cut to ``text_limit``)."""
        event: dict[str, Any] = {
            "id": self.id,
            "source": self.source,
            "channel": self.channel,
            "from": self.sender,
            "at": self.at,
            "title": self.title,
            "text": bound_text(self.text, text_limit),
        }
        for key in ("url", "thread", "feedback", "reminder"):
            value = getattr(self, key)
            if value is not None:
                event[key] = value
        if self.meta:
            event["meta"] = self.meta
        return event

    def to_json(self) -> str:
        """Canonical JSON text (as stored in the host database)."""
        return self.model_dump_json(by_alias=True, exclude_none=False)

    @classmethod
    def from_json(cls, text: str) -> "Observation":
        return cls.model_validate_json(text)


class Health(BaseModel):
    """How one poll of a source went. A source failure is a value, never an exception."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    status: Literal["ok", "failed"]
    error_class: str | None = None  # e.g. "auth", "network", "timeout", "protocol", "gone", "parse"
    message: str | None = None
    retry_after: float | None = None  # seconds the source asked us to wait (Retry-After)
    min_interval: float | None = None  # seconds: the source's own minimum poll interval (TTL, Cache-Control)
    disabled: bool = False  # the source is gone for good (HTTP 410): stop polling, keep saying so
    notes: tuple[str, ...] = ()  # things worth logging that are not failures (re-baseline, redirect, bozo)

    @classmethod
    def ok(cls, *notes: str, min_interval: float | None = None) -> "Health":
        return cls(status="ok", notes=tuple(notes), min_interval=min_interval)

    @classmethod
    def failed(cls, error_class: str, message: str, **extra: Any) -> "Health":
        return cls(status="failed", error_class=error_class, message=message[:2000], **extra)


class Poll(BaseModel):
    """One poll's result: new observations, the cursor to save with them, and the source's health.

    The host stores the observations and the cursor in one transaction, so a
    crash between them can neither lose nor duplicate an observation. On a
    failed poll the cursor is usually the one passed in (nothing consumed).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    observations: list[Observation] = Field(default_factory=list)
    cursor: Any = None
    health: Health = Field(default_factory=Health.ok)

    @field_validator("cursor")
    @classmethod
    def _json_cursor(cls, value: Any) -> Any:
        try:
            if json.loads(json.dumps(value)) != value:
                raise ValueError("the cursor does not survive a JSON round trip")
        except (TypeError, ValueError) as error:
            raise ValueError(f"cursor must be plain JSON ({error})") from None
        return value


def sender_key(sender: Any) -> str | None:
    """The address in a ``from`` ("Li Na <li.na@example.com>" → "li.na@example.com"), lower-cased; the whole
    ``from`` when it names no address; None when empty."""
    if not isinstance(sender, str):
        return None
    text = sender.strip()
    if "<" in text and text.rstrip().endswith(">"):
        text = text.rsplit("<", 1)[1].rstrip(" >")
    text = " ".join(text.lower().split())
    return text[:KEY_LIMIT] or None
