"""A scripted local LLM server speaking the OpenAI and Anthropic wire shapes.

One ``ThreadingHTTPServer`` on 127.0.0.1 (port 0) in a thread answers

* ``POST /v1/chat/completions`` in the OpenAI chat-completions shape, and
* ``POST /v1/messages`` in the Anthropic Messages shape,

from a list of scripted replies, in order, and records every request. Drive it
through the real SDKs (see RECIPES.md)::

    with LLMServer([text('{"dispositions": [], "batch": {}}'), status(500)]) as server:
        client = openai.OpenAI(base_url=server.openai_url, api_key="unused", max_retries=0)
        ...
        assert server.requests[0].body["messages"][0]["role"] == "system"

A reply is one of

* ``text(content, input_tokens=None, output_tokens=None, cached_tokens=None,
  cache_written=None)`` — a normal answer (token counts default to a
  deterministic estimate of the request/answer size; ``cached_tokens`` is
  OpenAI's ``prompt_tokens_details.cached_tokens`` and Anthropic's
  ``cache_read_input_tokens``, ``cache_written`` Anthropic's
  ``cache_creation_input_tokens``);
* ``status(code, message)`` — an HTTP error in the API's error shape;
* ``delay(seconds, then)`` — wait (interruptibly) before answering ``then``:
  use a delay longer than the client's timeout to force a timeout;
* ``respond(function)`` — ``function(request) -> reply | str`` decides from the
  recorded request (e.g. refuse ``response_format`` with a 400);
* ``raw(body, code=200)`` — any JSON body as it is (malformed shapes);
* ``tool_calls(("name", arguments), ...)`` — an answer that calls tools
  (OpenAI ``message.tool_calls`` with ``finish_reason: tool_calls``;
  Anthropic ``tool_use`` blocks with ``stop_reason: tool_use``); ``arguments``
  is a dict, or a string sent as it is (OpenAI only: a malformed one);
* ``hostile(writer)`` — the whole answer written raw by a ``hostile_http``
  writer: an endless body, a trickle, an oversized answer.

``Request.tool_results()`` gives the tool answers a request carries (OpenAI
``role: tool`` messages, Anthropic ``tool_result`` blocks), oldest first, as
``(name, parsed JSON answer)``.

A plain string in the script is ``text(string)``. When the script runs out the
server answers 500 with "script exhausted" (so a test sees the extra call).
``server.script(*replies)`` appends replies, so a module-scoped server can be
shared by many tests; ``server.reset()`` clears both the script and the log.
``refused_url()`` gives a base URL where nothing listens (connection refused).
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["LLMServer", "Reply", "Request", "delay", "hostile", "raw", "refused_url", "respond", "status", "text",
           "tool_calls"]

OPENAI_PATH = "/v1/chat/completions"
ANTHROPIC_PATH = "/v1/messages"


@dataclass
class Request:
    """One request the server received."""

    path: str
    body: Any  # the parsed JSON body (or the raw text when it was not JSON)
    headers: dict[str, str]
    api: str  # "openai" | "anthropic" | "unknown"

    @property
    def messages(self) -> list[dict]:
        return list(self.body.get("messages", [])) if isinstance(self.body, dict) else []

    @property
    def system(self) -> str | None:
        """The system text: Anthropic's ``system`` field or OpenAI's first system message."""
        if not isinstance(self.body, dict):
            return None
        if self.api == "anthropic":
            system = self.body.get("system")
            if isinstance(system, list):  # content blocks
                return "".join(block.get("text", "") for block in system if isinstance(block, dict))
            return system
        for message in self.messages:
            if message.get("role") == "system":
                return _content_text(message.get("content"))
        return None

    def tool_results(self) -> list[tuple[str | None, Any]]:
        """``(tool name, parsed answer)`` for each tool answer in the conversation, oldest first."""
        names: dict[str, str] = {}
        found = []
        for message in self.messages:
            for call in message.get("tool_calls") or ():
                names[call.get("id")] = call.get("function", {}).get("name")
            content = message.get("content")
            for block in content if isinstance(content, list) else ():
                if isinstance(block, dict) and block.get("type") == "tool_use":
                    names[block.get("id")] = block.get("name")
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    found.append((names.get(block.get("tool_use_id")), _parsed(_content_text(block.get("content")))))
            if message.get("role") == "tool":
                found.append((names.get(message.get("tool_call_id")), _parsed(_content_text(content))))
        return found

    def message_texts(self, role: str | None = None) -> list[str]:
        """The text of each (non-system) message, optionally of one role."""
        return [_content_text(m.get("content")) for m in self.messages
                if m.get("role") != "system" and (role is None or m.get("role") == role)]


@dataclass
class Reply:
    """One scripted answer (build it with ``text``/``status``/``delay``/``respond``/``raw``)."""

    content: str | None = None
    code: int = 200
    message: str = ""
    wait: float = 0.0
    then: Reply | None = None
    function: Callable[[Request], Reply | str] | None = None
    body: Any = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    writer: Callable[[Any, threading.Event], None] | None = None
    calls: tuple = ()  # (name, arguments) of the tools this answer calls
    cached_tokens: int | None = None  # prompt tokens read from the cache (both APIs)
    cache_written: int | None = None  # prompt tokens written to the cache (Anthropic's cache_creation_input_tokens)


def tool_calls(*calls: tuple[str, Any], input_tokens: int | None = None) -> Reply:
    return Reply(content="", calls=tuple(calls), input_tokens=input_tokens)


def _parsed(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def text(content: str, *, input_tokens: int | None = None, output_tokens: int | None = None,
         cached_tokens: int | None = None, cache_written: int | None = None) -> Reply:
    return Reply(content=content, input_tokens=input_tokens, output_tokens=output_tokens,
                 cached_tokens=cached_tokens, cache_written=cache_written)


def status(code: int, message: str = "scripted error") -> Reply:
    return Reply(code=code, message=message)


def delay(seconds: float, then: Reply | str | None = None) -> Reply:
    return Reply(wait=seconds, then=_reply(then if then is not None else text("{}")))


def respond(function: Callable[[Request], Reply | str]) -> Reply:
    return Reply(function=function)


def raw(body: Any, code: int = 200) -> Reply:
    return Reply(body=body, code=code)


def hostile(writer: Callable[[Any, threading.Event], None]) -> Reply:
    return Reply(writer=writer)


def _reply(value: Reply | str) -> Reply:
    return text(value) if isinstance(value, str) else value


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return "" if content is None else str(content)


def estimate_tokens(value: Any) -> int:
    """A deterministic stand-in for a token count: about 4 characters a token, at least 1."""
    size = len(value if isinstance(value, str) else json.dumps(value, ensure_ascii=False))
    return max(1, size // 4)


class LLMServer:
    """The scripted server; use as a context manager (stops the server on exit)."""

    def __init__(self, replies: list[Reply | str] | tuple = (), *, model: str = "scripted-model") -> None:
        self.model = model
        self.requests: list[Request] = []
        self._script: list[Reply] = [_reply(r) for r in replies]
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._counter = 0
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle -------------------------------------------------------------

    def start(self) -> LLMServer:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:  # noqa: N802 (http.server naming)
                server._handle(self)

            def do_GET(self) -> None:  # noqa: N802 — the model list (both SDKs: GET …/v1/models)
                server._models(self)

            def log_message(self, format: str, *args: Any) -> None:  # silence the default stderr log
                pass

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, name="llm-server", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()  # wakes handlers that are sleeping in a delay
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> LLMServer:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    # -- addresses and script ----------------------------------------------------

    @property
    def port(self) -> int:
        assert self._httpd is not None, "the server is not running"
        return self._httpd.server_address[1]

    @property
    def openai_url(self) -> str:
        """``base_url`` for the openai SDK."""
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def anthropic_url(self) -> str:
        """``base_url`` for the anthropic SDK."""
        return f"http://127.0.0.1:{self.port}"

    def script(self, *replies: Reply | str) -> LLMServer:
        with self._lock:
            self._script.extend(_reply(r) for r in replies)
        return self

    def reset(self) -> LLMServer:
        with self._lock:
            self._script.clear()
            self.requests.clear()
        return self

    @property
    def remaining(self) -> int:
        with self._lock:
            return len(self._script)

    # -- handling ----------------------------------------------------------------

    def _models(self, handler: BaseHTTPRequestHandler) -> None:
        """``GET /v1/models``: the one scripted model, in a shape both SDKs read."""
        path = handler.path.split("?", 1)[0]
        if path != "/v1/models":
            self._send(handler, 404, {"error": {"message": f"no such endpoint {path}", "type": "not_found"}})
            return
        model = {"id": self.model, "object": "model", "created": 0, "owned_by": "fold-tests", "type": "model",
                 "display_name": self.model, "created_at": "2026-01-01T00:00:00Z"}
        self._send(handler, 200, {"object": "list", "data": [model], "has_more": False, "first_id": self.model,
                                  "last_id": self.model})

    def _handle(self, handler: BaseHTTPRequestHandler) -> None:
        length = int(handler.headers.get("Content-Length") or 0)
        data = handler.rfile.read(length).decode("utf-8", "replace") if length else ""
        try:
            body = json.loads(data)
        except ValueError:
            body = data
        path = handler.path.split("?", 1)[0]
        api = {OPENAI_PATH: "openai", ANTHROPIC_PATH: "anthropic"}.get(path, "unknown")
        request = Request(path, body, {k.lower(): v for k, v in handler.headers.items()}, api)
        with self._lock:
            self.requests.append(request)
            reply = self._script.pop(0) if self._script else status(500, "script exhausted")
            self._counter += 1
            number = self._counter
        if api == "unknown":
            reply = status(404, f"no such endpoint {path}")
        while True:
            if reply.function is not None:
                reply = _reply(reply.function(request))
                continue
            if reply.wait:
                if self._stopping.wait(reply.wait):
                    return
                reply = reply.then or text("{}")
                continue
            break
        if reply.writer is not None:
            handler.close_connection = True
            reply.writer(handler, self._stopping)
            return
        code, document = self._render(api, reply, request, number)
        self._send(handler, code, document)

    def _render(self, api: str, reply: Reply, request: Request, number: int) -> tuple[int, Any]:
        if reply.body is not None:
            return reply.code, reply.body
        if reply.code != 200 or reply.content is None:
            if api == "anthropic":
                return reply.code, {"type": "error", "error": {"type": "api_error", "message": reply.message}}
            return reply.code, {"error": {"message": reply.message, "type": "server_error", "code": None}}
        tokens_in = reply.input_tokens if reply.input_tokens is not None else estimate_tokens(request.body)
        tokens_out = reply.output_tokens if reply.output_tokens is not None else estimate_tokens(reply.content)
        model = request.body.get("model", self.model) if isinstance(request.body, dict) else self.model
        if reply.calls:
            return 200, _tool_answer(api, reply.calls, number, model, tokens_in, tokens_out)
        if api == "anthropic":
            usage = {"input_tokens": tokens_in, "output_tokens": tokens_out}
            if reply.cached_tokens is not None or reply.cache_written is not None:
                usage.update(cache_read_input_tokens=reply.cached_tokens or 0,
                             cache_creation_input_tokens=reply.cache_written or 0)
            return 200, {"id": f"msg_{number:06d}", "type": "message", "role": "assistant", "model": model,
                         "content": [{"type": "text", "text": reply.content}],
                         "stop_reason": "end_turn", "stop_sequence": None, "usage": usage}
        details = {} if reply.cached_tokens is None else {"prompt_tokens_details": {"cached_tokens": reply.cached_tokens}}
        return 200, {"id": f"chatcmpl-{number:06d}", "object": "chat.completion", "created": int(time.time()),
                     "model": model,
                     "choices": [{"index": 0, "message": {"role": "assistant", "content": reply.content},
                                  "finish_reason": "stop"}],
                     "usage": {"prompt_tokens": tokens_in, "completion_tokens": tokens_out,
                               "total_tokens": tokens_in + tokens_out, **details}}

    @staticmethod
    def _send(handler: BaseHTTPRequestHandler, code: int, document: Any) -> None:
        payload = json.dumps(document, ensure_ascii=False).encode("utf-8")
        try:
            handler.send_response(code)
            handler.send_header("Content-Type", "application/json")
            handler.send_header("Content-Length", str(len(payload)))
            handler.end_headers()
            handler.wfile.write(payload)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (a timeout test)
            pass


def _tool_answer(api: str, calls: tuple, number: int, model: str, tokens_in: int, tokens_out: int) -> dict:
    """An answer that calls tools, in the API's shape."""
    if api == "anthropic":
        blocks = [{"type": "tool_use", "id": f"toolu_{number:04d}_{index}", "name": name, "input": arguments}
                  for index, (name, arguments) in enumerate(calls)]
        return {"id": f"msg_{number:06d}", "type": "message", "role": "assistant", "model": model,
                "content": blocks, "stop_reason": "tool_use", "stop_sequence": None,
                "usage": {"input_tokens": tokens_in, "output_tokens": tokens_out}}
    listed = [{"id": f"call_{number:04d}_{index}", "type": "function",
               "function": {"name": name, "arguments": arguments if isinstance(arguments, str)
                            else json.dumps(arguments, ensure_ascii=False)}}
              for index, (name, arguments) in enumerate(calls)]
    return {"id": f"chatcmpl-{number:06d}", "object": "chat.completion", "created": int(time.time()), "model": model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": None, "tool_calls": listed},
                         "finish_reason": "tool_calls"}],
            "usage": {"prompt_tokens": tokens_in, "completion_tokens": tokens_out,
                      "total_tokens": tokens_in + tokens_out}}


def refused_url(path: str = "/v1") -> str:
    """A loopback base URL where nothing listens: connecting is refused."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}{path}"
