"""Run every benchmark and write ``docs/benchmarks.md`` ("Benchmarks").

``python bench/run_all.py`` builds the two 100,000-record stores (steady and
churn, see ``common``), runs each benchmark script in its own process, prints
the summary table and rewrites ``docs/benchmarks.md`` with the figures, the
method and the machine. ``--quick`` is a smoke run (2,000 records, one
repeat, < 60 s) that prints the table and leaves the document alone unless
``--doc`` is given. The raw results are kept as ``results-<mode>.json`` in the
scratch directory; ``--render FILE`` rewrites the document from such a file.
Benchmarks are not tests: nothing fails on time, the exit code is 0 whatever
the figures (a script that crashes is reported as such).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import sqlite3
import subprocess
import sys
import time
from datetime import datetime, timezone

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)

from common import SCRATCH, build_store, filesystem  # noqa: E402
from report import render, table  # noqa: E402

FULL = {"records": 100_000, "commits": 300, "warmups": 20, "state_repeats": 11, "process_warmups": 2,
        "recovery_repeats": 7}
QUICK = {"records": 2_000, "commits": 20, "warmups": 3, "state_repeats": 1, "process_warmups": 1,
         "recovery_repeats": 1}
TAILS = (0, 31, 64)
KEPT_SECTION = re.compile(r"<!-- [\w-]+ benchmark: begin -->.*?<!-- [\w-]+ benchmark: end -->\n?", re.S)


def machine() -> dict:
    """The facts a reader needs to weigh the figures."""
    def git(*args: str) -> str:
        done = subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True)
        return done.stdout.strip() if done.returncode == 0 else "?"

    return {"nproc": os.cpu_count(), "python": f"{platform.python_implementation()} {platform.python_version()}",
            "executable": sys.executable, "kernel": f"{platform.system()} {platform.release()}",
            "machine": platform.machine(), "sqlite": sqlite3.sqlite_version,
            "date": datetime.now(timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z"),
            "commit": git("rev-parse", "--short", "HEAD"),
            "dirty": bool(git("status", "--porcelain", "--", "fold_core")),
            "loadavg_start": os.getloadavg(), "scratch": SCRATCH, "filesystem": filesystem(SCRATCH)}


def run_script(name: str, args: list[str]) -> dict:
    """Run ``bench/<name>.py`` in its own process; its JSON result or the error."""
    started = time.perf_counter()
    done = subprocess.run([sys.executable, os.path.join(HERE, f"{name}.py"), *args],
                          capture_output=True, text=True, cwd=REPO)
    elapsed = time.perf_counter() - started
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        return {"error": f"exit {done.returncode}: {done.stderr.strip()[-1500:]}", "seconds": elapsed}
    try:
        result = json.loads(lines[-1])
    except ValueError:
        return {"error": f"unreadable output: {lines[-1][:300]}", "seconds": elapsed}
    result["seconds"] = elapsed
    return result


def write_doc(path: str, text: str) -> None:
    """Write the document, keeping the sections other benchmark scripts own.

    A script that is not part of this run (``bench_overview.py``, …) keeps its
    section between ``<!-- NAME benchmark: begin -->`` and ``<!-- NAME
    benchmark: end -->`` lines; those sections are carried over at the end.
    """
    kept = []
    try:
        with open(path, encoding="utf-8") as file:
            kept = KEPT_SECTION.findall(file.read())
    except FileNotFoundError:
        pass
    with open(path, "w", encoding="utf-8") as out:
        out.write(text.rstrip("\n") + "\n" + "".join("\n" + block.rstrip("\n") + "\n" for block in kept))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smoke run: small sizes, one repeat")
    parser.add_argument("--doc", help="write the document here (default: docs/benchmarks.md in full mode)")
    parser.add_argument("--keep", action="store_true", help=f"keep the stores under {SCRATCH}")
    parser.add_argument("--render", metavar="RESULTS.json",
                        help="only rewrite the document from the results of an earlier run (saved under the scratch dir)")
    args = parser.parse_args(argv)
    if args.render:
        with open(args.render, encoding="utf-8") as file:
            results = json.load(file)
        doc = args.doc or os.path.join(REPO, "docs", "benchmarks.md")
        write_doc(doc, render(results))
        print(table(results))
        return 0
    sizes = QUICK if args.quick else FULL
    doc = args.doc or (None if args.quick else os.path.join(REPO, "docs", "benchmarks.md"))
    started = time.perf_counter()
    facts = machine()
    stores = os.path.join(SCRATCH, "stores-quick" if args.quick else "stores")
    records = sizes["records"]
    results: dict = {"mode": "quick" if args.quick else "full", "sizes": sizes, "machine": facts, "builds": {}}

    for kind in ("steady", "churn"):
        print(f"building the {kind} store ({records:,} records)…", file=sys.stderr, flush=True)
        try:
            results["builds"][kind] = build_store(os.path.join(stores, f"{kind}-{records}"), kind, records, TAILS)
        except Exception as error:  # reported, not raised: the scripts then report their own failure
            results["builds"][kind] = {"error": f"{type(error).__name__}: {error}"[:1500]}

    common = ["--records", str(records), "--stores", stores]
    plan = [
        ("bench_commit", ["--commits", str(sizes["commits"]), "--warmups", str(sizes["warmups"]),
                          "--big-store", os.path.join(stores, f"steady-{records}"),
                          "--big-store", os.path.join(stores, f"churn-{records}")]),
        ("bench_state", [*common, "--repeats", str(sizes["state_repeats"]),
                         "--warmups", str(sizes["process_warmups"])]),
        ("bench_recovery", [*common, "--repeats", str(sizes["recovery_repeats"])]),
        ("bench_size", common),
    ]
    for name, script_args in plan:
        print(f"running {name}…", file=sys.stderr, flush=True)
        results[name] = run_script(name, script_args)
    facts["loadavg_end"] = os.getloadavg()
    results["seconds"] = time.perf_counter() - started

    print(table(results))
    if doc:
        write_doc(doc, render(results))
        print(f"\nwrote {os.path.relpath(doc, REPO)}", file=sys.stderr)
    with open(os.path.join(SCRATCH, f"results-{results['mode']}.json"), "w", encoding="utf-8") as out:
        json.dump(results, out, ensure_ascii=False, indent=1)
    if not args.keep:
        shutil.rmtree(stores, ignore_errors=True)
    print(f"total {results['seconds']:.0f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
