"""The ``anthropic`` editor backend: the Messages API through the official SDK (contract §9, §11.1).

Same conversation as every chat backend (``fold_agents.llm.conversation``):
the skill as ``system``, the §9 input as the first user message, each earlier
attempt and its receipt after it. The skill block (and the tool list) carry
a cache breakpoint (``cache_control: ephemeral``): every call after the first
within the cache's lifetime reads them from the prompt cache. The Messages API has no JSON mode; the
answer is parsed robustly (code fences, leading prose). The SDK is imported
only when a call is made, and its own retries are off (the host owns retries).
With ``request.tools`` the model may call the editor's tools (``tool_loop``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import Field

from fold_core.plugin_api import AgentRequest, AgentUnavailable, Reply
from fold_agents.llm.conversation import Clock, SdkBackend, SdkSettings, messages, reply_from, unavailable
from fold_agents.llm.tool_loop import EPHEMERAL, anthropic_reply, anthropic_usage, tool_box

__all__ = ["AnthropicBackend"]


class AnthropicSettings(SdkSettings):
    """``[agent] type = "anthropic"``."""

    max_tokens: int = Field(default=8192, ge=1)
    temperature: float | None = Field(default=None, ge=0, le=1)


class AnthropicBackend(SdkBackend):
    """One Messages call per attempt."""

    type_name = "anthropic"
    Settings = AnthropicSettings

    default_host = "api.anthropic.com"
    settings: AnthropicSettings

    @staticmethod
    def sdk_client() -> Callable[..., Any]:
        import anthropic  # heavy: only when the editor is really called

        return anthropic.Anthropic

    def propose(self, request: AgentRequest) -> Reply:
        client = self._connect()
        arguments: dict[str, Any] = {"model": self.settings.model, "max_tokens": self.settings.max_tokens,
                                     "system": [{"type": "text", "text": request.skill, "cache_control": EPHEMERAL}],
                                     "messages": messages(request)}
        if self.settings.temperature is not None:
            arguments["temperature"] = self.settings.temperature
        clock, deadline = Clock(), self.deadline()
        box = tool_box(request, self.settings)
        try:
            if box is not None:
                return anthropic_reply(lambda call: self.call(lambda: client.messages.create(**call), deadline), arguments,
                                       box, clock, self.settings.model)
            response = self.call(lambda: client.messages.create(**arguments), deadline)
        except AgentUnavailable:
            raise
        except Exception as error:  # the SDK's transport and status errors
            raise unavailable(error, clock, "anthropic") from None
        text = "".join(getattr(block, "text", "") for block in (response.content or [])
                       if getattr(block, "type", None) == "text")
        return reply_from(text, anthropic_usage(getattr(response, "usage", None)), clock, response, self.settings.model)
