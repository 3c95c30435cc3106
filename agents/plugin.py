"""Built-in editor backends as a plugin (contract §11): openai, anthropic, command, baseline.

Light to import: the backend classes load only pydantic settings; each SDK is
imported inside its backend when a call is made.
"""

from __future__ import annotations

from fold_core.hookspecs import hookimpl
from fold_core.plugin_api import AgentBackend
from fold_agents.baseline.editor import BaselineBackend
from fold_agents.command import CommandBackend
from fold_agents.llm.anthropic import AnthropicBackend
from fold_agents.llm.openai import OpenAIBackend

__all__ = ["fold_agent_types"]


@hookimpl
def fold_agent_types() -> list[type[AgentBackend]]:
    return [OpenAIBackend, AnthropicBackend, CommandBackend, BaselineBackend]
