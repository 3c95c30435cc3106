"""What a plugin implements (contract §9–§12): adapter, consumer and agent types.

A **type** is a class with ``type_name`` and a ``Settings`` model; a hook in
``fold_core.hookspecs`` returns a list of such classes. The host builds one
instance per ``plugins.toml`` entry as ``Type(name, settings)`` (the agent:
``Type(settings)``) and calls it with everything it needs as arguments:
plugins never reach for clocks, globals, the store or the plugin manager.

* ``Adapter.poll(cursor, now=...) -> Poll`` — never raises for a source
  failure (that is ``Poll.health``); the host keeps observations and cursor
  together. Optionally ``Adapter.watch(notify, stopping)``: a source that can
  tell when it has news (IMAP IDLE) lets the daemon poll it at once instead
  of waiting for ``every``.
* ``AgentBackend.propose(request) -> Reply`` — one call of the editor; a
  transport failure raises ``AgentUnavailable``, an unreadable answer is a
  ``Reply`` with ``output=None`` and ``error``. The host owns retries.
  ``request.tools`` (``EditorTools``, read-only) is there for a backend that
  lets its model look things up; wrap it in a bounded ``ToolBox``.
* ``Consumer.deliver(records, context) -> None`` — accepted records in
  event_seq order, at least once; raising means "retry later". The context
  holds a read-only ``StateView`` and the instance's own small durable memory;
  nothing in it can write to the store.
"""

from __future__ import annotations

import json
import re
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, MutableMapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from types import MappingProxyType
from typing import Any, ClassVar

from fold_core.editor_tools import EditorTools, ToolBox
from fold_core.errors import FoldError
from fold_core.observation import Health, Poll
from fold_core.settings import AdapterSettings, AgentSettings, ConsumerSettings, Settings, ToolSettings

__all__ = [
    "Adapter",
    "AgentBackend",
    "AgentRequest",
    "AgentUnavailable",
    "Consumer",
    "ConsumerContext",
    "FEEDBACK_WINDOW",
    "Correction",
    "EditorTools",
    "Reply",
    "StateView",
    "ToolBox",
    "WatchUnsupported",
    "extract_json",
]


# -- adapters ----------------------------------------------------------------


class Adapter(ABC):
    """An inbound source type (email, rss, worklog, …)."""

    type_name: ClassVar[str]
    channel: ClassVar[str]
    Settings: ClassVar[type[AdapterSettings]] = AdapterSettings

    def __init__(self, name: str, settings: AdapterSettings) -> None:
        self.name = name
        self.settings = settings

    @abstractmethod
    def poll(self, cursor: Any, *, now: datetime) -> Poll:
        """New observations since ``cursor`` (None on the first run), the new cursor, the health.

        :param cursor: what the last successful poll returned, exactly as JSON gave it back.
        :param now: the host's clock for this cycle (tz-aware); use it for ``observed_at``.
        """

    def close(self) -> None:
        """Release connections; called when the host stops."""

    def probe(self, *, timeout: float) -> Health | None:
        """``foldctl doctor --probe``: try reaching the source and its credentials now, reading nothing.

        :param timeout: seconds the attempt may take (the caller stops waiting after them).
        :return: how it went (a failed ``Health`` with its error class, never an exception),
            or None when this type has nothing to try (the default).
        """
        return None

    # An optional capability: news pushed by the source. The daemon (``foldctl run``) calls
    # ``watch`` on a thread of its own for each instance whose ``watch_delay`` is not None;
    # ``foldctl tick`` never does. Polling stays the source of truth: ``watch`` only says when.

    def watch_delay(self) -> timedelta | None:
        """None (the default): the source is only polled. Else how long the daemon gathers news before polling."""
        return None

    def watch(self, notify: Callable[[str], None], stopping: Any) -> None:
        """Wait on the source and call ``notify(why)`` whenever a poll would find something new.

        Runs for as long as one connection lives: it returns when ``stopping`` (a
        ``threading.Event``) is set, raises ``WatchUnsupported`` when the source
        cannot be watched (the daemon then only polls it), and raises anything else
        when the connection failed or dropped (the daemon waits, with backoff, and
        calls it again). It calls ``notify`` once its watch is in place, so that the
        daemon polls to catch up with what arrived while nobody watched.

        :param notify: thread-safe; returns at once.
        :param stopping: set when the host stops.
        """
        raise WatchUnsupported(f"{self.type_name} sources are polled, not watched")


class WatchUnsupported(FoldError):
    """The source cannot be watched (e.g. the server does not offer IMAP IDLE): it is polled only."""


# -- agents --------------------------------------------------------------------


class AgentUnavailable(FoldError):
    """The editor could not be reached or did not answer (network, HTTP error, timeout, crash)."""

    def __init__(self, error_class: str, message: str, *, latency_ms: float | None = None,
                 stderr: str | None = None) -> None:
        super().__init__(message)
        self.error_class = error_class
        self.latency_ms = latency_ms
        self.stderr = stderr

    def to_error(self) -> dict:
        return {"code": "agent_unavailable", "class": self.error_class, "message": str(self)}


@dataclass(frozen=True)
class Correction:
    """An earlier attempt in this window and the receipt that answered it."""

    reply: str
    receipt: Mapping[str, Any]


@dataclass(frozen=True)
class AgentRequest:
    """One call of the editor: the §9 input, the skill text, and the earlier attempts."""

    input: Mapping[str, Any]
    skill: str
    attempt: int = 1
    corrections: tuple[Correction, ...] = ()
    output_schema: Mapping[str, Any] | None = None  # JSON Schema of the §9 output, for servers that take one
    tools: EditorTools | None = None  # read-only lookups for backends that speak a tool-calling protocol


@dataclass
class Reply:
    """What the editor answered, plus what the call log keeps."""

    output: dict | None
    raw: str
    error: str | None = None
    input_tokens: int | None = None  # the whole prompt, cached tokens included
    output_tokens: int | None = None
    latency_ms: float | None = None
    stderr: str | None = None
    model: str | None = None
    tools: list[dict] = field(default_factory=list)  # the tool calls made (``ToolBox.calls``), for the call log
    cached_tokens: int | None = None  # of ``input_tokens``, those read from (or written to) the prompt cache


class AgentBackend(ABC):
    """An editor backend type (openai, anthropic, command, baseline, …)."""

    type_name: ClassVar[str]
    Settings: ClassVar[type[AgentSettings]] = AgentSettings
    uses_llm: ClassVar[bool] = True

    def __init__(self, settings: AgentSettings) -> None:
        self.settings = settings

    @abstractmethod
    def propose(self, request: AgentRequest) -> Reply:
        """Ask the editor once; raise ``AgentUnavailable`` when it cannot be asked."""

    def describe(self) -> str:
        """One line for ``doctor`` and the cycle's output (no secrets)."""
        return self.type_name

    def probe(self, *, timeout: float) -> str | None:
        """``foldctl doctor --probe``: ask the endpoint something cheap (its model list) without editing.

        :param timeout: seconds the request may take.
        :return: one line on what answered, or None when there is nothing to ask (the default);
            raise ``AgentUnavailable`` when the endpoint cannot be reached or lacks the model.
        """
        return None


_FENCE = re.compile(r"```(?:json|JSON)?\s*\n(.*?)```", re.DOTALL)


def extract_json(text: str) -> tuple[dict | None, str | None]:
    """The JSON object in a model's reply: plain, in a code fence, or after leading prose.

    Returns ``(object, None)`` or ``(None, why)``; never raises.
    """
    if not isinstance(text, str) or not text.strip():
        return None, "the reply is empty"
    candidates = [text.strip()]
    candidates += [block.strip() for block in _FENCE.findall(text)]
    decoder = json.JSONDecoder()
    for candidate in candidates:
        try:
            value = json.loads(candidate)
        except ValueError:
            continue
        if isinstance(value, dict):
            return value, None
    for start in (i for i, ch in enumerate(text) if ch == "{"):
        try:
            value, _ = decoder.raw_decode(text, start)
        except ValueError:
            continue
        if isinstance(value, dict):
            return value, None
    return None, "the reply holds no JSON object"


# -- consumers -----------------------------------------------------------------


class StateView:
    """A read-only view of the state: the §8 document and lookups. No path back to the store."""

    __slots__ = ("_document", "_items")
    _document: dict
    _items: dict[str, dict]

    def __init__(self, document: Mapping[str, Any]) -> None:
        frozen = json.loads(json.dumps(document))  # a private deep copy
        object.__setattr__(self, "_document", frozen)
        object.__setattr__(self, "_items", _index(frozen))

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("StateView is read-only")

    @property
    def document(self) -> dict:
        """A fresh copy of the §8 state document (changing it changes nothing)."""
        return json.loads(json.dumps(self._document))

    @property
    def event_seq(self) -> int:
        return self._document["event_seq"]

    @property
    def revision(self) -> int:
        return self._document["revision"]

    @property
    def budget(self) -> int:
        return self._document["budget"]

    @property
    def now(self) -> str:
        return self._document["now"]

    def item(self, item_id: str) -> Mapping[str, Any] | None:
        """The active item's view (read-only mapping), or None."""
        found = self._items.get(item_id)
        return MappingProxyType(found) if found is not None else None

    def active_ids(self) -> list[str]:
        return list(self._items)


def _index(document: Mapping[str, Any]) -> dict[str, dict]:
    found: dict[str, dict] = {}

    def walk(layer: Mapping[str, Any] | None) -> None:
        if not layer:
            return
        for view in layer.get("items", []):
            found[view["id"]] = view
            walk(view.get("children"))

    walk(document.get("root"))
    return found


@dataclass
class ConsumerContext:
    """What a consumer gets beside the records.

    :param state: the state after the last record of this delivery (read-only).
    :param now: the host's clock (ISO instant with offset).
    :param timezone: the ``[host] timezone`` name (quiet hours, local times).
    :param memory: this instance's durable key/value memory (JSON values), kept in
        the host database; e.g. what push has already sent.
    :param coverage: per-source health, as in the §9 signal.
    :param language: the ``[host] language``.
    :param editor: None while the configured editor answers; else ``{"type", "windows",
        "since", "error", "fallback"}``: it could not be reached for ``windows`` windows in
        a row, and ``fallback`` names the editor standing in (``"baseline"``) or is None.
    :param feedback: the user's latest feedback, oldest first (at most ``FEEDBACK_WINDOW`` entries):
        ``{"seq", "id", "target", "meaning", "at", "via", "revision"?, "option"?, "digest"?}``;
        ``seq`` increases, so a consumer can remember the last one it has read (push: acknowledgements).
    :param public_url: ``[pinboard] public_url`` when set: item pages are at ``<public_url>/item/<id>``.
    :param location: the store's location (a directory or URL), for the host's own consumers that read
        the whole history (``report``); plugins should not need it.
    """

    state: StateView
    now: str
    timezone: str = "UTC"
    memory: MutableMapping[str, Any] = field(default_factory=dict)
    coverage: Sequence[Mapping[str, Any]] = ()
    language: str = "zh"
    editor: Mapping[str, Any] | None = None
    feedback: Sequence[Mapping[str, Any]] = ()
    public_url: str | None = None
    location: str | None = None


#: How many of the latest feedback observations a consumer is shown.
FEEDBACK_WINDOW = 500


class Consumer(ABC):
    """A downstream consumer type (briefing, push, log, …); it never writes back.

    The host's delivery engine calls ``begin`` (once, when an instance is first
    seen), ``deliver`` and ``close``, all on one worker thread per instance, each
    waited for at most the instance's ``deliver_timeout`` setting (or the class
    default below when its settings have none). Two class attributes tune it.
    """

    type_name: ClassVar[str]
    Settings: ClassVar[type[ConsumerSettings]] = ConsumerSettings
    #: True when ``deliver`` only reads the records it is given: instances then share
    #: one copy of each chunk instead of getting their own (the built-ins do).
    shares_records: ClassVar[bool] = False
    #: True to be called with ``deliver([], context)`` when there is nothing new (to
    #: send a digest held through quiet hours, to retry what failed).
    idle_calls: ClassVar[bool] = False
    #: How long a call may take when the instance's settings have no ``deliver_timeout``.
    deliver_timeout: ClassVar[timedelta] = timedelta(minutes=2)

    def __init__(self, name: str, settings: ConsumerSettings) -> None:
        self.name = name
        self.settings = settings

    def begin(self, context: ConsumerContext) -> None:
        """Called once, when the instance is first seen, with the state at its starting point.

        To remember what it will later compare with (push: the items already
        known need no notification). The default does nothing. An error here is
        recorded and the instance still starts.
        """

    @abstractmethod
    def deliver(self, records: Sequence[Mapping[str, Any]], context: ConsumerContext) -> None:
        """Handle accepted records (event_seq order; at least once: the key is (name, event_seq)).

        Raise to have the same records delivered again later (with backoff).
        """

    def close(self) -> None:
        """Release resources; called after each delivery run and when the host stops."""


# ``Settings`` and the three settings bases are re-exported for plugin authors.
__all__ += ["AdapterSettings", "AgentSettings", "ConsumerSettings", "Settings", "ToolSettings"]
