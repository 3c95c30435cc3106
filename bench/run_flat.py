"""Run benchmark 5 before and after, and write its section of ``docs/benchmarks.md``.

``python bench/run_flat.py`` builds (once; cached under the scratch
directory) the long history of ``history.py`` — 100,000 records — and a
~200-item prefix of the same stream, then for each code version:

* *before*: the code at ``--base`` (default ``eff7271``, the last commit
  before the flat-cost store), unpacked with ``git archive`` into the scratch directory;
* *after*: this repository;

prepares both stores with that code (the log is shared; each code recovers
it and writes its own snapshot), runs ``foldctl verify`` on the big store,
and runs ``bench_flat.py`` with that code first on ``PYTHONPATH``. The
figures go side by side with the ones the issue measured into the section
between the ``flat`` markers of ``docs/benchmarks.md`` (``run_all`` keeps that
section). ``--quick`` is a smoke run (5,000 records, few repeats) that leaves
the document alone unless ``--doc`` is given; ``--render FILE`` only rewrites
the section from saved results. Nothing fails on time.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)

from report_flat import render_section, replace_section  # noqa: E402
from timing import SCRATCH, clean_env  # noqa: E402

FULL = {"records": 100_000, "small": 40, "repeats": 11, "warmups": 2, "commits": 100, "recovery_repeats": 3}
QUICK = {"records": 5_000, "small": 40, "repeats": 3, "warmups": 1, "commits": 30, "recovery_repeats": 1}
FLAT = os.path.join(SCRATCH, "flat")


def history_store(records: int) -> tuple[str, dict]:
    """The cached log of ``records`` records (built with this repository's kernel when missing)."""
    path = os.path.join(FLAT, f"history-{records}")
    facts_path = path + ".json"
    if not os.path.exists(facts_path) or not os.path.exists(os.path.join(path, "events.jsonl")):
        from history import write_history

        print(f"writing the {records:,}-record history…", file=sys.stderr, flush=True)
        facts = write_history(path, records)
        with open(facts_path, "w") as out:
            json.dump(facts, out)
    with open(facts_path) as file:
        return path, json.load(file)


def code_dir(base: str) -> str:
    """The code at commit ``base``, unpacked once."""
    target = os.path.join(FLAT, f"code-{base}")
    if not os.path.exists(os.path.join(target, "fold_core", "__init__.py")):
        shutil.rmtree(target, ignore_errors=True)
        os.makedirs(target)
        archive = subprocess.run(["git", "archive", base], cwd=REPO, capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", target], input=archive, check=True)
    return target


def _python(code: str, argv: list[str], **kwargs) -> subprocess.CompletedProcess:
    env = clean_env()
    env["PYTHONPATH"] = code
    return subprocess.run([sys.executable, *argv], env=env, capture_output=True, text=True, **kwargs)


BUILD_SNAPSHOT = """
import sys
from fold_core.store.file import FileRecorder
recorder = FileRecorder(sys.argv[1])
with recorder.session(write=True):
    pass
recorder.close()
"""


def prepare(code: str, label: str, source: str) -> tuple[str, float]:
    """A store sharing ``source``'s log, with a snapshot written by ``code``; (path, seconds)."""
    target = os.path.join(FLAT, label, os.path.basename(source))
    shutil.rmtree(target, ignore_errors=True)
    os.makedirs(target)
    os.link(os.path.join(source, "events.jsonl"), os.path.join(target, "events.jsonl"))
    shutil.copyfile(os.path.join(source, "meta.json"), os.path.join(target, "meta.json"))
    started = time.perf_counter()
    done = _python(code, ["-c", BUILD_SNAPSHOT, target])
    if done.returncode != 0:
        raise RuntimeError(f"building the snapshot with {code} failed: {done.stderr[-800:]}")
    return target, time.perf_counter() - started


def run_version(label: str, code: str, big_log: str, small_log: str, sizes: dict) -> dict:
    print(f"{label}: preparing the stores with {code}…", file=sys.stderr, flush=True)
    big, big_seconds = prepare(code, label, big_log)
    small, _ = prepare(code, label, small_log)
    started = time.perf_counter()
    verify = _python(code, ["-m", "fold_core", "verify", "--store", big])
    verify_seconds = time.perf_counter() - started
    print(f"{label}: measuring…", file=sys.stderr, flush=True)
    done = _python(code, [os.path.join(HERE, "bench_flat.py"), "--big", big, "--small", small,
                          "--scratch", os.path.join(FLAT, label, "scratch"),
                          "--repeats", str(sizes["repeats"]), "--warmups", str(sizes["warmups"]),
                          "--commits", str(sizes["commits"]),
                          "--recovery-repeats", str(sizes["recovery_repeats"])], cwd=REPO)
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        result = {"error": f"exit {done.returncode}: {done.stderr.strip()[-1500:]}"}
    else:
        result = json.loads(lines[-1])
    result["snapshot_build_s"] = big_seconds
    result["snapshot_bytes"] = sum(os.path.getsize(os.path.join(big, name)) for name in os.listdir(big)
                                   if name.startswith("snapshot"))
    result["verify"] = {"exit": verify.returncode, "seconds": verify_seconds,
                        "output": (verify.stdout or verify.stderr).strip()[-600:]}
    shutil.rmtree(os.path.join(FLAT, label), ignore_errors=True)
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--base", default="eff7271", help="the code before the flat-cost store (a commit)")
    parser.add_argument("--doc", help="the document to update (default: docs/benchmarks.md in full mode)")
    parser.add_argument("--render", metavar="RESULTS.json", help="only rewrite the section from saved results")
    parser.add_argument("--versions", default="before,after")
    args = parser.parse_args(argv)
    doc = args.doc or (None if args.quick else os.path.join(REPO, "docs", "benchmarks.md"))
    if args.render:
        with open(args.render, encoding="utf-8") as file:
            results = json.load(file)
    else:
        sizes = QUICK if args.quick else FULL
        started = time.perf_counter()
        os.makedirs(FLAT, exist_ok=True)
        big_log, big_facts = history_store(sizes["records"])
        small_log, small_facts = history_store(sizes["small"])
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True)
        results = {"mode": "quick" if args.quick else "full", "sizes": sizes, "base": args.base,
                   "head": commit.stdout.strip(), "history": big_facts, "small": small_facts,
                   "loadavg_start": os.getloadavg(), "python": sys.version.split()[0]}
        codes = {"before": code_dir(args.base), "after": REPO}
        for label in args.versions.split(","):
            results[label] = run_version(label, codes[label], big_log, small_log, sizes)
        results["loadavg_end"] = os.getloadavg()
        results["seconds"] = time.perf_counter() - started
        with open(os.path.join(FLAT, f"results-{results['mode']}.json"), "w", encoding="utf-8") as out:
            json.dump(results, out, ensure_ascii=False, indent=1)
    section = render_section(results)
    print(section)
    if doc:
        replace_section(doc, section)
        print(f"wrote {os.path.relpath(doc, REPO)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
