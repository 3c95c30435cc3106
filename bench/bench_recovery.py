"""Benchmark 3: cold recovery of a large log vs plain line-by-line ``json.loads``.

What: a new ``FileRecorder`` opening a store that has no snapshot and
recovering the whole log (N = 100,000 records in the full run): take the
shared lock, read ``meta.json``, scan ``events.jsonl`` (parse every line,
check its event_seq, index its batch_id and offset) and fold T over every
record. Timed up to the point the session is handed out; the snapshot the
reader then writes on leaving the session is timed separately (and deleted
again before the next run, untimed).

Baseline: ``for line in open(path, "rb"): json.loads(line)`` over the same
file — the parse rate any recovery has to pay. Both run in this process,
alternately, after one untimed warm-up each (the file is in the page cache).

Reported: records per second of each and their ratio (recovery rate / parse
rate, higher is better), for the steady and the churn workload.
"""

from __future__ import annotations

import argparse
import os
import time

from common import SCRATCH, existing_store, emit_json, install_snapshot, pair_result, summarize
from timing import parse_once

from fold_core.store.file import FileRecorder


def recover_once(store: str) -> tuple[float, float, int]:
    """(seconds to recover, seconds to leave the session — the snapshot write —, event_seq)."""
    started = time.perf_counter()
    manager = FileRecorder(store).session(write=False)
    session = manager.__enter__()
    recovered = time.perf_counter() - started
    seq = session.state.event_seq
    started = time.perf_counter()
    manager.__exit__(None, None, None)
    left = time.perf_counter() - started
    return recovered, left, seq


def measure(store: str, records: int, repeats: int) -> dict:
    log_path = os.path.join(store, "events.jsonl")
    install_snapshot(store, None)
    recover_once(store)
    install_snapshot(store, None)
    parse_once(log_path)
    recover, parse, leave = [], [], []
    for _ in range(repeats):
        seconds, left, seq = recover_once(store)
        install_snapshot(store, None)
        assert seq == records, (seq, records)
        recover.append(seconds)
        leave.append(left)
        started = time.perf_counter()
        count = parse_once(log_path)
        parse.append(time.perf_counter() - started)
        assert count == records
    result = pair_result(recover, parse)
    result["rate_ratio"] = 1 / result["ratio"]  # rate = records / time
    result["recover_rate"] = records / result["subject"]["median"]
    result["parse_rate"] = records / result["baseline"]["median"]
    result["snapshot_write"] = summarize(leave)
    install_snapshot(store, 0)
    return result


def profile(store: str, top: int = 8) -> list[dict]:
    """cProfile of one cold recovery: the functions with the most own time."""
    import cProfile
    import pstats

    install_snapshot(store, None)
    profiler = cProfile.Profile()
    profiler.enable()
    manager = FileRecorder(store).session(write=False)
    manager.__enter__()
    profiler.disable()
    manager.__exit__(None, None, None)
    install_snapshot(store, 0)
    stats = pstats.Stats(profiler).stats
    rows = sorted(stats.items(), key=lambda kv: -kv[1][2])[:top]
    return [{"function": f"{os.path.basename(file)}:{line}:{name}", "calls": calls, "own_s": own, "cum_s": cum}
            for (file, line, name), (_, calls, own, cum, _) in rows]


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--stores", default=os.path.join(SCRATCH, "stores"), help="built when missing")
    parser.add_argument("--workloads", default="steady,churn")
    args = parser.parse_args(argv)
    result = {"name": "recovery", "records": args.records, "workloads": {}}
    for kind in args.workloads.split(","):
        store = existing_store(args.stores, kind, args.records)
        entry = measure(store, args.records, args.repeats)
        entry["profile"] = profile(store)
        result["workloads"][kind] = entry
    return result


if __name__ == "__main__":
    emit_json(main())
