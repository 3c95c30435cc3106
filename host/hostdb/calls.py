"""The editor's call log: the ``agent_calls`` table (``HostDB`` part)."""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from fold_host.hostdb.watch import count_in

__all__ = ["CALL_COLUMNS", "CallTables"]

CALL_COLUMNS = ("batch_id", "attempt", "backend", "at", "latency_ms", "request", "response", "stderr",
                "input_tokens", "output_tokens", "outcome", "error")


class CallTables:
    """One row per editor call: request, response, attempt, latency, tokens, outcome."""

    connection: sqlite3.Connection

    def log_call(self, *, keep_requests: int | None = None, **fields: Any) -> None:
        """Keep one editor call (the ``CALL_COLUMNS``); with ``keep_requests``, only the last N keep their request."""
        unknown = set(fields) - set(CALL_COLUMNS)
        if unknown:
            raise TypeError(f"log_call: unknown fields {sorted(unknown)}")
        values = [fields.get(c) for c in CALL_COLUMNS]
        values = [json.dumps(v, ensure_ascii=False) if isinstance(v, (dict, list)) else v for v in values]
        with self.transaction() as db:
            db.execute(f"INSERT INTO agent_calls ({', '.join(CALL_COLUMNS)}) "
                       f"VALUES ({', '.join('?' * len(CALL_COLUMNS))})", values)
            count_in(db, "agent_calls", (fields.get("backend") or "", fields.get("outcome") or ""))
            count_in(db, "agent_tokens", ("input",), fields.get("input_tokens") or 0)
            count_in(db, "agent_tokens", ("output",), fields.get("output_tokens") or 0)
            if keep_requests is not None:
                # The inbox keeps the events: older rows drop their request body.
                db.execute("UPDATE agent_calls SET request = NULL WHERE seq <= (SELECT max(seq) FROM agent_calls) "
                           "- ? AND request IS NOT NULL", (keep_requests,))

    def calls(self, *, limit: int = 20, batch_id: str | None = None) -> list[dict]:
        """Editor calls, newest first."""
        if batch_id is None:
            return self._rows("SELECT * FROM agent_calls ORDER BY seq DESC LIMIT ?", (limit,))
        return self._rows("SELECT * FROM agent_calls WHERE batch_id = ? ORDER BY seq DESC LIMIT ?",
                          (batch_id, limit))
