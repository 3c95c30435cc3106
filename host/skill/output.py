"""Typed §9 agent output: dispositions plus a batch without host-owned keys (contract §3, §9).

The batch reuses ``fold_core.models.Declaration`` (the kernel's own rules for
declarations); ``batch_id`` and ``base_revision`` are left out because the host
chooses them. The host still checks dispositions against the input itself
(``disposition_missing`` …): a schema cannot know the events.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from fold_core.models import Declaration, ItemId

__all__ = ["DISPOSITIONS", "AgentBatch", "AgentOutput", "Disposition"]

DISPOSITIONS = ("noise", "duplicate", "used", "deferred")


class _Wire(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Disposition(_Wire):
    """What the editor did with one input event."""

    event: str = Field(min_length=1)
    disposition: Literal[DISPOSITIONS]  # type: ignore[valid-type]
    why: str = Field(min_length=1)
    related: list[ItemId] = Field(default_factory=list)


class AgentBatch(_Wire):
    """The batch part of the answer: declarations and acknowledged annotation ids."""

    declarations: list[Declaration] = Field(default_factory=list)
    acknowledges: list[str] = Field(default_factory=list)


class AgentOutput(_Wire):
    """The whole §9 answer."""

    dispositions: list[Disposition]
    batch: AgentBatch
