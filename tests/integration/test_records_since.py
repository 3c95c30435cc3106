"""Reading records after event n without parsing the n before it (contract §7 ``history --since``).

A recorder that has not seen record n + 1 (a fresh process, a record from
before the last snapshot) finds its line by bisection over the log's bytes
(``log.line_start``); what it answers must equal a full read.
"""

from __future__ import annotations

import random

from fold_core.store.file import file_store
from fold_core.store.log import line_start

NOW = "2026-10-09T08:00:00+08:00"


def test_records_since_any_event_equal_a_full_read(tmp_path):
    path = tmp_path / "store"
    store = file_store(path, budget=64)
    assert store.commit({"batch_id": "b0", "declarations": [
        {"id": "visa", "title": "签证", "weight": "high", "kind": "needs-you"}]}, actor="agent", now=NOW).exit_code == 0
    rng = random.Random(3)
    for n in range(400):  # lines of very different lengths, well over the 64 KiB bisection threshold
        text = "批注" * rng.randint(1, 900)
        assert store.annotate(item="visa", text=text, author="user", now=NOW).exit_code == 0
    everything = file_store(path).history().document["records"]
    assert len(everything) == 401 and (path / "events.jsonl").stat().st_size > 1 << 19
    log, size = str(path / "events.jsonl"), (path / "events.jsonl").stat().st_size
    offsets, position = {}, 0
    with open(log, "rb") as file:
        for number, line in enumerate(file, 1):
            offsets[number] = position
            position += len(line)
    for event_seq in (1, 2, 3, 57, 200, 399, 400, 401):
        assert line_start(log, event_seq, size) == offsets[event_seq]
    assert line_start(log, 402, size) is None
    for since in (0, 1, 2, 150, 333, 399, 400, 401):
        fresh = file_store(path)  # knows no offsets: bisection or a read from the start
        assert fresh.history(since=since).document["records"] == everything[since:]
        assert fresh.history(since=since, limit=3).document["records"] == everything[since:since + 3]


def test_a_log_whose_lines_do_not_begin_as_the_encoder_writes_is_read_from_the_start(tmp_path):
    log = tmp_path / "events.jsonl"
    log.write_bytes(b'{"event_seq":1,"v":1}\n' * 10)
    assert line_start(str(log), 5, log.stat().st_size) is None
