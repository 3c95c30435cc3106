"""The ``openai`` editor backend: any OpenAI-compatible chat-completions endpoint (contract §9, §11.1).

OpenAI, Ollama, vLLM, llama.cpp server, DeepSeek, Qwen/DashScope, Moonshot … through
the official ``openai`` SDK (imported only when a call is made). JSON output is
asked for with ``response_format: json_object``; a server that refuses it
(HTTP 400/404/415/422 naming the request) is asked again without it, and the
backend remembers that for its next calls. The answer is parsed robustly either
way (code fences, leading prose). The SDK's own retries are off: the host owns
retries. A local server needs no key: without ``api_key_env`` a placeholder is sent.
With ``request.tools`` the model may call the editor's tools (``tool_loop``); a
server that refuses a request with tools is asked without them from then on.
The system message (the skill) and the tool list are the same bytes on every
call of one skill and configuration and come before everything that varies,
so automatic prefix caching (OpenAI, DeepSeek, vLLM, Ollama) can reuse them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import Field

from fold_core.plugin_api import AgentRequest, AgentUnavailable, Reply
from fold_agents.llm.conversation import Clock, SdkBackend, SdkSettings, messages, reply_from, unavailable
from fold_agents.llm.tool_loop import names_tools, openai_reply, openai_usage, refused_tools, tool_box

__all__ = ["OpenAIBackend"]

_REFUSED_FORMAT = {400, 404, 415, 422}


class OpenAISettings(SdkSettings):
    """``[agent] type = "openai"``."""

    json_mode: bool = True  # ask for response_format json_object (falls back when refused)
    temperature: float | None = Field(default=None, ge=0, le=2)
    max_tokens: int | None = Field(default=None, ge=1)


class OpenAIBackend(SdkBackend):
    """One chat completion per attempt: system = skill, user = §9 input, then the corrections."""

    type_name = "openai"
    Settings = OpenAISettings

    default_host = "api.openai.com"
    settings: OpenAISettings

    def __init__(self, settings: OpenAISettings) -> None:
        super().__init__(settings)
        self._json_mode = settings.json_mode
        self._tools = True

    @staticmethod
    def sdk_client() -> Callable[..., Any]:
        import openai  # heavy: only when the editor is really called

        return openai.OpenAI

    def propose(self, request: AgentRequest) -> Reply:
        client = self._connect()
        conversation = [{"role": "system", "content": request.skill}, *messages(request)]
        arguments: dict[str, Any] = {"model": self.settings.model, "messages": conversation}
        if self.settings.temperature is not None:
            arguments["temperature"] = self.settings.temperature
        if self.settings.max_tokens is not None:
            arguments["max_tokens"] = self.settings.max_tokens
        clock, deadline = Clock(), self.deadline()
        box = tool_box(request, self.settings) if self._tools else None
        try:
            if box is not None:
                try:
                    return openai_reply(lambda call: self.call(lambda: self._create(client, call), deadline), arguments,
                                        box, clock, self.settings.model)
                except Exception as error:
                    if not refused_tools(error, box):
                        raise
                    self._tools = False  # this server takes no tools: ask plainly from now on
            response = self.call(lambda: self._create(client, arguments), deadline)
        except AgentUnavailable:
            raise
        except Exception as error:  # the SDK's transport and status errors
            raise unavailable(error, clock, "openai") from None
        choices = getattr(response, "choices", None) or []
        text = choices[0].message.content if choices and choices[0].message else None
        return reply_from(text, openai_usage(getattr(response, "usage", None)), clock, response, self.settings.model)

    def _create(self, client, arguments: dict[str, Any]):
        if not self._json_mode:
            return client.chat.completions.create(**arguments)
        try:
            return client.chat.completions.create(**arguments, response_format={"type": "json_object"})
        except Exception as error:
            if getattr(error, "status_code", None) not in _REFUSED_FORMAT or names_tools(error, arguments):
                raise
        self._json_mode = False  # this server does not take response_format: ask plainly from now on
        return client.chat.completions.create(**arguments)
