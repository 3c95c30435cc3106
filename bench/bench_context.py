"""The agent input stays bounded ("Context stays bounded"; contract §9).

Method: two stores built by the same ``churn`` workload (``common.build_store``:
a ~200-item active state; every tick creates one item and withdraws the
oldest, so the not-active index grows by one per record) — 100 records and
10,000 records. Each gets a fresh host.db whose inbox holds pending
observations (realistic mail: 300–1,500 characters, CJK, threads), 2,000 of
them; a third case holds only ``max_events`` (50) pending beside the
100-record store, i.e. an ordinary full window. For each case the host's own
path builds the input — ``signal.decide_signal`` then ``context.build_input``
— and the size of the JSON document the editor receives is measured (UTF-8
bytes), with the time to build it. The unbounded input (every not-active
entry, every pending observation, full texts) is measured beside it for the
10,000-record store, to show what the bound saves.

Run: ``python bench/bench_context.py`` (a few seconds; scratch space under
``$FOLD_BENCH_DIR``). It prints the figures and writes its section of
``docs/benchmarks.md`` (``--no-doc`` to only print).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sys
import time
from datetime import timedelta

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from common import SCRATCH, build_store, now_at  # noqa: E402
from doc_sections import replace_section  # noqa: E402

from fold_core.observation import Observation  # noqa: E402
from fold_core.store.file import file_store  # noqa: E402
from fold_host.cycle.context import build_input  # noqa: E402
from fold_host.hostdb import open_host_db  # noqa: E402
from fold_host.cycle.signal import decide_signal  # noqa: E402

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MAX_EVENTS = 50
SECTION = "context"
WORDS = ["签证", "银行流水", "截止", "周五", "请确认", "附件", "会议", "改期", "发票", "报销", "review", "PR",
         "deadline", "CI", "staging", "客户", "合同", "续约", "航班", "酒店"]


def observations(count: int, seed: int = 5) -> list[Observation]:
    rng = random.Random(seed)
    found = []
    for n in range(count):
        text = "".join(rng.choice(WORDS) + rng.choice(["，", "。", " ", "；"]) for _ in range(rng.randint(60, 300)))
        observed = now_at(20_000 + n // 10)
        found.append(Observation(id=f"mail:{n}", source="mail", channel="email", sender=f"person{n % 37}@example.com",
                                 at=observed, observed_at=observed, title=f"回复：{rng.choice(WORDS)} #{n}",
                                 text=text, thread=f"thread-{n % 113}", meta={"flags": ["\\Recent"]}))
    return found


def prepare(name: str, records: int, pending: int) -> str:
    path = os.path.join(SCRATCH, "context", name)
    if not os.path.exists(os.path.join(path, "events.jsonl")):
        build_store(path, "churn", records)
    for leftover in ("host.db", "host.db-wal", "host.db-shm"):
        if os.path.exists(os.path.join(path, leftover)):
            os.remove(os.path.join(path, leftover))
    with open_host_db(path) as db:
        db.add_observations(observations(pending))
    return path


def measure(path: str, max_events: int = MAX_EVENTS, *, unbounded: bool = False) -> dict:
    store = file_store(path)
    now = now_at(30_000)
    from fold_core.timefmt import parse_instant

    with open_host_db(path) as db:
        started = time.perf_counter()
        signal, events = decide_signal(db, now=parse_instant(now), now_text=now, review_every=timedelta(hours=6),
                                       max_events=max_events, coverage=[], last_window=None)
        document = build_input(store, db, now=now, batch_id="bench", user={"background": "", "purpose": "",
                                                                         "feedback_policy": ""},
                               events=events, signal=signal)
        if unbounded:
            document["state"] = store.state_document(now=now, not_active=None).document
            document["events"] = [event.to_event(10**9) for event in db.pending()]
        seconds = time.perf_counter() - started
    data = json.dumps(document, ensure_ascii=False).encode()
    return {"bytes": len(data), "seconds": seconds, "events": len(document["events"]),
            "not_active": len(document["state"]["not_active"]),
            "not_active_total": document["state"]["not_active_total"],
            "active": _active(document["state"]["root"])}


def _active(layer: dict) -> int:
    return sum(1 + (_active(item["children"]) if item.get("children") else 0) for item in layer["items"])


def run() -> dict:
    small = prepare("records-100", 100, 2000)
    large = prepare("records-10000", 10_000, 2000)
    window = os.path.join(SCRATCH, "context", "records-100-window")
    shutil.rmtree(window, ignore_errors=True)
    shutil.copytree(small, window, ignore=shutil.ignore_patterns("host.db*"))
    with open_host_db(window) as db:
        db.add_observations(observations(MAX_EVENTS))
    results = {"small": measure(small), "large": measure(large), "window": measure(window),
               "unbounded": measure(large, unbounded=True)}
    results["ratio"] = results["large"]["bytes"] / results["small"]["bytes"]
    results["ratio_window"] = results["large"]["bytes"] / results["window"]["bytes"]
    return results


def section(results: dict) -> str:
    def row(label: str, case: dict) -> str:
        return (f"| {label} | {case['bytes'] / 1000:.1f} kB | {case['events']} | {case['active']} | "
                f"{case['not_active']} of {case['not_active_total']} | {case['seconds'] * 1000:.0f} ms |")

    return "\n".join([
        "## 6. Agent input bound",
        "",
        "`bench/bench_context.py`. " + __doc__.split("\n\n")[1].replace("\n", " "),
        "",
        "| case | agent input | events | active items | not-active entries listed | build time |",
        "|---|---|---|---|---|---|",
        row("100 records, 2,000 pending", results["small"]),
        row("10,000 records, 2,000 pending", results["large"]),
        row("100 records, 50 pending (one full window)", results["window"]),
        row("10,000 records, 2,000 pending, **unbounded**", results["unbounded"]),
        "",
        f"**Ratio 10,000 / 100 records: {results['ratio']:.3f}×** (target ≤ 1.2×; against the ordinary full "
        f"window: {results['ratio_window']:.3f}×). Without the bounds the same input would be "
        f"{results['unbounded']['bytes'] / results['large']['bytes']:.0f}× larger.",
    ])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--no-doc", action="store_true", help="print only; leave docs/benchmarks.md alone")
    args = parser.parse_args(argv)
    results = run()
    text = section(results)
    print(text)
    if not args.no_doc:
        replace_section(os.path.join(REPO_ROOT, "docs", "benchmarks.md"), SECTION, text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
