"""An agent's question → the observation a work-log ``question`` line would have been (contract §3.6, §10).

``question_observation`` writes ``fold_ask``'s arguments as a work-log
``question`` record and reads it back with the ``worklog`` adapter's own
reader, so the frame is checked by the kernel's rules and the observation
comes out exactly as for a line of a log file; on top of that: source
``[mcp] source``, ``meta.via = "mcp"``. Id: ``<source>:question/<question_id>``
(the agent's id, or a digest of the question and the instant it came), so a
retry with the same question_id is the same observation.
"""

from __future__ import annotations

import hashlib
import json

from fold_adapters.worklog.formats import read_record
from fold_adapters.worklog.question import QuestionProblem, read_question
from fold_core.observation import Observation, bound_text

__all__ = ["AskProblem", "question_observation", "same_question"]

CHANNEL = "worklog"
FRAME_KEYS = ("question", "options", "recommended", "basis", "fallback", "decide_by", "context")


class AskProblem(ValueError):
    """A question that cannot be an observation: ``field`` names the argument, ``code`` the error."""

    def __init__(self, message: str, field: str, code: str = "invalid_arguments") -> None:
        super().__init__(message)
        self.field, self.code = field, code


def question_observation(arguments: dict, *, source: str, now: str) -> Observation:
    """The observation of one ``fold_ask`` call (arguments already checked against the tool's schema)."""
    line = {"type": "question", "agent": arguments["agent"], "at": now,
            **{key: arguments[key] for key in FRAME_KEYS if arguments.get(key) is not None}}
    question_id = arguments.get("question_id")
    if question_id is None:
        digest = json.dumps([line, now], sort_keys=True, ensure_ascii=False).encode("utf-8")
        question_id = "q-" + hashlib.sha256(digest).hexdigest()[:12]
    line["id"] = question_id
    try:
        read_question(line)  # the frame's problems, located by the argument at fault
    except QuestionProblem as problem:
        code = "unknown_option" if str(problem).startswith("unknown_option") else "invalid_arguments"
        raise AskProblem(str(problem), problem.field, code) from None
    record = read_record(json.dumps(line, ensure_ascii=False))
    if record.problem or not record.agent:
        raise AskProblem(record.problem or "agent must hold visible characters", "agent")
    meta = {**record.meta, "via": "mcp"}
    return Observation(id=f"{source}:question/{question_id}", source=source, channel=CHANNEL, sender=record.agent,
                       at=record.at, observed_at=now, title=record.task, text=bound_text(record.text),
                       thread=f"question:{question_id}", meta=meta)


def same_question(kept: Observation, given: Observation) -> bool:
    """Whether a retry asks what the kept question asks (when it came aside)."""
    ignore = {"observed_at", "at"}
    return kept.model_dump(exclude=ignore) == given.model_dump(exclude=ignore)
