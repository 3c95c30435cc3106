"""What the LLM backends send and how they read the answer (contract §9).

Every chat-style backend speaks the same conversation:

* system: the skill text;
* user: the §9 input document (JSON);
* for each earlier attempt of this window (``Correction``): assistant = that
  reply as it was, user = the receipt (host errors or the kernel's rejection)
  with the instruction to answer again with one complete corrected object.

``read_answer`` turns the model's text into a ``Reply``: the JSON object is
found plainly, in a code fence or after leading prose (``extract_json``); an
object that is neither a §9 output nor anything like it is an error, never a
guess. ``classify`` names a transport failure for ``AgentUnavailable``.
"""

from __future__ import annotations

import importlib
import json
import time
from collections.abc import Callable, Mapping
from typing import Any

from pydantic import Field

from fold_core.bounded import Worker
from fold_core.plugin_api import AgentBackend, AgentRequest, AgentUnavailable, Reply, extract_json
from fold_core.settings import AgentSettings, EnvName, ToolSettings, env_value

__all__ = ["Clock", "SdkBackend", "SdkSettings", "bounded_http_client", "classify", "correction_text", "input_text", "messages",
           "read_answer", "reply_from", "skill_language", "unavailable"]

_CORRECTION = {
    "zh": ("上一次输出没有被接受，批次没有写入（同一 batch_id 仍可使用）。回执如下：\n{receipt}\n\n"
           "请按回执里每个 error 的 code 和定位字段修正，然后重新输出一个完整的 JSON 对象"
           "（包含 dispositions 与 batch），不要只输出改动部分，也不要附加解释文字。"),
    "en": ("Your previous answer was not accepted and nothing was written (the same batch_id still "
           "applies). The receipt:\n{receipt}\n\nFix every error by its code and locators, then answer "
           "with one complete corrected JSON object (dispositions and batch), not just the changed parts, "
           "and no prose around it."),
}


def skill_language(skill: str) -> str:
    """The skill's language: Chinese when its opening holds CJK characters."""
    return "zh" if any("\u4e00" <= ch <= "\u9fff" for ch in skill[:400]) else "en"


def input_text(document: Mapping[str, Any]) -> str:
    """The §9 input as the user message (compact JSON, characters kept as they are)."""
    return json.dumps(document, ensure_ascii=False, separators=(",", ":"))


def correction_text(receipt: Mapping[str, Any], skill: str) -> str:
    """The user message that answers an attempt with its receipt."""
    body = json.dumps(receipt, ensure_ascii=False, indent=1)
    return _CORRECTION[skill_language(skill)].format(receipt=body)


def messages(request: AgentRequest) -> list[dict]:
    """The conversation after the system text: the input, then each attempt and its receipt."""
    turns = [{"role": "user", "content": input_text(request.input)}]
    for correction in request.corrections:
        turns.append({"role": "assistant", "content": correction.reply or "(empty answer)"})
        turns.append({"role": "user", "content": correction_text(correction.receipt, request.skill)})
    return turns


def read_answer(text: str | None, **call: Any) -> Reply:
    """The model's text as a ``Reply`` (``call`` carries tokens, latency, model)."""
    raw = text or ""
    found, why = extract_json(raw)
    if found is not None and not _ANSWER_KEYS & set(found):
        found, why = _later_answer(raw), "the reply's JSON object has neither 'dispositions' nor 'batch'"
        why = None if found is not None else why
    return Reply(output=found, raw=raw, error=why, **call)


def reply_from(text: str | None, usage: tuple[int | None, int | None, int | None], clock: Clock,
               response: Any, model: str) -> Reply:
    """One SDK response as a ``Reply``: ``usage`` is (in, out, cached); the model the server names wins."""
    tokens_in, tokens_out, tokens_cached = usage
    return read_answer(text, input_tokens=tokens_in, output_tokens=tokens_out, cached_tokens=tokens_cached,
                       latency_ms=clock.ms, model=getattr(response, "model", None) or model)


_ANSWER_KEYS = {"dispositions", "batch"}


def _later_answer(text: str) -> dict | None:
    """The first JSON object in ``text`` that looks like a §9 answer (prose may quote a small example first)."""
    decoder = json.JSONDecoder()
    for start in (i for i, ch in enumerate(text) if ch == "{"):
        try:
            value, _ = decoder.raw_decode(text, start)
        except ValueError:
            continue
        if isinstance(value, dict) and _ANSWER_KEYS & set(value):
            return value
    return None


class Clock:
    """Milliseconds since the call started (monotonic)."""

    def __init__(self) -> None:
        self._start = time.monotonic()

    @property
    def ms(self) -> float:
        return round((time.monotonic() - self._start) * 1000, 1)


def classify(error: BaseException) -> str:
    """A short class for an SDK transport error: timeout, too_large, connection, http_<status>, or its name."""
    names = {cls.__name__ for cls in type(error).__mro__}
    if "TooLarge" in {cls.__name__ for cls in type(error.__cause__).__mro__} or "TooLarge" in names:
        return "too_large"
    if "APITimeoutError" in names or isinstance(error, TimeoutError):
        return "timeout"
    status = getattr(error, "status_code", None)
    if isinstance(status, int):
        return f"http_{status}"
    if "APIConnectionError" in names or isinstance(error, ConnectionError):
        return "connection"
    return type(error).__name__


def unavailable(error: BaseException, clock: Clock, backend: str) -> AgentUnavailable:
    """An ``AgentUnavailable`` for a failed SDK call (message without secrets or tracebacks)."""
    kind = classify(error)
    cause = error.__cause__
    if kind in ("too_large", "timeout") and cause is not None and type(cause).__module__ == "fold_core.bounded_http":
        error = cause  # the bound that was hit says more than the SDK's "Connection error."
    message = getattr(error, "message", None) or str(error) or type(error).__name__
    return AgentUnavailable(kind, f"{backend}: {kind}: {message}"[:500], latency_ms=clock.ms)


PLACEHOLDER_KEY = "not-needed"  # local servers (Ollama, vLLM) take any key; the SDKs insist on one


class SdkSettings(ToolSettings):
    """What every SDK backend's ``[agent]`` table names: the model, where it is served, the key."""

    model: str = Field(min_length=1)
    base_url: str | None = Field(default=None, pattern=r"^https?://")
    api_key_env: EnvName | None = None


class SdkBackend(AgentBackend):
    """A backend over a vendor SDK client, built on the first call (the SDKs are heavy imports).

    Subclasses name the client class (``sdk_client``) and the host used when
    ``base_url`` is not set (``default_host``); the SDK's own retries are off:
    the host's attempts and backoff decide. The client's transport is
    bounded (``fold_core.bounded_http``): each request ends at ``timeout``
    however the server trickles and reads at most ``max_answer_bytes``; each
    SDK call goes through ``call``, which gives up at ``timeout`` whatever
    happens inside.
    """

    default_host = ""
    settings: SdkSettings

    def __init__(self, settings: SdkSettings) -> None:
        super().__init__(settings)
        self._client: Any = None  # the SDK's client; the SDKs load on the first call, so no type names it here

    @staticmethod
    def sdk_client() -> Callable[..., Any]:
        """The SDK's client class (imported here: the SDKs are heavy)."""
        raise NotImplementedError

    def describe(self) -> str:
        return f"{self.type_name} ({self.settings.model} at {self.settings.base_url or self.default_host})"

    def probe(self, *, timeout: float) -> str:
        """The endpoint's model list (``GET …/models``): reachable, the key accepted, the model offered."""
        clock = Clock()
        try:
            listed = [getattr(model, "id", None) for model in
                      self._connect().with_options(timeout=timeout, max_retries=0).models.list()]
        except Exception as error:  # the SDK's transport and status errors
            raise unavailable(error, clock, self.type_name) from None
        where = self.settings.base_url or self.default_host
        if self.settings.model not in listed:
            shown = ", ".join(str(name) for name in listed[:10]) + (" …" if len(listed) > 10 else "")
            raise AgentUnavailable("model", f"{where} does not offer the model {self.settings.model!r}; it lists "
                                            f"{len(listed)}: {shown or 'none'}")
        return f"{where} answered in {clock.ms:g} ms and offers {self.settings.model} ({len(listed)} model(s))"

    def _connect(self) -> Any:
        if self._client is None:
            self._client = self.sdk_client()(
                base_url=self.settings.base_url,
                api_key=env_value(self.settings.api_key_env) or PLACEHOLDER_KEY,
                timeout=self.settings.timeout.total_seconds(),
                max_retries=0,
                http_client=bounded_http_client(self.settings, self.sdk_client()),
            )
        return self._client

    def deadline(self) -> float:
        """When an attempt that starts now must be over (``time.monotonic()``): ``timeout`` from now."""
        return time.monotonic() + self.settings.timeout.total_seconds()

    def call(self, function: Callable[[], Any], deadline: float) -> Any:
        """``function()`` (one SDK request) within the attempt's ``deadline`` (plus a moment).

        An attempt may make several requests (a model looking things up with
        the editor's tools): all of them share the one deadline, so
        ``timeout`` bounds the whole attempt. The transport already ends each
        request at ``timeout`` however the server trickles; this is the
        guarantee that holds whatever the SDK does around it. A call that
        outruns it is left to end on its own thread (its transport stops it
        soon after) and the attempt fails as a timeout.
        """
        limit = self.settings.timeout.total_seconds()
        left = deadline - time.monotonic()
        if left <= 0:
            raise AgentUnavailable("timeout", f"{self.type_name}: timeout: no complete answer within {limit:g}s",
                                   latency_ms=limit * 1000)
        worker = Worker(f"editor-{self.type_name}")
        try:
            return worker.call(function, left + CALL_GRACE)
        except TimeoutError:
            raise AgentUnavailable("timeout", f"{self.type_name}: timeout: no complete answer within {limit:g}s",
                                   latency_ms=limit * 1000) from None
        finally:
            worker.stop()


CALL_GRACE = 2.0  # seconds past ``timeout`` before an SDK call is abandoned (the transport ends it at ``timeout``)


def bounded_http_client(settings: AgentSettings, client_class: Callable[..., Any]) -> Any:
    """The httpx client of an SDK: each request ends at ``timeout`` and reads at most ``max_answer_bytes``."""
    # lazy: fold_core.bounded_http loads urllib.request (http.client, email, ssl); only a real call needs it
    from fold_core.bounded_http import bounded_client

    return bounded_client(seconds=settings.timeout.total_seconds(), max_bytes=settings.max_answer_bytes,
                          package=sdk_httpx(client_class), follow_redirects=True)


def sdk_httpx(client_class: Callable[..., Any]) -> str:
    """The httpx package an SDK's client class is built on: ``httpx``, or the copy it ships (``httpx2``)."""
    sdk = importlib.import_module(client_class.__module__.split(".")[0])
    for cls in getattr(getattr(sdk, "DefaultHttpxClient", None), "__mro__", ()):
        if cls.__name__ == "Client":
            return cls.__module__.split(".")[0]
    return "httpx"

