"""The ``baseline`` editor: deterministic rules, no LLM (contract §9; the default editor).

For the same input (and the same earlier receipts) it always answers the same
object; it reads no clock and does no I/O (``now`` and the state come in the
input). What it does:

* each message is read as mail (``baseline_mail``): promotions, phishing and
  bulk mail are ``noise``; the rest is weighed by what it asks of the user and
  by when (``due_at`` from its dates, read relative to its own date in the
  offset of ``now``);
* one item per new thread (id from the source and the thread key,
  ``baseline_rules.thread_item_id``); a later message of the thread, or a
  message about the same matter without a thread (``baseline_match``),
  updates that item: news (a new kind, a higher weight, a new due date) patches
  it, a confirmation only is ``used`` without a rewrite, a forward or re-send
  without new facts is ``duplicate``, a message older than the item's last
  update never overrides it; a withdrawn item is restored under its old id, a
  merged one followed to its successor;
* decision frames: an agent's question carried verbatim, a mail asking to
  choose or reply by a date, an answered frame moved on (``baseline_frames``);
* feedback, reminders, annotations and reviews: ``baseline_attention``; the
  user's habits with a sender or thread (``user.learned``) move a message one
  step (``baseline_learned``), said in the reason;
* every layer it touches fits its budget (``baseline_plan.fit_budget``):
  finished and fyi items give way first, new items that do not fit share a
  bundle parent (and a bundle inside it when that is full), a needs-you item
  due within 7 days stays at high or above;
* on a receipt: ``item_exists`` (an id older than the not-active window)
  becomes a restore, ``item_merged`` follows ``merged_into``; any other error,
  or the same error again, gives the safe minimal batch (no declarations,
  every event deferred, pending annotations acknowledged).

Every event gets exactly one disposition, and every event cited by a source
``event:<id>`` is ``used`` (§9).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any

from fold_core.plugin_api import AgentBackend, AgentRequest, Reply
from fold_core.timefmt import parse_instant
from fold_agents.baseline.attention import Attention
from fold_agents.baseline.composing import Composing
from fold_agents.baseline.facts import read_facts
from fold_agents.baseline.draft import clean_sources
from fold_agents.baseline.frames import Frames
from fold_agents.baseline.escalation import new_identifier
from fold_agents.baseline.layers import Lifting
from fold_agents.baseline.learned import Learned
from fold_agents.baseline.mail import judge, own_words, plain_claims, read_message
from fold_agents.baseline.match import Matter, advances, matter_of, news_in, resent, same_matter
from fold_agents.baseline.plan import BUNDLE_IDS, fit_budget
from fold_agents.baseline.purpose import Purpose
from fold_agents.baseline.rules import heavier, lighter, line, thread_item_id, title_line
from fold_agents.baseline.words import Words
from fold_agents.baseline.writing import write
from fold_agents.llm.conversation import Clock, skill_language

__all__ = ["BaselineBackend", "propose_baseline"]

# The user's purpose moves a message one step, up to high and down to low (never into or out of noise).
_UP = {"trace": "low", "low": "normal", "normal": "high"}
_DOWN = {"critical": "high", "high": "normal", "normal": "low"}
_REPLY_OR_FORWARD = re.compile(r"^(?:\s*(?:re|fwd?|aw|wg|回复|转发|答复)\s*[:：])+", re.IGNORECASE)


class BaselineBackend(AgentBackend):
    """Deterministic rules; no model, no network."""

    type_name = "baseline"
    uses_llm = False

    def describe(self) -> str:
        return "baseline (deterministic rules, no LLM)"

    def propose(self, request: AgentRequest) -> Reply:
        clock = Clock()
        output = propose_baseline(request.input, skill_language(request.skill),
                                  [c.receipt for c in request.corrections])
        return Reply(output=output, raw=json.dumps(output, ensure_ascii=False), latency_ms=clock.ms,
                     model="baseline")


def propose_baseline(document: Mapping[str, Any], lang: str = "zh", receipts: list | tuple = ()) -> dict:
    """The baseline's §9 output for one input document and the receipts of its earlier attempts."""
    return _Planner(document, Words(lang), receipts).answer()


class _Planner(Frames, Attention, Composing, Lifting):
    def __init__(self, document: Mapping[str, Any], words: Words, receipts: Iterable[Any]) -> None:
        super().__init__(document, words, receipts)
        self.learned = Learned(self.user.get("learned"))
        self.purpose = Purpose(self.user)
        self.habits: dict[str, str] = {}  # event id -> how the user's habits moved it
        self._matters: dict[str, tuple[Matter, Matter]] | None = None
        self._subjects: dict[str, str] = {}  # item id -> the subject of the message that created it in this batch

    # -- the answer -----------------------------------------------------------------

    def answer(self) -> dict:
        if self.refused:
            return self._minimal(sorted(set(self.refused)))
        for event in self.events:
            if event["id"] in self.dispositions:
                continue  # a repeated event id: the host reports it; keep one disposition
            if isinstance(event.get("reminder"), Mapping):
                self.reminder(event)
            elif isinstance(event.get("feedback"), Mapping):
                if not self.answer_frame(event):
                    self.feedback(event)
            elif not self.ask(event):
                self._message(event)
        self.annotate()
        self.review()
        self.lift_parents()
        held = frozenset(item for d in self.dispositions.values() if d["disposition"] == "used"
                         for item in d["related"] if item in self.known.active)
        fit = fit_budget(self.known, self.changes, self.now, self._bundle, held)
        for item_id in fit.demoted:
            self.changes[item_id].lowered_reason = self.words("demote_budget")
        for item_id in fit.dropped:
            for event_id, disposition in self.dispositions.items():
                if item_id in disposition["related"] and disposition["disposition"] == "used":
                    self.dispose(event_id, "deferred", self.words("budget_deferred"), [])
        self._name_bundles(fit.withdrawn)
        declarations = self._declarations(fit.withdrawn)
        dispositions = [self.dispositions[e["id"]] for e in self.events if e["id"] in self.dispositions]
        return {"dispositions": _unique(dispositions),
                "batch": {"declarations": declarations, "acknowledges": list(dict.fromkeys(self.annotations))}}

    def _minimal(self, codes: list[str]) -> dict:
        why = self.words("fallback", codes=", ".join(codes))
        ids = list(dict.fromkeys(e["id"] for e in self.events))
        return {"dispositions": [{"event": i, "disposition": "deferred", "why": why, "related": []} for i in ids],
                "batch": {"declarations": [], "acknowledges": list(dict.fromkeys(a["id"] for a in self.pending))}}

    # -- matters ------------------------------------------------------------------------

    def _same_matter(self, event: Mapping[str, Any]) -> tuple[str, str] | None:
        """An item about the same matter as an event outside its threads: active, withdrawn, or new in this
        batch (a forward read in the same window as its original)."""
        if self._matters is None:
            self._matters = {}
            for item_id, view in self.known.active.items():
                if item_id not in BUNDLE_IDS:
                    quotes = " ".join(str(s.get("quote") or "") for s in view.get("sources") or ())
                    self._matters[item_id] = (matter_of(view.get("title")), matter_of(view.get("summary"), quotes))
            for item_id, entry in self.known.not_active.items():
                self._matters.setdefault(item_id, (matter_of(entry.get("title")), matter_of(None)))
        found = matter_of(event.get("title"), own_words(str(event.get("text") or ""))[:300])
        heading = matter_of(_REPLY_OR_FORWARD.sub("", str(event.get("title") or ""))) if event.get("title") else None
        for item_id, (title, more) in self._matters.items():
            whole = type(title)(title.keys | more.keys, title.topic, title.amounts | more.amounts)
            if (found.keys & whole.keys or found.amounts & whole.amounts or found.topic & whole.topic) and \
                    same_matter(found, whole, heading):
                target = self.resolve(item_id, restore=True)
                if target is not None:
                    return target
        # An item of this batch: only by a shared identifier or the same subject (a forward, a re-send).
        subject = title_line(event.get("title"), 24)
        for change in self.changes.values():
            if change.mode == "new" and change.bundle is None and (
                    subject and subject == self._subjects.get(change.id)
                    or found.keys and found.keys & matter_of(change.title, change.summary, *(
                        str(s.get("quote") or "") for s in change.new_sources)).keys):
                return change.id, "new"
        return None

    # -- messages -------------------------------------------------------------------------

    def _message(self, event: Mapping[str, Any]) -> None:
        verdict = judge(read_message(event, now=self.now, user=self.user))
        lean = None if verdict.noise else self.learned.lean(event)
        if lean is not None and lean.apply(verdict.weight) != verdict.weight:
            verdict = replace(verdict, weight=lean.apply(verdict.weight))
            self.habits[event["id"]] = self.words.habit(lean.direction, lean.by, lean.count)
        aim = None if verdict.noise or verdict.kind == "done" else self.purpose.lean(
            f"{event.get('title') or ''} {event.get('text') or ''}"[:1500], str(event.get("from") or ""))
        if aim is not None:
            weight = _UP.get(verdict.weight, verdict.weight) if aim[0] == "up" else _DOWN.get(verdict.weight, verdict.weight)
            if weight != verdict.weight:
                verdict = replace(verdict, weight=weight)
                said = self.words(f"purpose_{aim[0]}", topic=self.words.topic(aim[1]))
                self.habits[event["id"]] = f"{self.habits[event['id']]} {said}" if event["id"] in self.habits else said
        frame = None if verdict.noise else self.mail_decision(event)
        read = verdict
        if frame is not None:  # a choice or a reply by a date: the user's to decide, due when the mail says
            verdict = replace(verdict, kind="needs-you", explicit_kind=True,
                              due_at=frame.get("decide_by") or verdict.due_at,
                              weight=verdict.weight if verdict.kind == "needs-you" else "normal",
                              rule=verdict.rule if verdict.kind == "needs-you" else
                              "deadline" if frame.get("decide_by") else "request")
        self._read(event, verdict)
        if frame is not None:
            self.frame_mail(event, frame)
            related = (self.dispositions.get(event["id"]) or {}).get("related") or []
            if read.kind != "needs-you" and related and related[0] in self.changes:
                # The message's own facts say it best ("to change: reply before 12 October"); the frame asks.
                summary = self.written(event, read)[1]
                self.changes[related[0]].summary = summary or self.changes[related[0]].summary

    def _read(self, event: Mapping[str, Any], verdict) -> None:
        """Fold one judged message into its item: new, update, settled, or noise."""
        thread_id = thread_item_id(dict(event))
        target = (thread_id, self.changes[thread_id].mode) if thread_id in self.changes else \
            self.resolve(thread_id, restore=True)
        if verdict.noise:
            related = [target[0]] if target and target[1] == "patch" else []
            self.dispose(event["id"], "noise", self.words("noise", rule=self.words.rule(verdict.rule)), related)
            return
        by_thread = target is not None
        target = target or self._same_matter(event)
        escalated = self.escalation(event, verdict, target[0] if target else None)
        if escalated is not None:  # a request naming something new (a CVE) inside a result's thread: its own item
            ident, item_id = escalated
            found = self.resolve(item_id, restore=True) or ((item_id, self.changes[item_id].mode)
                                                            if item_id in self.changes else None)
            if found is None:
                self._new(event, verdict, item_id, ident=ident)
            else:
                self._update(event, verdict, *found)
            return
        waiting = self._waited_for(event, verdict, target[0] if target else None)
        if target is None:
            if waiting:
                for item_id in waiting:  # one piece of evidence updates every item that waits for it
                    self._advance(event, verdict, item_id)
            else:
                self._new(event, verdict, thread_id)
            return
        item_id, mode = target
        if mode in ("patch", "new") and self._settled(event, verdict, item_id, by_thread):
            return
        self._update(event, verdict, item_id, mode)
        for other in waiting:  # … and the other items waiting for what it brings
            self._advance(event, verdict, other, related=True)

    def _waited_for(self, event: Mapping[str, Any], verdict, target: str | None = None) -> list[str]:
        """The open items this message advances without being their matter: a result or notice (not a
        request) whose subject names what an item waits for ("账户流水已生成" for a visa item missing "银行
        流水"). One piece of evidence updates every item it touches (the visa and the mortgage application that
        both wait for the statement), besides its own item (``target``) if it has one."""
        if verdict.kind == "needs-you" or not event.get("title"):
            return []
        found = []
        for item_id, view in self.known.active.items():
            if item_id in BUNDLE_IDS or item_id == target or item_id in self.changes \
                    or view.get("kind") not in ("needs-you", "in-progress"):
                continue
            said = " ".join([str(view.get("title") or ""), str(view.get("summary") or "")]
                            + [str(s.get("quote") or "") for s in view.get("sources") or ()])
            if advances(str(event.get("title")), said):
                found.append(item_id)
        return found

    def _advance(self, event: Mapping[str, Any], verdict, item_id: str, related: bool = False) -> None:
        """Patch the item the message advances: the new fact in its summary, its kind, weight and due kept.
        ``related``: the event already has its own item; it is related to this one too."""
        change = self.change(item_id, "patch")
        view = self.known.active[item_id]
        facts = read_facts(event, own_words(str(event.get("text") or "")), self.moment)
        facts = replace(facts, key=facts.topic or facts.key, key_first=False)  # its subject says what arrived
        change.summary = write(facts, verdict.rule, str(view.get("kind")), view.get("due_at"), self.moment)[1] or None
        change.reason = self.words("advanced", item=item_id)
        self.cite(change, event)
        known = self.dispositions.get(event["id"])
        if known is not None and known["disposition"] == "used":
            if item_id not in known["related"]:
                known["related"].append(item_id)
            return
        self.dispose(event["id"], "used", self.words("used", item=item_id), [item_id])

    def _settled(self, event: Mapping[str, Any], verdict, item_id: str, by_thread: bool) -> bool:
        """Dispose of an event that changes nothing on its item (duplicate, late); True when done.

        The item is an active one (its stored view and what this batch plans for it) or one this batch
        creates."""
        view = self.known.active.get(item_id, {})
        change = self.changes.get(item_id)
        sources = clean_sources(view.get("sources")) + (change.new_sources if change else [])
        kind = change.kind if change and change.kind else view.get("kind")
        ref = f"event:{event['id']}"
        if any(s["ref"] == ref for s in clean_sources(view.get("sources"))):
            self.dispose(event["id"], "duplicate", self.words("duplicate"), [item_id])
            return True
        said = " ".join(str(part or "") for part in [view.get("title"), view.get("summary"), view.get("due_at")]
                        + ([change.title, change.summary, change.due_at] if change else [])
                        + [s.get("quote") for s in sources[-8:]])  # the latest sources say what is known now
        own = f"{event.get('title') or ''} {own_words(str(event.get('text') or ''))}"
        if not by_thread and not news_in(own, said) and resent(str(event.get("title") or ""), own, said) and (
                not verdict.explicit_kind or verdict.kind == kind):
            self.dispose(event["id"], "duplicate", self.words("duplicate_matter", item=item_id), [item_id])
            return True
        read = [parse_instant(s.get("observed_at")) for s in sources]
        seen = [t for t in read if t is not None]
        sent, basis = parse_instant(event.get("at")), max(seen) if seen else parse_instant(view.get("updated_at"))
        if sent is not None and basis is not None and sent < basis and verdict.kind != kind:
            self.dispose(event["id"], "used", self.words("late", item=item_id), [item_id])
            return True
        return False

    def _new(self, event: Mapping[str, Any], verdict, item_id: str, ident: str | None = None) -> None:
        change = self.change(item_id, "new")
        change.weight, change.kind, change.due_at = verdict.weight, verdict.kind, verdict.due_at
        change.judged = "critical" if verdict.pressing else verdict.weight
        change.title, change.summary = self.written(event, verdict, ident)
        self._subjects[item_id] = title_line(event.get("title"), 24)
        change.title = change.title or line(event.get("from"), 24) or self.words("untitled")
        if verdict.kind in ("in-progress", "needs-you"):
            change.title = line(plain_claims(change.title), 24) or change.title
            change.summary = line(plain_claims(change.summary), 60) or None if change.summary else None
        change.reason = self._reason("new", verdict, event)
        change.stale_after = self.ageing(event, change.kind)
        self.cite(change, event)
        self.dispose(event["id"], "used", self.words("used", item=item_id), [item_id])

    def _update(self, event: Mapping[str, Any], verdict, item_id: str, mode: str) -> None:
        current = self.changes.get(item_id)
        view = self.known.active.get(item_id, {})
        weight = current.weight if current else view.get("weight")
        kind = current.kind if current else view.get("kind")
        due = current.due_at if current else view.get("due_at")
        moved_on = verdict.explicit_kind and kind is not None and verdict.kind != kind
        stronger = weight is None or heavier(weight, verdict.weight) == verdict.weight and weight != verdict.weight
        stronger = stronger and not (kind == "done" and not moved_on)  # a finished matter never rises
        new_due = verdict.due_at is not None and verdict.kind == "needs-you" and verdict.due_at != due
        said = " ".join(str(part or "") for part in (view.get("title"), view.get("summary"), current and current.summary)
                        + tuple(s.get("quote") for s in view.get("sources") or ()))
        # A result with a number the item does not state yet (a benchmark's figure) is news, not a confirmation.
        # … and so is an escalation naming something the item does not (a CVE the agent found).
        own = own_words(str(event.get("text") or ""))
        figures = verdict.kind != "needs-you" and news_in(own, said) or new_identifier(own[:1500], said) is not None
        if mode != "restore" and not (moved_on or stronger or new_due or figures):
            self.dispose(event["id"], "used", self.words("confirms", item=item_id), [item_id])
            return
        change = self.change(item_id, mode)
        if moved_on or stronger or change.weight is None:
            # a matter that is finished now never rises: it keeps its weight or goes to the result's, if lighter
            finished = verdict.kind == "done" and verdict.explicit_kind and isinstance(weight, str)
            change.weight = lighter(str(weight), verdict.weight) if finished else verdict.weight
            change.judged = "critical" if verdict.pressing else change.weight
        change.kind = verdict.kind if (verdict.explicit_kind or change.kind is None) else change.kind
        if verdict.due_at is not None and verdict.kind == "needs-you":
            change.due_at = verdict.due_at
        title, summary = self.written(event, replace(verdict, kind=change.kind or verdict.kind))
        if summary and change.kind in ("in-progress", "needs-you"):
            summary = line(plain_claims(summary), 60)
        if summary:
            change.summary = summary
        if moved_on and mode in ("patch", "new") and title:  # the old title no longer says where it stands
            change.title = title
            if change.title and change.kind in ("in-progress", "needs-you"):
                change.title = line(plain_claims(change.title), 24) or change.title
        key = "restore" if mode == "restore" else ("progressed" if moved_on else "update")
        change.reason = self._reason(key, verdict, event)
        change.stale_after = self.ageing(event, change.kind) or change.stale_after
        if moved_on:
            change.lowered_reason = change.reason
        self.cite(change, event)
        self.dispose(event["id"], "used", self.words("used", item=item_id), [item_id])

    def _reason(self, key: str, verdict, event: Mapping[str, Any]) -> str:
        rule = self.words.rule(verdict.rule)
        due = parse_instant(verdict.due_at) if verdict.due_at else None
        if due is not None and self.moment is not None and key in ("new", "update"):
            said = self.words(f"{key}_due", rule=rule, due=self.words.when(due, self.moment),
                              left=self.words.left(due, self.moment))
        else:
            said = self.words(key, rule=rule)
        habit = self.habits.get(event["id"])
        return line(f"{said} {habit}", 200) if habit else said


def _unique(dispositions: list[dict]) -> list[dict]:
    seen, kept = set(), []
    for disposition in dispositions:
        if disposition["event"] not in seen:
            seen.add(disposition["event"])
            kept.append(disposition)
    return kept
