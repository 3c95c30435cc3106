"""Push notifications through Apprise, type ``push`` (contract §12).

Policy (per instance): an item is *eligible* when its weight is at least
``min_weight`` or its kind is one of ``kinds``. An eligible item gets one
notification per **material change**: created
(a merge result too), raised in weight, due date changed, restored. Nothing
for an unchanged item, a lowered weight, a withdraw or merge, an
acknowledgement or a ``checked`` record. At most one notification per item
revision: the key is ``<item>@<event_seq>``. A notification whose item is
no longer active when it would be sent (withdrawn or merged meanwhile) is
dropped and logged: superseded things stay silent.

Delivery: notifications wait in an outbox kept in the consumer's durable
memory (one value, written in one transaction with the item facts they were
computed from). During ``quiet_hours`` (``"22:00-07:30"`` in ``[host]
timezone``) nothing is sent; what was held goes out afterwards as **one
digest**. Each Apprise URL is sent to separately and remembered per
notification, so a retry never repeats a target that already got it. A
failed send stays in the outbox, is recorded (attempts, last error, the send
log) and makes ``deliver`` raise, so the framework retries with backoff; the
type asks for idle calls, so a held digest or a failed send goes out even
when no new record comes.

Exactly once is impossible: a crash **between** a successful send and the
write that records it sends that one notification again after the restart
(at most one duplicate per target). A clean restart sends nothing twice.
Titles and bodies are in the item's language (Chinese when its title or
summary holds CJK text, else English) and carry the item's id. Apprise runs
in a child process per notification (``fold_consumers.push_send``), which
bounds the target's answer in size and time.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Literal

from pydantic import Field, field_validator

from fold_core.hookspecs import hookimpl
from fold_core.plugin_api import Consumer, ConsumerContext
from fold_core.settings import ConsumerSettings, EnvName, env_value
from fold_core.store.faults import crash_at

from fold_consumers.items import ItemFacts, fact_diff, text_language, weight_rank
from fold_consumers.push_send import send

__all__ = ["PushConsumer", "PushFailed", "PushSettings", "fold_consumer_types", "in_quiet_hours", "material"]

MEMORY_KEY = "push"
LOG_KEEP = 50
_QUIET = re.compile(r"^([01]\d|2[0-3]):([0-5]\d)-([01]\d|2[0-3]):([0-5]\d)$")
Weight = Literal["critical", "high", "normal", "low", "trace"]
Kind = Literal["needs-you", "done", "in-progress", "fyi"]

TEXT = {
    "en": {"created": "New", "raised": "Raised to {weight}", "due": "Due {due}", "due_cleared": "Due date removed",
           "restored": "Back", "due_line": "due {due}", "id": "id: {item} (event {event_seq}, revision {revision})",
           "digest": "Fold: {n} notification(s) held during quiet hours"},
    "zh": {"created": "新事项", "raised": "升为 {weight}", "due": "截止改为 {due}", "due_cleared": "截止时间已取消",
           "restored": "恢复", "due_line": "截止 {due}", "id": "编号：{item}（事件 {event_seq}，修订 {revision}）",
           "digest": "Fold：免打扰期间的 {n} 条通知"},
}


class PushFailed(Exception):
    """Some notifications could not be sent; they stay in the outbox."""


class PushSettings(ConsumerSettings):
    """``urls_env`` names the variable with the Apprise URLs (whitespace-separated)."""

    urls_env: EnvName
    min_weight: Weight | None = "high"
    kinds: list[Kind] = Field(default_factory=list)
    quiet_hours: str | None = None
    timeout: float = Field(default=10.0, gt=0, le=120)

    @field_validator("quiet_hours")
    @classmethod
    def _quiet(cls, value: str | None) -> str | None:
        if value is None:
            return None
        match = _QUIET.match(value)
        if match is None or match.group(1, 2) == match.group(3, 4):
            raise ValueError(f'expected "HH:MM-HH:MM" (24 h, start ≠ end, e.g. "22:00-07:30"), found {value!r}')
        return value


def in_quiet_hours(quiet: str | None, now: str, timezone: str) -> bool:
    """Whether ``now`` falls in ``quiet`` (``"22:00-07:30"``, may cross midnight) in ``timezone``."""
    if not quiet:
        return False
    from datetime import datetime
    from zoneinfo import ZoneInfo

    hours = [int(part) for part in re.split("[:-]", quiet)]
    start, end = hours[0] * 60 + hours[1], hours[2] * 60 + hours[3]
    local = datetime.fromisoformat(now).astimezone(ZoneInfo(timezone))
    minute = local.hour * 60 + local.minute
    return start <= minute < end if start < end else (minute >= start or minute < end)


def material(op: str, before: Mapping[str, Any] | None, after: Mapping[str, Any]) -> list[str]:
    """What makes this change worth a notification: created / raised / due / restored (or nothing)."""
    if op in ("created", "restored"):
        return [op]
    if op != "updated" or before is None:
        return []
    what = []
    if weight_rank(after.get("weight")) > weight_rank(before.get("weight")):
        what.append("raised")
    if "due_at" in fact_diff(before, after):
        what.append("due")
    return what


class PushConsumer(Consumer):
    """Sends one notification per material change of an eligible item."""

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
        facts = ItemFacts.from_document(context.state.document)
        context.memory[MEMORY_KEY] = {"facts": facts.to_json(), "outbox": [], "log": []}

    def deliver(self, records: Sequence[Mapping[str, Any]], context: ConsumerContext) -> None:
        memory = context.memory
        saved = memory.get(MEMORY_KEY) or {}
        facts = ItemFacts.from_json(saved.get("facts"))
        state = {"outbox": list(saved.get("outbox") or []), "log": list(saved.get("log") or [])}
        keys = {entry["key"] for entry in state["outbox"]}
        for record in records:
            for change, before, after in facts.absorb(record) or ():
                what = material(change.op, before, after)
                if what and self.eligible(change.image) and f"{change.item}@{record['event_seq']}" not in keys:
                    state["outbox"].append(self._entry(record, change.image, what, before, context))
                    keys.add(state["outbox"][-1]["key"])

        def save() -> None:
            memory[MEMORY_KEY] = {"facts": facts.to_json(), **state}

        # Superseded stays silent: an item no longer active by now is not announced.
        gone = [entry["key"] for entry in state["outbox"] if context.state.item(entry["item"]) is None]
        if gone:
            state["outbox"] = [entry for entry in state["outbox"] if entry["key"] not in gone]
            state["log"] = (state["log"] + [{"at": context.now, "keys": gone, "ok": None,
                                             "dropped": "no longer active"}])[-LOG_KEEP:]
        save()
        if not state["outbox"]:
            return
        if in_quiet_hours(self.settings.quiet_hours, context.now, context.timezone):
            for entry in state["outbox"]:
                entry["held"] = True
            save()
            return
        _Sender(self, state, save, context).flush()

    @staticmethod
    def _entry(record, image, what, before, context) -> dict:
        language = text_language(f"{image.get('title') or ''}{image.get('summary') or ''}", context.language)
        return {"key": f"{image['id']}@{record['event_seq']}", "item": image["id"],
                "event_seq": record["event_seq"], "revision": record.get("revision"), "what": what,
                "title": image.get("title"), "summary": image.get("summary"), "weight": image.get("weight"),
                "before_weight": (before or {}).get("weight"), "kind": image.get("kind"),
                "due_at": image.get("due_at"), "language": language, "held": False, "sent_to": [],
                "attempts": 0, "last_error": None}


class _Sender:
    """Sends the outbox: the held entries as one digest per target, the rest one by one."""

    def __init__(self, consumer: PushConsumer, state: dict, save, context: ConsumerContext) -> None:
        self.consumer, self.state, self.save, self.context = consumer, state, save, context
        urls = (env_value(consumer.settings.urls_env) or "").split()
        self.targets = {hashlib.sha256(url.encode()).hexdigest()[:12]: url for url in urls}

    def flush(self) -> None:
        if not self.targets:
            raise PushFailed(f"no Apprise URLs in ${self.consumer.settings.urls_env}; "
                             f"{len(self.state['outbox'])} notification(s) wait")
        outbox = self.state["outbox"]
        for target in self.targets:
            held = [entry for entry in outbox if entry["held"] and target not in entry["sent_to"]]
            if held:
                self._send(target, held, *self._digest(held))
            for entry in [e for e in outbox if not e["held"] and target not in e["sent_to"]]:
                self._send(target, [entry], *self._single(entry))
        self.state["outbox"] = [entry for entry in outbox if not set(self.targets) <= set(entry["sent_to"])]
        self.save()

    def _send(self, target: str, entries: list[dict], title: str, body: str) -> None:
        error = self._notify(self.targets[target], title, body)
        for entry in entries:
            if error is None:
                entry["sent_to"].append(target)
            else:
                entry["attempts"] += 1
                entry["last_error"] = error
        log = self.state["log"]
        log.append({"at": self.context.now, "target": target, "keys": [e["key"] for e in entries], "ok": error is None,
                    **({"error": error} if error else {})})
        del log[:-LOG_KEEP]
        if error is None:
            crash_at("push_after_send")  # tests: a crash between the send and its record
        self.save()
        if error is not None:
            raise PushFailed(f"{len(entries)} notification(s) to target {target} not sent: {error}")

    def _notify(self, url: str, title: str, body: str) -> str | None:
        """Send one notification to one Apprise URL; None when sent, else the error (never the URL)."""
        return send(url, title, body, self.consumer.settings.timeout)

    def _single(self, entry: dict) -> tuple[str, str]:
        text, lines = TEXT[entry["language"]], []
        labels = []
        for what in entry["what"]:
            if what == "due":
                labels.append(text["due"].format(due=self._when(entry["due_at"])) if entry["due_at"]
                              else text["due_cleared"])
            else:
                labels.append(text[what].format(weight=entry["weight"]))
        separator = "：" if entry["language"] == "zh" else ": "
        title = " · ".join(labels) + separator + (entry["title"] or entry["item"])
        if entry["summary"]:
            lines.append(entry["summary"])
        facts = [entry["weight"], entry["kind"]]
        if entry["due_at"]:
            facts.append(text["due_line"].format(due=self._when(entry["due_at"])))
        lines.append(" · ".join(facts))
        lines.append(text["id"].format(item=entry["item"], event_seq=entry["event_seq"], revision=entry["revision"]))
        return title, "\n".join(lines)

    def _digest(self, entries: list[dict]) -> tuple[str, str]:
        language = self.context.language if self.context.language in TEXT else "en"
        lines = []
        for entry in entries:
            title, _ = self._single(entry)
            lines.append(f"- {title} [{entry['item']}]")
        return TEXT[language]["digest"].format(n=len(entries)), "\n".join(lines)

    def _when(self, instant: str) -> str:
        from datetime import datetime
        from zoneinfo import ZoneInfo

        return datetime.fromisoformat(instant).astimezone(ZoneInfo(self.context.timezone)).strftime("%Y-%m-%d %H:%M")


@hookimpl
def fold_consumer_types() -> list[type[Consumer]]:
    return [PushConsumer]
