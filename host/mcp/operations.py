"""The tools and resources of ``foldctl mcp`` over one store and its host database, without the protocol.

``FoldDesk.call(name, arguments)`` answers ``(document, ok)``: the same
documents as the ``foldctl`` commands whose paths the tools take —
``fold_state`` / ``fold_item`` the §8 state document (``Store.state_document``),
``fold_history`` ``Store.history``, ``fold_annotate`` ``Store.annotate``,
``fold_feedback`` ``fold_host.cycle.feedback.save_feedback``, ``fold_observation``
``foldctl inbox show``'s reading of host.db, ``fold_report`` (at most ``[mcp] max_reports_per_hour``
per agent: ``fold_host.mcp.quota``) and ``fold_ask`` the inbox,
``fold_decide`` ``fold_host.cycle.decide.save_decision`` (as
``foldctl decide``), ``fold_answers`` ``fold_host.cycle.questions``. A failure is never an exception:
arguments against the tool's schema, a kernel rejection, an unknown item or
observation, a read-only server, a store that is missing, busy or corrupt —
each is ``({"ok": false, "errors": [{"code", "message", …}]}, False)``.

One ``Store`` is kept for the life of the server, so a call reads only what
other processes appended since the last one; its lock is taken and released
inside each call and never held between calls. Calls in this process run one
at a time (the HTTP transport runs them in worker threads); other processes
(the daemon, ``foldctl``, another server) wait on the store's lock and on
SQLite as usual.
"""

from __future__ import annotations

import functools
import os
import sys
import threading
from datetime import datetime
from zoneinfo import ZoneInfo

from fold_core.errors import FoldError
from fold_core.store.locate import open_store
from fold_core.store.location import is_url
from fold_core.store.meta import StoreMissing
from fold_core.timefmt import parse_instant
from fold_host.cycle.decide import save_decision
from fold_host.cycle.feedback import UnreadableUntil, save_feedback
from fold_host.cycle.questions import question_answers
from fold_host.hostdb import open_host_db
from fold_host.mcp import catalogue
from fold_host.mcp.quota import HourlyQuota
from fold_host.mcp.ask import AskProblem, question_observation, same_question
from fold_host.mcp.report import ReportProblem, report_observation, same_report
from fold_host.mcp.views import filter_state
from fold_host.skill import LANGUAGES, load_skill

__all__ = ["FoldDesk", "encode", "failure"]


def encode(document) -> str:
    """A document as compact JSON text (orjson when it is installed: the state document is large)."""
    try:
        import orjson
    except ImportError:
        import json

        return json.dumps(document, ensure_ascii=False, separators=(",", ":"))
    return orjson.dumps(document).decode("utf-8")


def failure(code: str, message: str, **details) -> tuple[dict, bool]:
    """The structured error document of one problem."""
    return {"ok": False, "errors": [{"code": code, "message": message, **details}]}, False


class FoldDesk:
    """The store and host database behind the tools; see the module docstring."""

    def __init__(self, store_dir: str, *, source: str = "agents", timezone: str = "UTC",
                 now: str | None = None, read_only: bool = False, quota: HourlyQuota | None = None) -> None:
        self.store_dir, self.source, self.read_only = store_dir, source, read_only
        self.quota = HourlyQuota() if quota is None else quota
        self._zone, self._zone_name, self._now = ZoneInfo(timezone), timezone, now
        self.store = open_store(store_dir)  # a directory or a postgresql:// store
        self._lock = threading.Lock()

    def close(self) -> None:
        """At the server's end: bring the store's snapshot up to date (not for a read-only server)."""
        if not self.read_only:
            with self._lock:
                self.store.recorder.close()

    def tools(self) -> tuple[catalogue.Tool, ...]:
        """The tools this server offers (the writing ones only when it may write)."""
        return tuple(entry for entry in catalogue.TOOLS if not (self.read_only and entry.writes))

    def now(self) -> str:
        """``--now`` when given, else the clock in ``[host] timezone`` (whole seconds)."""
        if self._now is not None:
            return self._now
        return datetime.now(self._zone).replace(microsecond=0).isoformat()

    # -- calls -------------------------------------------------------------------

    def call(self, name: str, arguments: dict | None) -> tuple[dict, bool]:
        """One tool call's ``(document, ok)``; never raises for anything a caller can send."""
        entry = catalogue.tool(name)
        if entry is None:
            return failure("unknown_tool", f"there is no tool {name!r}; the tools are: "
                           f"{', '.join(tool.name for tool in self.tools())}", tool=name)
        if entry.writes and self.read_only:
            return failure("read_only", f"{name} writes, and this server was started with --read-only: it "
                           "offers only the reading tools", tool=name)
        arguments = {} if arguments is None else arguments
        problems = _schema_problems(entry, arguments)
        if problems:
            return {"ok": False, "errors": problems}, False
        return self._guarded(getattr(self, f"_{name}"), arguments)

    def read(self, uri: str) -> tuple[bool, str | dict, str]:
        """A resource: ``(True, text, mime type)``, or ``(False, error document, "")``."""
        if uri.startswith("fold://skill/"):
            lang = uri.removeprefix("fold://skill/")
            if lang in LANGUAGES:
                return True, load_skill(lang), "text/markdown"
            return False, failure("resource_not_found", f"no skill text {uri}; there are fold://skill/zh and "
                                  "fold://skill/en", uri=uri)[0], ""
        if uri == "fold://state":
            document, ok = self._guarded(self._fold_state, {})
        elif uri.startswith("fold://item/"):
            document, ok = self.call("fold_item", {"id": uri.removeprefix("fold://item/")})
        else:
            return False, failure("resource_not_found", f"no resource {uri}", uri=uri)[0], ""
        if not ok:
            return False, document, ""
        return True, encode(document), "application/json"

    def _guarded(self, operation, arguments: dict) -> tuple[dict, bool]:
        try:
            if not is_url(self.store_dir) and not os.path.exists(os.path.join(self.store_dir, "meta.json")):
                raise StoreMissing(f"no store at {self.store_dir} (no meta.json): `foldctl init` or the first "
                                   "`foldctl tick` creates one")
            with self._lock:
                return operation(arguments)
        except FoldError as error:
            errors = error.to_errors() if hasattr(error, "to_errors") else [error.to_error()]
            return {"ok": False, "errors": errors}, False
        except Exception as error:  # a bug: still an answer, never a traceback in the client
            if os.environ.get("FOLD_DEBUG"):
                import traceback

                traceback.print_exc(file=sys.stderr)
            return failure("internal", f"internal error ({type(error).__name__}: {error}); please report it "
                           "(FOLD_DEBUG=1 prints the traceback on the server's stderr)")

    # -- the tools ------------------------------------------------------------------

    def _fold_state(self, arguments: dict) -> tuple[dict, bool]:
        options = {"not_active": arguments["not_active"]} if "not_active" in arguments else {}
        answer = self.store.state_document(now=self.now(), depth=arguments.get("depth"), **options)
        if answer.exit_code:
            return answer.document, False
        return filter_state(answer.document, arguments.get("min_weight"), arguments.get("kinds")), True

    def _fold_item(self, arguments: dict) -> tuple[dict, bool]:
        answer = self.store.state_document(now=self.now(), item=arguments["id"], not_active=0)
        if answer.exit_code:
            return answer.document, False
        document = dict(answer.document)
        for key in ("not_active", "not_active_total"):
            document.pop(key, None)
        return document, True

    def _fold_history(self, arguments: dict) -> tuple[dict, bool]:
        batch, item, since = arguments.get("batch"), arguments.get("item"), arguments.get("since")
        limit = arguments.get("limit", catalogue.HISTORY_LIMIT)
        if batch is not None:
            if item is not None or since is not None or "limit" in arguments:
                return failure("invalid_arguments", "batch answers one question: whether that batch was accepted;"
                               " it cannot be combined with item, since or limit", field="batch")
            return self.store.history(batch=batch).document, True
        if since is not None:
            return self.store.history(item=item, since=since, limit=limit).document, True
        if item is None:
            last = self.store.state().event_seq
            return self.store.history(since=max(0, last - limit), limit=limit).document, True
        document = self.store.history(item=item).document
        return {**document, "records": document["records"][-limit:]}, True

    def _fold_observation(self, arguments: dict) -> tuple[dict, bool]:
        with open_host_db(self.store_dir) as db:
            detail = db.observation_detail(arguments["id"])
        if detail is None:
            return failure("observation_not_found", f"no observation {arguments['id']} in the inbox",
                           observation=arguments["id"])
        return {"found": True, **detail}, True

    def _fold_annotate(self, arguments: dict) -> tuple[dict, bool]:
        answer = self.store.annotate(item=arguments["item"], text=arguments["text"],
                                     author=arguments.get("author", "agent"), now=self.now())
        return answer.document, answer.exit_code == 0

    def _fold_feedback(self, arguments: dict) -> tuple[dict, bool]:
        try:
            document, code = save_feedback(self.store_dir, arguments["item"], arguments["meaning"],
                                           arguments.get("value"), arguments.get("until"), self.now(), via="mcp",
                                           timezone_name=self._zone_name)
        except UnreadableUntil as error:  # a phrase in until that is no time: the accepted forms, as a tool error
            return failure("invalid_arguments", str(error).removeprefix("--"), field="until")
        return document, code == 0

    def _fold_ask(self, arguments: dict) -> tuple[dict, bool]:
        try:
            observation = question_observation(arguments, source=self.source, now=self.now())
        except AskProblem as problem:
            return failure(problem.code, str(problem), field=problem.field)
        with open_host_db(self.store_dir) as db:
            kept, new = db.add_once(observation)
        if not new and not same_question(kept, observation):
            return failure("question_conflict", f"question_id {kept.meta.get('question_id')!r} was already used "
                           f"for another question (observation {kept.id}); use a new question_id for a new question",
                           observation=kept.id)
        return {"ok": True, "observation": kept.to_event(), "question_id": kept.meta.get("question_id"),
                "new": new}, True

    def _fold_decide(self, arguments: dict) -> tuple[dict, bool]:
        document, code = save_decision(self.store_dir, arguments["item"], arguments["option"],
                                       arguments.get("digest"), arguments.get("note"), self.now(), via="mcp")
        return document, code == 0

    def _fold_answers(self, arguments: dict) -> tuple[dict, bool]:
        since = arguments.get("since")
        if since is not None and parse_instant(since) is None:
            return failure("invalid_arguments", f"since must be an ISO 8601 instant with an offset, like "
                           f"2026-10-09T18:00:00+08:00; got {since!r}", field="since")
        state = self.store.state_document(now=self.now(), not_active=0).document
        with open_host_db(self.store_dir) as db:
            answers = question_answers(db, state, agent=arguments.get("agent"),
                                       question_id=arguments.get("question_id"), since=arguments.get("since"))
        return {"answers": answers}, True

    def _fold_report(self, arguments: dict) -> tuple[dict, bool]:
        now = self.now()
        try:
            observation = report_observation(arguments, source=self.source, now=now)
        except ReportProblem as problem:
            return failure("invalid_arguments", str(problem), field=problem.field)
        with open_host_db(self.store_dir) as db:
            if not db.observations_by_id([observation.id]):  # a retry of a kept report is answered, never counted
                refused = self.quota.refusal(db, source=self.source, agent=observation.sender or "", now=now)
                if refused is not None:
                    return {"ok": False, "errors": [refused]}, False
            kept, new = db.add_once(observation)
        if not new and not same_report(kept, observation, at_given="at" in arguments):
            return failure("report_conflict", f"report_id {arguments.get('report_id')!r} was already used for "
                           f"another report (observation {kept.id}); use a new report_id for a new report",
                           observation=kept.id)
        return {"ok": True, "observation": kept.to_event(), "new": new}, True


@functools.cache
def _validator(name: str):
    from jsonschema import Draft202012Validator

    entry = catalogue.tool(name)
    if entry is None:  # asked only for the tool being called
        raise KeyError(f"no tool {name!r}")
    return Draft202012Validator(entry.schema())


def _schema_problems(entry: catalogue.Tool, arguments: object) -> list[dict]:
    """The arguments' departures from the tool's JSON Schema, one error record each."""
    if not isinstance(arguments, dict):
        return [{"code": "invalid_arguments", "message": "the arguments must be a JSON object", "field": None}]
    validator = _validator(entry.name)
    problems = []
    for error in sorted(validator.iter_errors(arguments), key=lambda e: list(e.absolute_path)):
        where = ".".join(str(part) for part in error.absolute_path) or None
        if error.validator == "required" or error.validator == "additionalProperties":
            where = None
        message = error.message if where is None else f"{where}: {error.message}"
        problems.append({"code": "invalid_arguments", "message": message, "field": where})
    return problems
