"""Push notifications through Apprise, type ``push`` (contract §12, docs/consumers.md).

Policy (per instance): an item is *eligible* when its weight is at least
``min_weight`` or its kind is one of ``kinds``. An eligible item gets a
notification per **material delta** (``fold_consumers.push_delta``): created,
kind → ``needs-you``, weight raised, due changed, restored, a new or changed
decision frame, a title or summary change at ``facts_from`` or above — each
compared with what was already notified or acknowledged, so the same facts
never go twice. Beside the records, the clock and the sources' health make
notifications too (``fold_consumers.push_watch``): a ``due_at`` or
``decide_by`` within ``remind_before`` (once per deadline value), a source
failing for ``alert_after`` and its recovery (once each). The user's
``ack``, ``snooze`` or answer on an item (``context.feedback``) silences
the facts it saw (bound to the revision it was given on, else its time).

Delivery: notifications wait in an outbox kept in the consumer's durable
memory (one value, written in one transaction with the facts they were
computed from). Interrupts (decision frames, ``critical`` items, deadlines,
failing sources — or the instance's ``interrupt_for``) go at once; with
``digest_at`` the others go as one digest at those local times. During
``quiet_hours`` nothing is sent — except a decision whose ``decide_by``
would pass before the quiet hours end — and what was held goes out
afterwards as **one digest**. A notification whose item is no longer active
when it would be sent is dropped and logged; one superseded before it went
out is replaced: only the latest facts go. Each Apprise URL is sent to
separately and remembered per notification, so a retry never repeats a
target that already got it. A failed send stays in the outbox, is recorded
and makes ``deliver`` raise, so the framework retries with backoff; the type
asks for idle calls, so held digests, deadlines and failed sends go out
even when no new record comes.

Exactly once is impossible: a crash **between** a successful send and the
write that records it sends that one notification again after the restart
(at most one duplicate per target). A clean restart sends nothing twice.
Apprise runs in a child process per notification (``fold_consumers.push_send``).
Every send is noted in ``ledger`` (kept 400 days) for the attention figures.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from datetime import timedelta
from typing import Any, Callable, ClassVar

from fold_core.hookspecs import hookimpl
from fold_core.plugin_api import Consumer, ConsumerContext
from fold_core.settings import env_value
from fold_core.store.faults import crash_at
from fold_core.timefmt import instant

from fold_consumers.items import record_changes, text_language, walk_items, weight_rank
from fold_consumers.push_delta import ITEM_RULES, changes, filter_known, material_facts, rules_of, unchanged
from fold_consumers.push_send import send
from fold_consumers.push_settings import PushSettings
from fold_consumers.push_text import digest, single
from fold_consumers.push_watch import Watch, in_quiet_hours, last_slot, quiet_end

__all__ = ["PushConsumer", "PushFailed", "PushSettings", "entry_classes", "fold_consumer_types", "in_quiet_hours"]

MEMORY_KEY = "push"
LOG_KEEP = 50
LEDGER_DAYS = 400
VERSIONS_KEEP = 8
FORGET_DAYS = 90  # a restore after this long is told as if new
ACK_MEANINGS = ("ack", "snooze", "decide")


class PushFailed(Exception):
    """Some notifications could not be sent; they stay in the outbox."""


def entry_classes(entry: Mapping[str, Any]) -> set[str]:
    """Which interrupt classes an outbox entry falls in: decision, critical, deadline, source."""
    classes = set()
    if entry.get("source") is not None:
        classes.add("source")
    if entry.get("decision") is not None:
        classes.add("decision")
    if entry.get("weight") == "critical":
        classes.add("critical")
    if "deadline" in entry.get("rules", ()):
        classes.add("deadline")
    return classes


class _Memory:
    """The consumer's durable memory as attributes (one JSON value under ``push``)."""

    FIELDS = ("seq", "current", "known", "versions", "outbox", "log", "ledger", "deadlines", "sources",
              "feedback_seq")

    def __init__(self, saved: Mapping[str, Any]) -> None:
        old = saved.get("facts") if isinstance(saved.get("facts"), Mapping) else None
        self.seq: int = saved.get("seq", (old or {}).get("seq", 0))
        self.current: dict[str, dict] = saved.get("current") or {
            item: material_facts(facts) for item, facts in ((old or {}).get("items") or {}).items()}
        self.known: dict[str, dict] = dict(saved.get("known") or {})
        self.versions: dict[str, list] = dict(saved.get("versions") or {})
        self.outbox: list[dict] = list(saved.get("outbox") or [])
        self.log: list[dict] = list(saved.get("log") or [])
        self.ledger: list[dict] = list(saved.get("ledger") or [])
        self.deadlines: dict[str, str] = dict(saved.get("deadlines") or {})
        self.sources: dict[str, dict] = dict(saved.get("sources") or {})
        self.feedback_seq: int = saved.get("feedback_seq", 0)

    def to_json(self) -> dict:
        return {name: getattr(self, name) for name in self.FIELDS}

    def note(self, now: str, **entry: Any) -> None:
        self.log.append({"at": now, **entry})
        del self.log[:-LOG_KEEP]


class PushConsumer(Consumer):
    """Sends a notification per material delta of an eligible item, deadline and source alert."""

    type_name: ClassVar[str] = "push"
    shares_records: ClassVar[bool] = True  # reads records, never changes them (no copy needed)
    Settings: ClassVar[type[PushSettings]] = PushSettings
    settings: PushSettings
    idle_calls: ClassVar[bool] = True

    def eligible(self, image: Mapping[str, Any]) -> bool:
        settings = self.settings
        if settings.min_weight is not None and weight_rank(image.get("weight")) >= weight_rank(settings.min_weight):
            return True
        return image.get("kind") in settings.kinds

    def begin(self, context: ConsumerContext) -> None:
        document = context.state.document
        memory = _Memory({"seq": document.get("event_seq", 0),
                          "current": {view["id"]: material_facts(view) for view, _ in walk_items(document)}})
        # The items already there are what the user starts from: no notification for them as they are.
        memory.known = {item: {**facts, "revision": document.get("revision", 0)}
                        for item, facts in memory.current.items() if self.eligible(facts)}
        memory.feedback_seq = max((int(entry.get("seq") or 0) for entry in context.feedback), default=0)
        context.memory[MEMORY_KEY] = memory.to_json()

    def deliver(self, records: Sequence[Mapping[str, Any]], context: ConsumerContext) -> None:
        state = _Memory(context.memory.get(MEMORY_KEY) or {})
        for record in records:
            if record["event_seq"] <= state.seq:
                continue  # handed over again (at least once): already counted
            for change in record_changes(record):
                self._change(state, record, change.op, change.image, context)
            state.seq = record["event_seq"]
        self._acknowledged(state, context)
        watch = Watch(self.settings, context, state.deadlines, state.sources)
        for found in watch.deadlines(lambda view: self.eligible(view)):
            self._deadline(state, found, context)
        for found in watch.sources():
            state.outbox.append(self._entry(state, context, **found))

        def save() -> None:
            context.memory[MEMORY_KEY] = state.to_json()

        # Superseded stays silent: an item no longer active by now is not announced.
        gone = [entry["key"] for entry in state.outbox
                if entry.get("item") is not None and context.state.item(entry["item"]) is None]
        if gone:
            state.outbox = [entry for entry in state.outbox if entry["key"] not in gone]
            state.note(context.now, keys=gone, ok=None, dropped="no longer active")
        cutoff = instant(context.now) - timedelta(days=LEDGER_DAYS)
        state.ledger = [entry for entry in state.ledger if instant(entry["at"]) >= cutoff]
        self._forget(state, context)
        save()
        crash_at("push_queued")  # tests: a crash after the outbox was written, before any send
        if state.outbox:
            _Sender(self, state, save, context).flush()

    # -- what goes into the outbox ------------------------------------------------------------

    def _change(self, state: _Memory, record: Mapping[str, Any], op: str, image: Mapping[str, Any],
                context: ConsumerContext) -> None:
        item = image["id"]
        after = material_facts(image)
        before = state.current.get(item)
        versions = state.versions.setdefault(item, [])
        versions.append([record.get("revision"), record.get("at"), after])
        del versions[:-VERSIONS_KEEP]
        if image.get("status", "active") != "active":
            state.current.pop(item, None)  # withdrawn or merged: silent (the versions stay for a restore)
            return
        state.current[item] = after
        if not self.eligible(image):
            return
        rules = rules_of(op, before, after, self.settings.facts_from)
        pending = next((entry for entry in state.outbox if entry.get("item") == item and not entry["sent_to"]
                        and "deadline" not in entry["rules"]), None)
        base = pending["base"] if pending is not None else state.known.get(item)
        if pending is not None:  # superseded before it went out: only the latest facts go
            rules = [rule for rule in ITEM_RULES if rule in set(rules) | set(pending["rules"])]
            for whole in ("created", "restored"):  # a new or restored item is told with its latest facts
                if whole in rules:
                    rules = [whole]
                    break
            state.outbox.remove(pending)
        rules = filter_known(rules, base, after)
        if not rules:
            if pending is not None:
                if base is None:
                    state.known.pop(item, None)
                else:
                    state.known[item] = base
                state.note(context.now, keys=[pending["key"]], ok=None, dropped="back to the facts notified")
            return
        changed = changes(rules, base if base is not None else before, after)
        state.outbox.append(self._entry(
            state, context, key=f"{item}@{record['event_seq']}", item=item, rules=rules, image=image, after=after,
            base=base, changed=changed, event_seq=record["event_seq"], revision=record.get("revision")))
        state.known[item] = {**after, "revision": record.get("revision")}

    def _deadline(self, state: _Memory, found: dict, context: ConsumerContext) -> None:
        item = found["item"]
        pending = next((entry for entry in state.outbox if entry.get("item") == item and not entry["sent_to"]),
                       None)
        if pending is not None and "deadline" not in pending["rules"]:
            pending["rules"].append("deadline")  # one notification says both
            pending["deadline"] = found["deadline"]
            pending["mode"] = self._mode(pending)
            return
        view = found["view"]
        after = material_facts(view)
        state.outbox.append(self._entry(
            state, context, key=found["key"], item=item, rules=["deadline"], image=view, after=after,
            base=state.known.get(item), changed=[], deadline=found["deadline"],
            event_seq=context.state.event_seq, revision=context.state.revision))

    def _entry(self, state: _Memory, context: ConsumerContext, *, key: str, rules: list[str],
               item: str | None = None, image: Mapping[str, Any] | None = None, after: dict | None = None,
               base: dict | None = None, changed: list | None = None, **extra: Any) -> dict:
        image = image or {}
        language = text_language(f"{image.get('title') or ''}{image.get('summary') or ''}", context.language) \
            if image else (context.language if context.language in ("zh", "en") else "en")
        entry = {"key": key, "item": item, "rules": rules, "title": image.get("title"),
                 "summary": image.get("summary"), "weight": image.get("weight"), "kind": image.get("kind"),
                 "due_at": image.get("due_at"), "decision": (after or {}).get("decision"), "after": after,
                 "base": base, "changes": changed or [], "unchanged": unchanged(changed or [], after) if after else {},
                 "language": language, "queued_at": context.now, "held": False, "sent_to": [], "attempts": 0,
                 "last_error": None, "event_seq": extra.pop("event_seq", None), "revision": extra.pop("revision", None),
                 **extra}
        entry["mode"] = self._mode(entry)
        return entry

    def _mode(self, entry: Mapping[str, Any]) -> str:
        if self.settings.digest_at is None or entry_classes(entry) & set(self.settings.interrupt_for):
            return "interrupt"
        return "digest"

    @staticmethod
    def _forget(state: _Memory, context: ConsumerContext) -> None:
        """Items gone (withdrawn, merged) for ``FORGET_DAYS``: their versions and notified facts are dropped."""
        cutoff = instant(context.now) - timedelta(days=FORGET_DAYS)
        for item in [item for item, versions in state.versions.items() if item not in state.current
                     and (not versions or not versions[-1][1] or instant(versions[-1][1]) < cutoff)]:
            del state.versions[item]
            state.known.pop(item, None)
        for item in [item for item in state.known if item not in state.current and item not in state.versions]:
            del state.known[item]

    def _acknowledged(self, state: _Memory, context: ConsumerContext) -> None:
        """An ack, snooze or answer silences the facts it saw: they are known, their pending entries dropped."""
        for feedback in sorted(context.feedback, key=lambda entry: int(entry.get("seq") or 0)):
            seq = int(feedback.get("seq") or 0)
            if seq <= state.feedback_seq:
                continue
            state.feedback_seq = seq
            item = feedback.get("target")
            if feedback.get("meaning") not in ACK_MEANINGS or not isinstance(item, str):
                continue
            seen = _seen(state.versions.get(item) or [], feedback) or (
                {**state.current[item], "revision": None} if item in state.current else None)
            if seen is None:
                continue
            known = state.known.get(item)
            if known is None or _newer(seen, known):
                state.known[item] = seen
            silenced = [entry for entry in state.outbox if entry.get("item") == item and not entry["sent_to"]
                        and entry.get("after") is not None and "deadline" not in entry["rules"]
                        and not filter_known(entry["rules"], seen, entry["after"])]
            if feedback.get("meaning") == "decide" and (seen.get("decision") or {}).get("decide_by"):
                Watch.mark_answered(state.deadlines, item, seen["decision"]["decide_by"])
                silenced += [entry for entry in state.outbox if entry.get("item") == item and not entry["sent_to"]
                             and (entry.get("deadline") or {}).get("field") == "decide_by"]
            if silenced:
                keys = {entry["key"] for entry in silenced}
                state.outbox = [entry for entry in state.outbox if entry["key"] not in keys]
                state.note(context.now, keys=sorted(keys), ok=None,
                           dropped=f"acknowledged ({feedback.get('meaning')} {feedback.get('id')})")


def _seen(versions: list, feedback: Mapping[str, Any]) -> dict | None:
    """The item's facts the feedback was given on: at its revision when it names one, else at its time."""
    revision = feedback.get("revision")
    chosen = None
    for version_revision, at, facts in versions:
        if isinstance(revision, int) and isinstance(version_revision, int):
            if version_revision <= revision:
                chosen = {**facts, "revision": version_revision}
        elif at and feedback.get("at") and instant(at) <= instant(feedback["at"]):
            chosen = {**facts, "revision": version_revision}
    return chosen


def _newer(seen: Mapping[str, Any], known: Mapping[str, Any]) -> bool:
    a, b = seen.get("revision"), known.get("revision")
    return not isinstance(a, int) or not isinstance(b, int) or a >= b


class _Sender:
    """Sends the outbox per target: urgent entries one by one, held ones and digests as one each."""

    def __init__(self, consumer: PushConsumer, state: _Memory, save: Callable[[], None],
                 context: ConsumerContext) -> None:
        self.consumer, self.state, self.save, self.context = consumer, state, save, context
        urls = (env_value(consumer.settings.urls_env) or "").split()
        self.targets = {hashlib.sha256(url.encode()).hexdigest()[:12]: url for url in urls}

    def flush(self) -> None:
        settings, context = self.consumer.settings, self.context
        quiet = in_quiet_hours(settings.quiet_hours, context.now, context.timezone)
        singles: list[dict] = []
        held: list[dict] = []
        digests: list[dict] = []
        slot = last_slot(settings.digest_at, context.now, context.timezone) if settings.digest_at else None
        end = quiet_end(settings.quiet_hours, context.now, context.timezone) if quiet else None
        for entry in self.state.outbox:
            if quiet:
                if end is not None and _passes_before(entry, end) and not entry["held"]:
                    singles.append(entry)  # its decision would pass before the quiet hours end
                elif entry["mode"] == "interrupt":
                    entry["held"] = True
            elif entry["held"]:
                held.append(entry)
            elif entry["mode"] == "interrupt":
                singles.append(entry)
            elif slot is not None and instant(entry["queued_at"]) < slot:
                digests.append(entry)
        self.save()
        if not (singles or held or digests):
            return
        if not self.targets:
            raise PushFailed(f"no Apprise URLs in ${settings.urls_env}; "
                             f"{len(self.state.outbox)} notification(s) wait")
        language = context.language if context.language in ("zh", "en") else "en"
        for target in self.targets:
            waiting = [entry for entry in held if target not in entry["sent_to"]]
            if waiting:
                self._send(target, waiting, "held", *digest(waiting, language, context.timezone, held=True))
            waiting = [entry for entry in digests if target not in entry["sent_to"]]
            if waiting:
                self._send(target, waiting, "digest", *digest(waiting, language, context.timezone, held=False))
            for entry in [entry for entry in singles if target not in entry["sent_to"]]:
                self._send(target, [entry], "interrupt",
                           *single(entry, context.timezone, context.public_url))
        self.state.outbox = [entry for entry in self.state.outbox
                             if not set(self.targets) <= set(entry["sent_to"])]
        self.save()

    def _send(self, target: str, entries: list[dict], mode: str, title: str, body: str) -> None:
        error = send(self.targets[target], title, body, self.consumer.settings.timeout)
        for entry in entries:
            if error is None:
                if not entry["sent_to"]:
                    self.state.ledger.append({"at": self.context.now, "key": entry["key"], "item": entry.get("item"),
                                              "source": entry.get("source"), "rules": entry["rules"], "mode": mode,
                                              "weight": entry.get("weight")})
                entry["sent_to"].append(target)
            else:
                entry["attempts"] += 1
                entry["last_error"] = error
        self.state.note(self.context.now, target=target, keys=[e["key"] for e in entries], ok=error is None,
                        **({"error": error} if error else {}))
        if error is None:
            crash_at("push_after_send")  # tests: a crash between the send and its record
        self.save()
        if error is not None:
            raise PushFailed(f"{len(entries)} notification(s) to target {target} not sent: {error}")


def _passes_before(entry: Mapping[str, Any], end: Any) -> bool:
    """Whether the entry's decision must be taken before ``end`` (the end of the current quiet hours)."""
    decide_by = (entry.get("decision") or {}).get("decide_by")
    return isinstance(decide_by, str) and instant(decide_by) <= end


@hookimpl
def fold_consumer_types() -> list[type[Consumer]]:
    return [PushConsumer]
