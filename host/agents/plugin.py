"""Built-in editor backends as a plugin (contract §11): openai, anthropic, command, baseline.

Light to import: the backend classes load only pydantic settings; each SDK is
imported inside its backend when a call is made.
"""

from __future__ import annotations

from fold_core import hookimpl

__all__ = ["fold_agent_types"]


@hookimpl
def fold_agent_types():
    from fold_host.agents.anthropic import AnthropicBackend
    from fold_host.agents.baseline import BaselineBackend
    from fold_host.agents.command import CommandBackend
    from fold_host.agents.openai import OpenAIBackend

    return [OpenAIBackend, AnthropicBackend, CommandBackend, BaselineBackend]
