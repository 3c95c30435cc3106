"""``foldctl run --log-format json``: every line on stderr is one JSON object, third-party loggers included.

A source whose poll takes longer than its interval makes APScheduler log
"skipped: maximum number of running instances reached" on its own logger;
that line comes out as JSON too (``event: "log"``, with the logger's name and
level), like every line of Fold's own.
"""

from __future__ import annotations

import json
import signal
import time

from tests.support.host_workspace import Workspace


def test_every_line_is_json_also_apschedulers_own(tmp_path):
    ws = Workspace(tmp_path, sources=("slow",), script=["noise"], host='review_every = "1d"\n')
    ws.config.write_text(ws.config.read_text().replace('every = "1m"', 'every = "1s"'))
    ws.feed("slow", {"native": "1", "title": "one", "text": "one"})
    (tmp_path / "slow.jsonl.hang").write_text("4")
    run = ws.spawn("run", "--log-format", "json")
    try:
        time.sleep(8)
    finally:
        run.send_signal(signal.SIGTERM)
        _, err = run.communicate(timeout=30)
    assert run.returncode == 0
    lines = err.decode().splitlines()
    parsed = []
    for line in lines:
        try:
            parsed.append(json.loads(line))
        except ValueError:
            raise AssertionError(f"not JSON: {line!r}") from None
    third_party = [line for line in parsed if line["event"] == "log"]
    assert any(line["logger"].startswith("apscheduler") and "maximum number of running instances" in line["message"]
               for line in third_party), lines
    assert all({"at", "event", "logger", "level", "message"} <= set(line) for line in third_party)
    assert {"start", "stop"} <= {line["event"] for line in parsed}
