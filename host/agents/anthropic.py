"""The ``anthropic`` editor backend: the Messages API through the official SDK (contract §9, §11.1).

Same conversation as every chat backend (``fold_host.agents.conversation``):
the skill as ``system``, the §9 input as the first user message, each earlier
attempt and its receipt after it. The Messages API has no JSON mode; the
answer is parsed robustly (code fences, leading prose). The SDK is imported
only when a call is made, and its own retries are off (the host owns retries).
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from fold_core.plugin_api import AgentBackend, AgentRequest, Reply
from fold_core.settings import AgentSettings, EnvName, env_value
from fold_host.agents.conversation import Clock, messages, read_answer, unavailable

__all__ = ["AnthropicBackend"]

PLACEHOLDER_KEY = "not-needed"


class AnthropicSettings(AgentSettings):
    """``[agent] type = "anthropic"``."""

    model: str = Field(min_length=1)
    base_url: str | None = Field(default=None, pattern=r"^https?://")
    api_key_env: EnvName | None = None
    max_tokens: int = Field(default=8192, ge=1)
    temperature: float | None = Field(default=None, ge=0, le=1)


class AnthropicBackend(AgentBackend):
    """One Messages call per attempt."""

    type_name = "anthropic"
    Settings = AnthropicSettings

    def __init__(self, settings: AnthropicSettings) -> None:
        super().__init__(settings)
        self._client = None

    def describe(self) -> str:
        where = self.settings.base_url or "api.anthropic.com"
        return f"anthropic ({self.settings.model} at {where})"

    def _connect(self):
        if self._client is None:
            import anthropic  # heavy: only when the editor is really called

            self._client = anthropic.Anthropic(
                base_url=self.settings.base_url,
                api_key=env_value(self.settings.api_key_env) or PLACEHOLDER_KEY,
                timeout=self.settings.timeout.total_seconds(),
                max_retries=0,
            )
        return self._client

    def propose(self, request: AgentRequest) -> Reply:
        client = self._connect()
        arguments: dict[str, Any] = {"model": self.settings.model, "max_tokens": self.settings.max_tokens,
                                     "system": request.skill, "messages": messages(request)}
        if self.settings.temperature is not None:
            arguments["temperature"] = self.settings.temperature
        clock = Clock()
        try:
            response = client.messages.create(**arguments)
        except Exception as error:  # the SDK's transport and status errors
            raise unavailable(error, clock, "anthropic") from None
        text = "".join(getattr(block, "text", "") for block in (response.content or [])
                       if getattr(block, "type", None) == "text")
        usage = getattr(response, "usage", None)
        return read_answer(
            text,
            input_tokens=getattr(usage, "input_tokens", None),
            output_tokens=getattr(usage, "output_tokens", None),
            latency_ms=clock.ms,
            model=getattr(response, "model", None) or self.settings.model,
        )
