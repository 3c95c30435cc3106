"""The settings of the ``push`` consumer type (docs/configuration.md, "push"): who is notified of what, when,
and which changes interrupt at once.
"""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Literal

from pydantic import Field, field_validator

from fold_core.settings import ConsumerSettings, Duration, EnvName

__all__ = ["INTERRUPTS", "Interrupt", "Kind", "PushSettings", "Weight"]

_QUIET = re.compile(r"^([01]\d|2[0-3]):([0-5]\d)-([01]\d|2[0-3]):([0-5]\d)$")
_CLOCK = re.compile(r"^([01]\d|2[0-3]):([0-5]\d)$")
Weight = Literal["critical", "high", "normal", "low", "trace"]
Kind = Literal["needs-you", "done", "in-progress", "fyi"]
Interrupt = Literal["decision", "critical", "deadline", "source"]
INTERRUPTS: tuple[Interrupt, ...] = ("decision", "critical", "deadline", "source")


class PushSettings(ConsumerSettings):
    """``urls_env`` names the variable with the Apprise URLs (whitespace-separated)."""

    urls_env: EnvName
    min_weight: Weight | None = "high"
    kinds: list[Kind] = Field(default_factory=list)
    quiet_hours: str | None = None
    timeout: float = Field(default=10.0, gt=0, le=120)
    facts_from: Weight = "critical"
    remind_before: Duration = Field(default=timedelta(hours=24))
    alert_after: Duration = Field(default=timedelta(hours=6))
    digest_at: list[str] | None = None
    interrupt_for: list[Interrupt] = Field(default_factory=lambda: list(INTERRUPTS))

    @field_validator("quiet_hours")
    @classmethod
    def _quiet(cls, value: str | None) -> str | None:
        if value is None:
            return None
        match = _QUIET.match(value)
        if match is None or match.group(1, 2) == match.group(3, 4):
            raise ValueError(f'expected "HH:MM-HH:MM" (24 h, start ≠ end, e.g. "22:00-07:30"), found {value!r}')
        return value

    @field_validator("digest_at")
    @classmethod
    def _digest_at(cls, value: list[str] | None) -> list[str] | None:
        if value is None:
            return None
        if not value:
            raise ValueError('expected one or more local times like ["08:00", "18:00"], found []')
        for text in value:
            if not _CLOCK.match(text):
                raise ValueError(f'expected local times "HH:MM" (24 h, e.g. "08:00"), found {text!r}')
        return sorted(set(value))
