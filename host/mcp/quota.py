"""How much one agent may write through ``foldctl mcp`` in an hour (``[mcp] max_reports_per_hour``).

An agent that loops — or is made to — could file thousands of reports an
hour; each one grows host.db and, read by an LLM editor, costs a paid call.
``HourlyQuota.refusal`` counts what one agent (the observation's ``from``)
filed under the server's source through MCP (``meta.via = "mcp"``) during the
hour before ``now``, from host.db itself — so every ``foldctl mcp`` process
on the store shares one count, and a restart forgets nothing — and answers
the tool error to send back when the next one would go over, else None.
Nothing is stored for a refused call.

Any writing tool that files an observation in the agent's name (``fold_report``
today) asks it before writing; the count is per agent, whatever the tool, so
an agent has one budget.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from fold_core.timefmt import parse_instant
from fold_host.hostdb import HostDB

__all__ = ["DEFAULT_PER_HOUR", "HOUR", "HourlyQuota"]

DEFAULT_PER_HOUR = 120
HOUR = timedelta(hours=1)


@dataclass(frozen=True)
class HourlyQuota:
    """At most ``per_hour`` observations per agent and source through MCP in any hour."""

    per_hour: int = DEFAULT_PER_HOUR
    via: str = "mcp"

    def refusal(self, db: HostDB, *, source: str, agent: str, now: str) -> dict | None:
        """The error record refusing one more observation from ``agent`` at ``now``; None when it may be filed."""
        moment = parse_instant(now)
        if moment is None:  # the server's own clock: always an instant
            raise ValueError(f"not an instant: {now!r}")
        recent = db.recent_from(source=source, sender=agent, via=self.via, since=moment - HOUR,
                                limit=self.per_hour)
        if len(recent) < self.per_hour:
            return None
        instants = [at for at in (parse_instant(text) for text in recent) if at is not None]
        oldest = min(instants, key=lambda at: at.timestamp(), default=moment)
        again = (oldest + HOUR).astimezone(moment.tzinfo).isoformat(timespec="seconds")
        return {"code": "too_many_reports",
                "message": f"{agent[:64]!r} already filed {self.per_hour} reports in the last hour, the most one "
                           f"agent may ([mcp] max_reports_per_hour); nothing was stored. Report results and "
                           f"blockers, not every step; the next report is accepted from {again}",
                "agent": agent[:64], "limit": self.per_hour, "retry_after": again}
