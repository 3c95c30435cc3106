"""The ``report`` consumer: one report per closed period, written once (contract §12, docs/consumers.md).

``every = "weekly"`` (the ISO week, due on Monday at ``at``, local time) or
``"daily"`` (due each day at ``at``). When a period's report is due the
consumer writes ``DIR/<period>.md`` and a self-contained
``DIR/<period>.html`` and appends one line to ``DIR/index.jsonl`` (period,
identity, file names); a period that ended before the instance was first
seen is not written. Written once: a file that is there is never
rewritten, the index never holds a period twice; after a crash between the
files, the next call writes what is missing from the same inputs (the
content of a closed period does not change, so it is identical). It is
the host's own type (it reads the whole history through the store's
location and host.db) and asks for idle calls: a period closes by the clock.
With ``urls_env`` each new report is also announced by one short push
notification (Apprise) pointing to its HTML file (a crash right after the
send may announce it once more).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Literal

from pydantic import field_validator

from fold_core.files import append_file, check_regular_target, read_tail, replace_file
from fold_core.hookspecs import hookimpl
from fold_core.plugin_api import Consumer, ConsumerContext
from fold_core.settings import ConfigPath, ConsumerSettings, EnvName, env_value
from fold_consumers.push_send import send
from fold_core.timefmt import instant
from fold_host.hostdb import open_host_db
from fold_host.report.build import build_report, gather
from fold_host.report.period import Period, closed_period, previous_period
from fold_host.report.render import render

__all__ = ["ReportConsumer", "ReportSettings", "fold_consumer_types", "write_period"]

_CLOCK = re.compile(r"^([01]\d|2[0-3]):([0-5]\d)$")
CATCH_UP = 62  # at most this many missed periods are written at once (two months of days)


def _later(indexed: Any, name: str | None) -> bool:
    """Whether the period ``indexed`` (the last written) comes after ``name`` (same kind: names sort by time)."""
    return isinstance(indexed, str) and name is not None and len(indexed) == len(name) and indexed > name


class ReportSettings(ConsumerSettings):
    """``dir``: where the reports go; ``every``: weekly | daily; ``at``: the local time they are due."""

    dir: ConfigPath
    every: Literal["weekly", "daily"] = "weekly"
    at: str = "08:00"
    urls_env: EnvName | None = None  # Apprise URLs: one short notification pointing to each new report

    @field_validator("at")
    @classmethod
    def _at(cls, value: str) -> str:
        if not _CLOCK.match(value):
            raise ValueError(f'expected a local time "HH:MM" (24 h, e.g. "08:00"), found {value!r}')
        return value


def write_period(directory: str, report: Mapping[str, Any], written_at: str) -> list[str]:
    """Write the report's missing files and index line; the names written (none when all were there)."""
    os.makedirs(directory, exist_ok=True)
    name = report["identity"]["period"]["name"]
    written = []
    for extension in ("md", "html"):
        path = os.path.join(directory, f"{name}.{extension}")
        if not check_regular_target(path):
            replace_file(path, render(report, extension).encode("utf-8"))
            written.append(os.path.basename(path))
    index = os.path.join(directory, "index.jsonl")
    listed = set()
    if check_regular_target(index):
        tail, _ = read_tail(index, 1 << 20)
        for text in tail.decode("utf-8", "replace").splitlines():
            try:
                listed.add(json.loads(text).get("period"))
            except (ValueError, AttributeError):
                continue
    if name not in listed:
        identity = report["identity"]
        line = {"period": name, "since": identity["period"]["since"], "until": identity["period"]["until"],
                "first_event_seq": identity["first_event_seq"], "last_event_seq": identity["last_event_seq"],
                "revision": identity["revision"], "digest": identity["digest"], "md": f"{name}.md",
                "html": f"{name}.html", "written_at": written_at}
        append_file(index, (json.dumps(line, ensure_ascii=False, sort_keys=True) + "\n").encode("utf-8"))
        written.append("index.jsonl")
    return written


class ReportConsumer(Consumer):
    """Writes each closed period's report once."""

    type_name: ClassVar[str] = "report"
    shares_records: ClassVar[bool] = True
    Settings: ClassVar[type[ReportSettings]] = ReportSettings
    settings: ReportSettings
    idle_calls: ClassVar[bool] = True

    def begin(self, context: ConsumerContext) -> None:
        context.memory["from"] = context.now  # periods that ended before the instance existed are not written

    def deliver(self, records: Sequence[Mapping[str, Any]], context: ConsumerContext) -> None:
        if context.location is None:
            return
        due = self._due(context)
        if not due:
            return
        with open_host_db(context.location) as db:
            inputs = gather(context.location, db)
        directory = str(self.settings.dir)
        for period in due:  # oldest first: after a pause every period missed is written, each once
            name = period.name or ""
            report = build_report(inputs, period, timezone=context.timezone, language=context.language)
            write_period(directory, report, context.now)
            context.memory["indexed"] = name
            if self.settings.urls_env is not None and context.memory.get("pushed") != name:
                self._announce(report, os.path.join(directory, f"{name}.html"))
                context.memory["pushed"] = name

    def _due(self, context: ConsumerContext) -> list[Period]:
        """The closed periods not written yet (at most ``CATCH_UP``), oldest first."""
        latest = closed_period(self.settings.every, self.settings.at, context.now, context.timezone)
        start = context.memory.get("from")
        indexed = context.memory.get("indexed")
        directory = str(self.settings.dir)
        due: list[Period] = []
        period = latest
        while period is not None and len(due) < CATCH_UP:
            if isinstance(start, str) and period.until <= instant(start):
                break
            written = all(check_regular_target(os.path.join(directory, f"{period.name}.{ext}"))
                          for ext in ("md", "html"))
            if written and (indexed == period.name or _later(indexed, period.name)):
                break
            due.append(period)
            period = previous_period(period, context.timezone)
        return due[::-1]

    def _announce(self, report: Mapping[str, Any], path: str) -> None:
        """One short notification per target pointing to the report; a failure raises (retried, not rewritten)."""
        figures = report["attention"]
        name = report["identity"]["period"]["name"]
        if report.get("language") == "zh":
            title = f"Fold 报告 {name}"
            body = (f"通知 {figures['notifications']['total']}，误打扰 {figures['false_interrupts']}，"
                    f"漏提醒 {figures['missed_escalations']}，待决定 {figures['decisions']['open']}\n{path}")
        else:
            title = f"Fold report {name}"
            body = (f"{figures['notifications']['total']} notifications, {figures['false_interrupts']} false "
                    f"interrupts, {figures['missed_escalations']} missed escalations, "
                    f"{figures['decisions']['open']} decisions open\n{path}")
        for url in (env_value(self.settings.urls_env or "") or "").split():
            error = send(url, title, body, 10.0)
            if error is not None:
                raise RuntimeError(f"the report's notification was not sent: {error}")


@hookimpl
def fold_consumer_types() -> list[type[Consumer]]:
    return [ReportConsumer]
