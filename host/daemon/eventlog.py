"""The daemon's log: one line per event on stderr, as text or JSON, with times in ``[host] timezone``.

``EventLog(form, stream, zone)`` is called as ``log(event, key=value, ...)``:
text lines are ``at event key=value …`` (a value with spaces is quoted as
JSON), JSON lines are one object ``{"at", "event", ...}``. A reload may move
``zone``; a write that fails (a closed stderr) is dropped, never raised.
"""

from __future__ import annotations

import json
import logging
import sys
import threading
from datetime import datetime
from zoneinfo import ZoneInfo

__all__ = ["EventLog", "ForwardedLog"]


class EventLog:
    """One line per event on stderr: ``at event key=value …`` or one JSON object; ``at`` in ``zone``."""

    def __init__(self, form: str = "text", stream=None, zone: ZoneInfo | None = None) -> None:
        self.form, self.stream, self.zone = form, stream or sys.stderr, zone
        self._lock = threading.Lock()

    def __call__(self, event: str, **fields) -> None:
        now = datetime.now(self.zone) if self.zone is not None else datetime.now().astimezone()
        at = now.isoformat(timespec="seconds")
        if self.form == "json":
            line = json.dumps({"at": at, "event": event, **fields}, ensure_ascii=False, default=str)
        else:
            line = " ".join([at, event] + [f"{k}={_shown(v)}" for k, v in fields.items() if v is not None])
        with self._lock:
            try:
                self.stream.write(line + "\n")
                self.stream.flush()
            except (OSError, ValueError):
                pass


class ForwardedLog(logging.Handler):
    """Other libraries' log records (APScheduler, uvicorn) as ``EventLog`` lines: one format for every line."""

    def __init__(self, log: EventLog) -> None:
        super().__init__(logging.WARNING)
        self.log = log

    def emit(self, record: logging.LogRecord) -> None:
        try:
            message = record.getMessage()
        except Exception:  # a library's bad format string: still one line
            message = str(record.msg)
        self.log("log", logger=record.name, level=record.levelname.lower(), message=message)


def _shown(value) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return json.dumps(text, ensure_ascii=False) if (not text or any(c.isspace() for c in text)) else text
