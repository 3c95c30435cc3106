"""An agent's report → the observation a line of its work log would have been (contract §10).

``report_observation`` writes the report as a work-log JSON Lines record
(``at``, ``agent``, ``text``, ``task`` = the title, ``status``, ``ref`` = the
first link) and reads it back with the ``worklog`` adapter's own reader, so
text cleaning, cuts, ``meta.status``, ``meta.ref`` and the ``url`` of an
http(s) link come out exactly as for a line of a log file. On top of that:
channel ``worklog``, source ``[mcp] source``, ``meta.via = "mcp"``, every
link in ``meta.links`` and ``meta.report_id`` when the agent gave one.

Ids: ``<source>:report/<report_id>`` when the agent gave a report_id (a retry
is the same observation), else ``<source>:report/<digest>`` of the report and
the instant it came — the same report sent twice in one second is one.
"""

from __future__ import annotations

import hashlib
import json

from fold_adapters.worklog.formats import read_record
from fold_core.observation import Observation, bound_text
from fold_core.timefmt import parse_instant

__all__ = ["ReportProblem", "report_observation", "same_report"]

CHANNEL = "worklog"


class ReportProblem(ValueError):
    """A report that cannot be an observation: ``field`` names the argument."""

    def __init__(self, message: str, field: str) -> None:
        super().__init__(message)
        self.field = field


def report_observation(arguments: dict, *, source: str, now: str) -> Observation:
    """The observation of one report (arguments already checked against the tool's schema)."""
    at = arguments.get("at", now)
    if parse_instant(at) is None:
        raise ReportProblem(f"at must be an ISO 8601 instant with an offset, like 2026-10-09T18:00:00+08:00; "
                            f"got {at!r}", "at")
    links = list(arguments.get("links") or ())
    line = {"at": at, "agent": arguments["agent"], "text": arguments["text"], "task": arguments["title"]}
    if arguments.get("status") is not None:
        line["status"] = arguments["status"]
    if links:
        line["ref"] = links[0]
    record = read_record(json.dumps(line, ensure_ascii=False))
    if record.problem:
        raise ReportProblem(f"the report has {record.problem}: text must hold visible characters", "text")
    if not record.agent or not record.task:
        field = "agent" if not record.agent else "title"
        raise ReportProblem(f"{field} must hold visible characters", field)
    meta = {**record.meta, "via": "mcp"}
    if links:
        meta["links"] = links
    report_id = arguments.get("report_id")
    if report_id is not None:
        meta["report_id"] = report_id
        native = report_id
    else:
        digest = json.dumps([line, links, now], sort_keys=True, ensure_ascii=False).encode("utf-8")
        native = hashlib.sha256(digest).hexdigest()[:16]
    return Observation(id=f"{source}:report/{native}", source=source, channel=CHANNEL, sender=record.agent,
                       at=record.at, observed_at=now, title=record.task, text=bound_text(record.text),
                       url=record.url, thread=record.task, meta=meta)


def same_report(kept: Observation, given: Observation, *, at_given: bool) -> bool:
    """Whether a retry says what the kept report says (when it came aside; ``at`` too when it defaulted to now)."""
    ignore = {"observed_at"} if at_given else {"observed_at", "at"}
    return kept.model_dump(exclude=ignore) == given.model_dump(exclude=ignore)
