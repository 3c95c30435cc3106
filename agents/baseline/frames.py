"""The baseline editor's decision frames (contract §3.6): raised from agents' questions and mail, moved on
once answered.

``Frames`` is the part of the baseline planner that writes and clears frames:

* **an agent's question** (an observation whose ``meta`` holds ``type:
  "question"``, ``question_id``, ``decision`` — the frame as the agent gave
  it — and ``context``: a work-log ``question`` line or MCP ``fold_ask``)
  becomes a ``needs-you`` item — the item of its thread, one per question —
  whose frame is the question as asked: the question, the options
  with their ids and words, the recommendation, its basis, the fallback and
  ``decide_by`` and the evidence status are copied verbatim, never
  rewritten (a frame without an evidence status is ``partial``: Fold has
  only the agent's word for it). The weight follows ``decide_by``: within a day
  (or passed) critical, within a week high, later or none normal; the item is
  due at ``decide_by``. A question the kernel would refuse as a frame (an
  option id outside ``[a-z0-9-]{1,24}``, six options) still becomes a
  ``needs-you`` item, without a frame, the reason saying why;
* **a mail that asks the user to choose or to reply by a date**
  (``baseline_choices.mail_frame``) makes its item ``needs-you`` with that
  frame, due at its ``decide_by``;
* **an answer** — feedback ``decide`` with an ``option`` on an item with a
  frame, or ``fallback`` recorded by the host when ``decide_by`` passed —
  moves the item on: the frame is cleared, the summary says what was decided
  (decided is not yet done: the other side still has to hear of it and act),
  the kind becomes ``in-progress`` (``done`` when the choice was to let it
  pass), one step lighter, and a due date that was the frame's
  ``decide_by`` is cleared (that deadline is met). An answer to an earlier frame (another digest)
  leaves the current frame open. Two answers to one frame in one window (a change of mind before the cycle
  ran): the latest stands, the summary states it.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from fold_core.kernel.decision import check_decision
from fold_core.timefmt import parse_instant
from fold_agents.baseline.choices import mail_frame
from fold_agents.baseline.draft import Draft
from fold_agents.baseline.mail import own_words
from fold_agents.baseline.rules import heavier, lighter_by_one, line, thread_item_id, title_line

__all__ = ["Frames", "asked_question"]

_FRAME_KEYS = ("question", "options", "recommended", "basis", "fallback", "decide_by", "evidence", "gap")
_OPTION_KEYS = ("id", "label", "consequence")

_WORDS = {
    "zh": {"title": "{task}：待你决定", "mark": "待你决定", "mark_done": "已决定",
           "summary": "{agent}：{said}", "asked": "{agent} 问：{question}",
           "gap": "只有 {agent} 自己的说法，Fold 未另行核实",
           "reason": "基线规则：{agent} 提问（{id}），原样转为决定框架，选项 id 不变{due}。",
           "reason_due": "；截止 {due}", "reason_bad": "基线规则：{agent} 提问（{id}），但无法作为决定框架（{problem}），按待你处理记录。",
           "mail_reason": "邮件请你选择或在截止前答复，写成决定框架：选项与不答复的后果均取自邮件。",
           "decided": "已决定：{label}；{party}", "party_agent": "待智能体执行", "party_other": "尚未通知对方",
           "fell_back": "无人答复，按默认：{summary}", "decided_reason": "用户已答复决定框架（{option}）；框架清除，事项转入执行。",
           "fell_back_reason": "决定截止已过、无人答复，主机记录按默认处理（{option}）；框架清除。",
           "stale": "这是对旧版决定框架的答复，当前框架仍待决定。", "nothing_open": "条目没有待决定的框架，记录即可。"},
    "en": {"title": "{task}: your decision", "mark": "your decision", "mark_done": "decided",
           "summary": "{agent}: {said}", "asked": "{agent} asks: {question}",
           "gap": "Only {agent}'s own account; Fold has not checked it",
           "reason": "Baseline: {agent} asks ({id}); carried verbatim as a decision frame, option ids kept{due}.",
           "reason_due": "; decide by {due}", "reason_bad": "Baseline: {agent} asks ({id}) but it cannot be a decision "
                                                          "frame ({problem}); recorded as needing you.",
           "mail_reason": "It asks you to choose or reply by a date: a decision frame, its options and what "
                          "happens without an answer taken from the mail.",
           "decided": "Decided: {label}; {party}", "party_agent": "waiting for the agent to act",
           "party_other": "the other side not told yet",
           "fell_back": "No answer in time; fallback: {summary}",
           "decided_reason": "The user answered the decision frame ({option}); frame cleared, the matter moves on.",
           "fell_back_reason": "decide_by passed without an answer; the host recorded the fallback ({option}); "
                               "frame cleared.",
           "stale": "An answer to an earlier version of the frame; the current frame is still open.",
           "nothing_open": "The item has no open frame; noted."},
}


def asked_question(event: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The agent's question an event carries, as ``{"id", "agent", "context"?, "task"?, <frame keys>}``; else None.

    A question observation (a work-log ``question`` line, MCP ``fold_ask``) has ``meta.type: "question"``,
    ``meta.question_id``, ``meta.decision`` (the frame the adapter checked), ``meta.context`` and ``meta.task``."""
    meta = event.get("meta")
    if not isinstance(meta, Mapping) or meta.get("type") != "question" or not isinstance(meta.get("decision"), Mapping):
        return None
    frame = meta["decision"]
    if "question" not in frame:
        return None
    return {**frame, "id": meta.get("question_id"), "agent": event.get("from"), "context": meta.get("context"),
            "task": meta.get("task")}


def _verbatim(question: Mapping[str, Any], gap: str) -> dict:
    """The frame as the agent asked it: its keys copied unchanged (options' own keys only)."""
    frame: dict[str, Any] = {k: question[k] for k in _FRAME_KEYS if question.get(k) is not None}
    if isinstance(frame.get("options"), list):
        frame["options"] = [{k: o[k] for k in _OPTION_KEYS if k in o} if isinstance(o, Mapping) else o
                            for o in frame["options"]]
    if isinstance(frame.get("fallback"), str):  # "what happens without an answer", said in a sentence
        frame["fallback"] = {"summary": frame["fallback"]}
    if "evidence" not in frame:
        frame["evidence"], frame["gap"] = "partial", gap
    return frame


class Frames(Draft):
    """Frames of the baseline planner; see the module's docstring."""

    def said(self, key: str, **values: Any) -> str:
        return _WORDS["zh" if self.words.lang == "zh" else "en"][key].format(**values)

    # -- an agent's question ----------------------------------------------------------------

    def ask(self, event: Mapping[str, Any]) -> bool:
        """Raise an agent's question as a needs-you item with its frame; False when the event asks nothing."""
        question = asked_question(event)
        if question is None:
            return False
        agent = line(question.get("agent") or event.get("from"), 40) or "agent"
        frame, problems = check_decision(_verbatim(question, self.said("gap", agent=agent)[:160]), "decision")
        due = parse_instant(frame.get("decide_by")) if frame else None
        item_id = thread_item_id(dict(event))
        target = (item_id, self.changes[item_id].mode) if item_id in self.changes else \
            self.resolve(item_id, restore=True)
        change = self.change(*(target or (item_id, "new")))
        weight = self._nearness(due)
        change.weight = weight if change.weight is None else heavier(change.weight, weight)
        change.judged = change.weight
        change.kind = "needs-you"
        change.due_at = frame["decide_by"] if frame and due is not None else change.due_at
        # The observation's title is the question itself (the frame holds it): the item is named for the task.
        task = title_line(question.get("task") or agent, 16)
        change.title = line(self.said("title", task=task), 24)
        asked = line(self.said("asked", agent=agent, question=question.get("question")), 200)
        context = line(question.get("context"), 200)
        # The question itself when it fits (the frame holds it whole in any case), else what led to it.
        change.summary = line(asked if len(asked) <= 60 or not context else
                              self.said("summary", agent=agent, said=context), 60)
        asked_id = line(question.get("id"), 40) or "?"
        if frame is not None:
            change.decision, change.frame_set = frame, True
            when = self.said("reason_due", due=self.words.when(due, self.moment)) if due and self.moment else ""
            change.reason = line(self.said("reason", agent=agent, id=asked_id, due=when), 200)
        else:
            change.reason = line(self.said("reason_bad", agent=agent, id=asked_id, problem=problems[0][2]), 200)
        self.cite(change, event)
        self.dispose(event["id"], "used", self.words("used", item=change.id), [change.id])
        return True

    def _nearness(self, due) -> str:
        if due is None or self.moment is None:
            return "normal"
        left = due - self.moment
        return "critical" if left <= timedelta(days=1) else "high" if left <= timedelta(days=7) else "normal"

    # -- a mail asking to choose ------------------------------------------------------------

    def mail_decision(self, event: Mapping[str, Any]) -> dict | None:
        """The frame of a mail (or a work-log line in words) that asks the user to choose or reply by a date
        (``baseline_choices``)."""
        if event.get("channel") not in ("email", "worklog") or asked_question(event) is not None:
            return None
        sent = parse_instant(event.get("at"))
        anchor = sent.astimezone(self.moment.tzinfo) if sent is not None and self.moment is not None \
            and sent <= self.moment else self.moment
        return mail_frame(str(event.get("title") or ""), str(event.get("from") or ""),
                          own_words(str(event.get("text") or ""))[:1200], anchor, self.words.lang)

    def frame_mail(self, event: Mapping[str, Any], frame: dict) -> None:
        """Put the mail's frame on the needs-you item the event was used for (when the plan keeps it)."""
        disposition = self.dispositions.get(event["id"]) or {}
        related = disposition.get("related") or []
        if disposition.get("disposition") != "used" or len(related) != 1:
            return
        item_id = related[0]
        change = self.changes.get(item_id)
        stored = (self.known.active.get(item_id) or {}).get("decision")
        if change is None and stored:
            return  # the item already asks; a confirming message does not reopen it
        if change is None:
            if item_id not in self.known.active or self.known.active[item_id].get("kind") != "needs-you":
                return
            change = self.change(item_id, "patch")
        if change.kind != "needs-you":
            return
        change.decision, change.frame_set = frame, True
        if frame.get("decide_by"):
            change.due_at = frame["decide_by"]
        if event.get("channel") == "worklog":  # an agent asking in words: say so, and what it asks
            agent = line(event.get("from"), 40) or "agent"
            change.title = line(self.said("title", task=title_line(event.get("title"), 16) or agent), 24)
            change.summary = line(self.said("asked", agent=agent, question=frame["question"]), 60)
        said = self.said("mail_reason")
        if said not in (change.reason or ""):
            change.reason = line(f"{change.reason or ''} {said}", 200)

    # -- answers ----------------------------------------------------------------------------

    def answer_frame(self, event: Mapping[str, Any]) -> bool:
        """Move an item on after a ``decide`` (with an option) or a host ``fallback``; False to leave the
        feedback to the plain feedback rules."""
        feedback = event["feedback"]
        meaning = feedback.get("meaning")
        if meaning not in ("decide", "fallback") or (meaning == "decide" and not feedback.get("option")):
            return False
        target = self.resolve(feedback.get("target"), restore=False)
        if target is None:
            return False
        item_id = target[0]
        change = self.changes.get(item_id)
        view = self.known.active[item_id]
        frame = change.decision if change is not None and change.frame_set else view.get("decision")
        again = frame is None and item_id in self.settled  # a change of mind within this window
        if again:
            frame = self.settled[item_id]
        if not isinstance(frame, Mapping):
            if meaning == "decide":
                return False
            self.dispose(event["id"], "used", self.said("nothing_open"), [item_id])
            return True
        digest = feedback.get("digest")
        if isinstance(digest, str) and isinstance(frame.get("digest"), str) and digest != frame["digest"]:
            self.dispose(event["id"], "used", self.said("stale"), [item_id])
            return True
        given = frame.get("fallback")
        fallback: Mapping[str, Any] = given if isinstance(given, Mapping) else {}
        option = feedback.get("option") or fallback.get("option")
        if meaning == "fallback" and not fallback:
            self.dispose(event["id"], "used", self.said("nothing_open"), [item_id])
            return True
        labels = {o.get("id"): o.get("label") for o in frame.get("options") or () if isinstance(o, Mapping)}
        change = self.change(item_id, "patch")
        agent = any(s.get("channel") == "worklog" for s in (view.get("sources") or ()) if isinstance(s, Mapping))
        if meaning == "decide":
            label = line(labels.get(option) or option, 40)
            note = line(feedback.get("note"), 40)
            said = self.said("decided", label=f"{label}（{note}）" if note and self.words.lang == "zh" else
                             f"{label} ({note})" if note else label,
                             party=self.said("party_agent" if agent else "party_other"))
            change.reason = self.said("decided_reason", option=option)
        else:
            said = self.said("fell_back", summary=fallback.get("summary"))
            change.reason = self.said("fell_back_reason", option=option or "-")
        change.summary = line(said, 60)
        change.kind = "done" if option == "let-pass" else "in-progress"
        if not again:  # one step lighter for the decision, not for each answer to it
            change.weight = lighter_by_one(change.weighed(), "low")
        self.settled[item_id] = frame
        change.lowered_reason = change.reason
        change.decision, change.frame_set = None, True
        decide_by, due = parse_instant(frame.get("decide_by")), parse_instant(change.due_at)
        if decide_by is not None and due is not None and decide_by == due:  # the answer's deadline, now met
            change.due_at, change.due_cleared = None, True
        title = str(change.title or view.get("title") or "")
        mark = self.said("mark")
        if title.endswith(mark):
            change.title = line(title[: -len(mark)] + self.said("mark_done"), 24)
        self.cite(change, event, with_quote=False)
        self.dispose(event["id"], "used", self.words("used", item=item_id), [item_id])
        return True
