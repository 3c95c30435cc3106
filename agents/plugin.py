"""Built-in editor backends as a plugin (contract §11): openai, anthropic, llm, command, baseline.

The host calls the hook whenever it loads a configuration, so the backend
modules are imported here at the top; what is heavy stays inside them (each
SDK is imported when its backend is first called).
"""

from __future__ import annotations

from fold_core.hookspecs import hookimpl
from fold_core.plugin_api import AgentBackend
from fold_agents.baseline.editor import BaselineBackend
from fold_agents.command import CommandBackend
from fold_agents.llm.anthropic import AnthropicBackend
from fold_agents.llm.llm_library import LlmBackend
from fold_agents.llm.openai import OpenAIBackend

__all__ = ["fold_agent_types"]


@hookimpl
def fold_agent_types() -> list[type[AgentBackend]]:
    return [OpenAIBackend, AnthropicBackend, LlmBackend, CommandBackend, BaselineBackend]
