"""The editor's call log: the ``agent_calls`` table (``HostDB`` part; ``foldctl calls``).

One row per attempt: the window's ``batch_id``, the backend and model, a
short digest of the skill text sent, the tool calls made, token counts
(``cached_tokens``: the prompt tokens the backend read from or wrote to its
prompt cache), the cost under ``[agent] prices``, latency, the outcome, and — for the most recent rows — the request body (the
§9 input and the receipts sent back) and the answer's text. Nothing a
backend authenticates with is ever part of a row (the host scrubs the
values of the agent's ``*_env`` variables before writing).
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Any

from fold_core.timefmt import parse_instant
from fold_host.hostdb.part import TablePart
from fold_host.hostdb.watch import count_in

__all__ = ["CALL_COLUMNS", "COST_UNIT", "CallTables", "call_entry"]

CALL_COLUMNS = ("batch_id", "attempt", "backend", "at", "latency_ms", "request", "response", "stderr",
                "input_tokens", "output_tokens", "outcome", "error", "model", "skill", "tools", "fallback",
                "cached_tokens", "cost")
COST_UNIT = 1_000_000  # the cost counter counts millionths (host.db counters are integers)


def _json(text: str | None) -> Any:
    if text is None:
        return None
    try:
        return json.loads(text)
    except ValueError:
        return text


def call_entry(row: dict) -> dict:
    """A row as ``foldctl calls`` lists it."""
    tools = _json(row.get("tools")) or []
    return {"id": row["seq"], "at": row["at"], "backend": row["backend"], "model": row.get("model"),
            "skill": row.get("skill"), "window": row["batch_id"], "attempt": row["attempt"],
            "tokens_in": row["input_tokens"], "tokens_cached": row.get("cached_tokens"),
            "tokens_out": row["output_tokens"], "cost": row.get("cost"), "latency_ms": row["latency_ms"],
            "outcome": row["outcome"], "tools": [call.get("name") for call in tools if isinstance(call, dict)],
            "fallback": bool(row.get("fallback"))}


class CallTables(TablePart):
    """One row per editor call: request, response, attempt, latency, tokens, outcome, tools."""

    def log_call(self, *, keep_requests: int | None = None, **fields: Any) -> int:
        """Keep one editor call (the ``CALL_COLUMNS``); with ``keep_requests``, only the last N keep their request."""
        unknown = set(fields) - set(CALL_COLUMNS)
        if unknown:
            raise TypeError(f"log_call: unknown fields {sorted(unknown)}")
        values = [fields.get(c) for c in CALL_COLUMNS]
        values = [json.dumps(v, ensure_ascii=False) if isinstance(v, (dict, list)) else v for v in values]
        values[CALL_COLUMNS.index("fallback")] = int(bool(fields.get("fallback")))
        with self.transaction() as db:
            seq = self._insert_seq(db, f"INSERT INTO agent_calls ({', '.join(CALL_COLUMNS)}) "
                                       f"VALUES ({', '.join('?' * len(CALL_COLUMNS))})", values)
            count_in(db, "agent_calls", (fields.get("backend") or "", fields.get("outcome") or ""))
            count_in(db, "agent_tokens", ("input",), fields.get("input_tokens") or 0)
            count_in(db, "agent_tokens", ("output",), fields.get("output_tokens") or 0)
            count_in(db, "agent_tokens", ("cached",), fields.get("cached_tokens") or 0)
            count_in(db, "agent_cost", (), round((fields.get("cost") or 0) * COST_UNIT))
            if keep_requests is not None:
                # The inbox keeps the events: older rows drop their request body.
                db.execute("UPDATE agent_calls SET request = NULL WHERE seq <= (SELECT max(seq) FROM agent_calls) "
                           "- ? AND request IS NOT NULL", (keep_requests,))
        assert seq is not None, "an INSERT without ON CONFLICT adds its row"
        return seq

    def calls(self, *, limit: int = 20, batch_id: str | None = None) -> list[dict]:
        """Editor calls (the raw rows), newest first."""
        if batch_id is None:
            return self._rows("SELECT * FROM agent_calls ORDER BY seq DESC LIMIT ?", (limit,))
        return self._rows("SELECT * FROM agent_calls WHERE batch_id = ? ORDER BY seq DESC LIMIT ?",
                          (batch_id, limit))

    def call_days(self, *, since: datetime | None = None) -> list[dict]:
        """Per UTC day of ``at``, oldest first: calls (windows asked), attempts, tokens, cost, cached share."""
        days: dict[str, dict] = {}
        windows: dict[str, set] = {}
        for row in self._rows("SELECT at, batch_id, input_tokens, cached_tokens, output_tokens, cost "
                              "FROM agent_calls ORDER BY seq", ()):
            moment = parse_instant(row["at"])
            if moment is None or (since is not None and moment < since):
                continue
            day = moment.astimezone(timezone.utc).date().isoformat()
            total = days.setdefault(day, {"day": day, "calls": 0, "attempts": 0, "tokens_in": 0, "tokens_cached": 0,
                                          "tokens_out": 0, "cost": None})
            windows.setdefault(day, set()).add(row["batch_id"])
            total["attempts"] += 1
            for key, column in (("tokens_in", "input_tokens"), ("tokens_cached", "cached_tokens"),
                                ("tokens_out", "output_tokens")):
                total[key] += row[column] or 0
            if row["cost"] is not None:
                total["cost"] = round((total["cost"] or 0) + row["cost"], 9)
        for day, total in days.items():
            total["calls"] = len(windows[day])
            total["cached_share"] = round(total["tokens_cached"] / total["tokens_in"], 4) if total["tokens_in"] else None
        return [days[day] for day in sorted(days)]

    def recent_prompts(self, backend: str, *, limit: int = 20) -> list[dict]:
        """The last ``limit`` calls of ``backend`` that reported their prompt tokens, newest first."""
        return self._rows("SELECT input_tokens, cached_tokens FROM agent_calls WHERE backend = ? AND "
                          "input_tokens IS NOT NULL ORDER BY seq DESC LIMIT ?", (backend, limit))

    def call_detail(self, seq: int) -> dict | None:
        """One call as ``foldctl calls show`` gives it, or None."""
        rows = self._rows("SELECT * FROM agent_calls WHERE seq = ?", (seq,))
        if not rows:
            return None
        row = rows[0]
        return {**call_entry(row), "request": _json(row["request"]), "response": row["response"],
                "error": _json(row["error"]), "stderr": row["stderr"], "tool_calls": _json(row.get("tools")) or []}
