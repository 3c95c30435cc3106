"""An agent's question in a work log: a JSON Lines record ``{"type": "question", …}`` (contract §3.6, §10).

::

    {"type": "question", "id": "q-17", "agent": "codex", "at": "2026-12-08T09:00:00+08:00",
     "question": "先临时缓解，还是本周迁移到按字段合并？",
     "options": [{"id": "mitigate", "label": "先临时缓解", "consequence": "今天恢复登录；下周仍需迁移"},
                 {"id": "migrate", "label": "本周迁移"}],
     "recommended": "mitigate", "basis": "…", "fallback": {"option": "mitigate", "summary": "…"},
     "decide_by": "2026-12-11T18:00:00+08:00", "context": "free text, up to 2000 characters"}

``id`` (the agent's own id of the question, ``^[A-Za-z0-9._:-]{1,128}$``),
``agent``, ``question`` and ``options`` are required; ``at`` as for every
record. The frame keys (``question``, ``options``, ``recommended``,
``basis``, ``fallback``, ``decide_by``, and optionally ``evidence`` /
``gap``, ``evidence`` defaulting to ``complete``: the asker states its own
terms) are checked with the kernel's frame rules
(``fold_core.kernel.decision.check_decision``); a line that breaks one is
refused whole with the first problems as its why, never half read. Other
keys are ignored, as in any record.

What the observation carries: ``title`` = the question, ``text`` = the
question, its options with their consequences, the recommendation, the
fallback, ``decide_by`` and the context in words (for an editor that reads
only text), ``thread`` = ``question:<id>``, and ``meta``: ``type:
"question"``, ``question_id``, ``decision`` (the checked frame, as a
``needs-you`` item carries it) and ``context``.
"""

from __future__ import annotations

import re
from typing import Any

from fold_adapters.text.clean import clean_text
from fold_core.kernel.decision import check_decision
from fold_core.observation import bound_text

__all__ = ["CONTEXT_LIMIT", "QUESTION_ID", "TASK_LIMIT", "QuestionProblem", "read_question"]

QUESTION_ID = re.compile(r"[A-Za-z0-9._:-]{1,128}")
CONTEXT_LIMIT = 2000
TASK_LIMIT = 300  # as a report line's task (its title)
FRAME_KEYS = ("question", "options", "recommended", "basis", "fallback", "decide_by", "evidence", "gap")


class QuestionProblem(ValueError):
    """Why a question line cannot be read; ``field`` names the key at fault."""

    def __init__(self, message: str, field: str) -> None:
        super().__init__(message)
        self.field = field


def read_question(value: dict[str, Any]) -> tuple[str, str, dict]:
    """``(title, text, meta)`` of a question record; raises ``QuestionProblem``."""
    question_id = value.get("id")
    if not isinstance(question_id, str) or QUESTION_ID.fullmatch(question_id) is None:
        raise QuestionProblem('a question needs "id": the agent\'s own id of it, 1–128 of A-Z a-z 0-9 . _ : -',
                              "id")
    agent = value.get("agent")
    if not isinstance(agent, str) or not agent.strip():
        raise QuestionProblem('a question needs "agent": who asks (a non-empty string)', "agent")
    raw = {key: value[key] for key in FRAME_KEYS if key in value}
    raw.setdefault("evidence", "complete")
    frame, problems = check_decision(raw, "$")
    if problems or frame is None:
        code, field, message, _ = problems[0]
        shown = "; ".join(p[2].replace("$.", "") for p in problems[:3])
        more = f" (and {len(problems) - 3} more)" if len(problems) > 3 else ""
        raise QuestionProblem(f"{'unknown_option' if code == 'unknown_option' else 'invalid_field'}: {shown}{more}",
                              field.replace("$.", ""))
    context = value.get("context")
    if context is not None and not isinstance(context, str):
        raise QuestionProblem('"context" must be a string', "context")
    context = bound_text(clean_text(context), CONTEXT_LIMIT) if context else None
    meta: dict[str, Any] = {"type": "question", "question_id": question_id, "decision": frame}
    if context:
        meta["context"] = context
    task = value.get("task")
    if isinstance(task, str) and task.strip():  # what the agent works on: the item's name, as for a report line
        meta["task"] = bound_text(clean_text(task), TASK_LIMIT)
    return frame["question"], _words(frame, context), meta


def _words(frame: dict, context: str | None) -> str:
    """The frame in plain lines, for a reader of the text alone."""
    lines = [frame["question"], "Options:"]
    for option in frame["options"]:
        consequence = f" — {option['consequence']}" if option.get("consequence") else ""
        lines.append(f"- {option['id']}: {option['label']}{consequence}")
    if frame.get("recommended"):
        basis = f" ({frame['basis']})" if frame.get("basis") else ""
        lines.append(f"Recommended: {frame['recommended']}{basis}")
    if frame.get("fallback"):
        fallback = frame["fallback"]
        option = f" [{fallback['option']}]" if fallback.get("option") else ""
        lines.append(f"Without an answer: {fallback['summary']}{option}")
    if frame.get("decide_by"):
        lines.append(f"Decide by: {frame['decide_by']}")
    if context:
        lines.append(f"Context: {context}")
    return "\n".join(lines)
