"""Tool calling through the SDKs' own protocols: one attempt as a short exchange (contract §9).

The model gets the editor's tools (``fold_core.editor_tools``) with the
conversation. While it answers with tool calls, each is answered by the
attempt's ``ToolBox`` (bounded, never raising) and the conversation goes on;
its first answer without tool calls is the attempt's answer. Once the box's
bound is reached the next request says ``tool_choice: none``; a model that
still asks for tools ends the exchange (``overrun``): its answer is read like
any other and, holding no JSON object, goes back as a rejected attempt.

* OpenAI chat completions: ``tools=[{"type": "function", "function": spec}]``,
  the calls in ``message.tool_calls``, each answered by a ``role: tool``
  message with its ``tool_call_id``.
* Anthropic Messages: ``tools=[{"name", "description", "input_schema"}]``,
  ``tool_use`` content blocks, answered by one user message of
  ``tool_result`` blocks (``is_error`` for an error).

Token counts are summed over the exchange's requests, the cached prompt
tokens too. Anthropic's tool list carries a cache breakpoint
(``cache_control``) on its last tool.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from fold_core.editor_tools import ToolBox
from fold_core.plugin_api import Reply
from fold_agents.llm.conversation import Clock, read_answer

__all__ = ["EPHEMERAL", "Exchange", "anthropic_exchange", "anthropic_reply", "anthropic_usage", "names_tools",
           "openai_exchange", "openai_reply", "openai_usage", "refused_tools", "tool_box"]

REFUSED = {400, 404, 415, 422}  # what a server that takes no tools answers a request with them


@dataclass
class Exchange:
    """How an exchange ended: the last response's text, the summed usage, and whether tools overran."""

    response: Any
    text: str | None
    input_tokens: int | None = None
    output_tokens: int | None = None
    overrun: bool = False
    cached_tokens: int | None = None

    def count(self, tokens_in: Any, tokens_out: Any, tokens_cached: Any = None) -> None:
        if isinstance(tokens_in, int):
            self.input_tokens = (self.input_tokens or 0) + tokens_in
        if isinstance(tokens_out, int):
            self.output_tokens = (self.output_tokens or 0) + tokens_out
        if isinstance(tokens_cached, int):
            self.cached_tokens = (self.cached_tokens or 0) + tokens_cached


def tool_box(request, settings) -> ToolBox | None:
    """The attempt's bounded tools, or None when the request has none or the settings offer none."""
    limit = getattr(settings, "max_tool_calls", 0)
    if request.tools is None or not limit:
        return None
    return ToolBox(request.tools, max_calls=limit, max_bytes=settings.max_tool_bytes)


def names_tools(error: BaseException, request: dict) -> bool:
    """Whether a request with tools was refused because of them ("does not support tools", "tools … --jinja")."""
    return ("tools" in request and getattr(error, "status_code", None) in REFUSED
            and "tool" in str(getattr(error, "message", None) or error).lower())


def refused_tools(error: BaseException, box: ToolBox) -> bool:
    """Whether the first request of an exchange was refused because of its tools (no tool call made yet)."""
    return not box.calls and names_tools(error, {"tools": True})


def reply_of(exchange: Exchange, box: ToolBox, clock: Clock, model: str | None) -> Reply:
    """The attempt's ``Reply``: the last answer read as usual, with the tool calls made."""
    reply = read_answer(exchange.text, input_tokens=exchange.input_tokens, output_tokens=exchange.output_tokens,
                        cached_tokens=exchange.cached_tokens, latency_ms=clock.ms, model=getattr(exchange.response, "model", None) or model)
    reply.tools = list(box.calls)
    if exchange.overrun and reply.output is None:
        reply.error = (f"after {box.max_calls} tool calls (max_tool_calls) the answer asked for more tools instead "
                       "of giving the JSON object")
    return reply


def openai_reply(create: Callable[[dict], Any], arguments: dict, box: ToolBox, clock: Clock,
                 model: str | None) -> Reply:
    return reply_of(openai_exchange(create, arguments, box), box, clock, model)


def anthropic_reply(create: Callable[[dict], Any], arguments: dict, box: ToolBox, clock: Clock,
                    model: str | None) -> Reply:
    return reply_of(anthropic_exchange(create, arguments, box), box, clock, model)


def openai_exchange(create: Callable[[dict], Any], arguments: dict, box: ToolBox) -> Exchange:
    """Chat completions with function tools until an answer without tool calls."""
    conversation = list(arguments["messages"])
    tools = [{"type": "function", "function": spec} for spec in box.specs]
    exchange = Exchange(None, None)
    while True:
        closing = box.exhausted
        # The tools never change within a configuration: servers render them with the system message into the
        # prompt's prefix, which automatic prompt caching (OpenAI, DeepSeek, vLLM, Ollama) reuses.
        request = {**arguments, "messages": conversation, "tools": tools}
        if closing:
            request["tool_choice"] = "none"
        response = create(request)
        usage = getattr(response, "usage", None)
        exchange.count(*openai_usage(usage))
        choices = getattr(response, "choices", None) or []
        message = choices[0].message if choices else None
        calls = list(getattr(message, "tool_calls", None) or [])
        exchange.response, exchange.text = response, getattr(message, "content", None)
        if not calls:
            return exchange
        if closing:
            exchange.overrun = True
            for call in calls:
                box.call(_function(call)[0], _function(call)[1])  # counted and logged, never run
            return exchange
        conversation.append({"role": "assistant", "content": exchange.text,
                             "tool_calls": [{"id": call.id, "type": "function",
                                             "function": {"name": _function(call)[0],
                                                          "arguments": _function(call)[1] or "{}"}}
                                            for call in calls]})
        for call in calls:
            answer = box.call(*_function(call))
            conversation.append({"role": "tool", "tool_call_id": call.id, "content": answer.text})


def _function(call: Any) -> tuple[Any, Any]:
    """``(name, arguments text)`` of an OpenAI tool call (a non-function call has neither)."""
    function = getattr(call, "function", None)
    if function is None:
        return getattr(getattr(call, "custom", None), "name", None), None
    return function.name, function.arguments


def anthropic_exchange(create: Callable[[dict], Any], arguments: dict, box: ToolBox) -> Exchange:
    """Messages with tools until an answer without ``tool_use`` blocks."""
    conversation = list(arguments["messages"])
    tools: list[dict[str, Any]] = [{"name": spec["name"], "description": spec["description"],
                                    "input_schema": spec["parameters"]} for spec in box.specs]
    if tools:  # a cache breakpoint on the last tool caches the whole (unchanging) tool list
        tools[-1] = {**tools[-1], "cache_control": EPHEMERAL}
    exchange = Exchange(None, None)
    while True:
        closing = box.exhausted
        request = {**arguments, "messages": conversation, "tools": tools}
        if closing:
            request["tool_choice"] = {"type": "none"}
        response = create(request)
        usage = getattr(response, "usage", None)
        exchange.count(*anthropic_usage(usage))
        blocks = list(getattr(response, "content", None) or [])
        uses = [block for block in blocks if getattr(block, "type", None) == "tool_use"]
        exchange.response = response
        exchange.text = "".join(getattr(block, "text", "") for block in blocks
                                if getattr(block, "type", None) == "text")
        if not uses:
            return exchange
        if closing:
            exchange.overrun = True
            for block in uses:
                box.call(block.name, block.input)
            return exchange
        conversation.append({"role": "assistant", "content": [_block(block) for block in blocks if _kept(block)]})
        results = []
        for block in uses:
            answer = box.call(block.name, block.input)
            result = {"type": "tool_result", "tool_use_id": block.id, "content": answer.text}
            if answer.error:
                result["is_error"] = True
            results.append(result)
        conversation.append({"role": "user", "content": results})


def openai_usage(usage: Any) -> tuple[Any, Any, Any]:
    """``(prompt, completion, cached)`` tokens of a chat completion's usage (cached: ``prompt_tokens_details``)."""
    details = getattr(usage, "prompt_tokens_details", None)
    return (getattr(usage, "prompt_tokens", None), getattr(usage, "completion_tokens", None),
            getattr(details, "cached_tokens", None))


def anthropic_usage(usage: Any) -> tuple[Any, Any, Any]:
    """``(prompt, output, cached)`` tokens of a Messages usage.

    Anthropic's ``input_tokens`` leaves out the tokens read from and written to
    the cache; the prompt is all three, as OpenAI counts it, and the cached
    share is the two cache counts.
    """
    plain = getattr(usage, "input_tokens", None)
    cache = [getattr(usage, name, None) for name in ("cache_read_input_tokens", "cache_creation_input_tokens")]
    cached = sum(value for value in cache if isinstance(value, int)) if any(isinstance(v, int) for v in cache) else None
    prompt = plain + (cached or 0) if isinstance(plain, int) else plain
    return prompt, getattr(usage, "output_tokens", None), cached


EPHEMERAL = {"type": "ephemeral"}  # Anthropic's prompt-cache marker (the default lifetime)


def _kept(block: Any) -> bool:
    """The blocks an assistant turn is sent back with (the API refuses an empty text block)."""
    kind = getattr(block, "type", None)
    return kind == "tool_use" or (kind == "text" and bool(getattr(block, "text", "")))


def _block(block: Any) -> dict:
    if block.type == "text":
        return {"type": "text", "text": block.text}
    return {"type": "tool_use", "id": block.id, "name": block.name, "input": block.input}
