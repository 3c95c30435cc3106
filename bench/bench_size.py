"""Benchmark 4: bytes on disk per record, and the snapshot's size.

What: for each workload's store of N records (100,000 in the full run, built
by ``common.build_store`` with the store's own encoders), the size of
``events.jsonl`` divided by N, the size of a fresh snapshot and how it
splits between its files (the head with the state a read needs, then the
archive, its index and the batch index), and — over the last 1,000 records — how many
bytes each top-level field of a record takes (compact JSON of the value, as
encoded in the line), to show where the bytes go.

No timing: sizes are exact, one measurement is enough.
"""

from __future__ import annotations

import argparse
import json
import os

from common import SCRATCH, emit_json, existing_store, snapshot_files

SAMPLE = 1000


def field_bytes(log_path: str, records: int) -> dict:
    """Mean bytes per top-level field over the last ``SAMPLE`` records."""
    totals: dict[str, int] = {}
    seen = 0
    with open(log_path, "rb") as log:
        for number, line in enumerate(log, 1):
            if number <= records - SAMPLE:
                continue
            record = json.loads(line)
            seen += 1
            for key, value in record.items():
                size = len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()) + len(key) + 4
                totals[key] = totals.get(key, 0) + size
    return {key: round(total / seen) for key, total in sorted(totals.items(), key=lambda kv: -kv[1])}


def measure(store: str, records: int) -> dict:
    log_path = os.path.join(store, "events.jsonl")
    kept = os.path.join(store + ".snapshots", "tail-0")
    parts = {("head" if name == "snapshot.json" else name.rsplit(".", 1)[1]): os.path.getsize(os.path.join(kept, name))
             for name in snapshot_files(kept)}
    snapshot = sum(parts.values())
    log_bytes = os.path.getsize(log_path)
    return {"records": records, "log_bytes": log_bytes, "log_bytes_allocated": os.stat(log_path).st_blocks * 512,
            "bytes_per_record": log_bytes / records, "snapshot_bytes": snapshot,
            "snapshot_parts": parts, "snapshot_bytes_per_record": snapshot / records,
            "fields": field_bytes(log_path, records)}


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--stores", default=os.path.join(SCRATCH, "stores"), help="built when missing")
    parser.add_argument("--workloads", default="steady,churn")
    args = parser.parse_args(argv)
    result = {"name": "size", "records": args.records, "workloads": {}}
    for kind in args.workloads.split(","):
        store = existing_store(args.stores, kind, args.records)
        result["workloads"][kind] = measure(store, args.records)
    return result


if __name__ == "__main__":
    emit_json(main())
