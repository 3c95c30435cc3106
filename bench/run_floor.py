"""The store's floor rows: a commit and a cold ``foldctl state``, before and after, beside their baselines.

``python bench/run_floor.py`` measures, in one run, the code at ``--base``
(*before*, unpacked with ``git archive`` into the scratch directory) and
this repository (*after*):

1. **commit** — ``bench_commit.py`` (this repository's script, the code under
   test chosen with ``FOLD_BENCH_CODE``): a long-lived in-process store, 3
   declarations on ~200 active items, each commit alternating with one
   SQLite WAL ``synchronous=FULL`` transaction inserting the same bytes and
   with a bare ``write`` + ``fsync`` of them. Its ratios (of the medians; of
   the means = amortized, with the snapshot refresh) belong to one run. The
   versions alternate, ``--rounds`` runs each (before, after, before, …);
   reported: the median over the runs and their range. The same runs on
   tmpfs (``/dev/shm``), where an fsync costs almost nothing for either side,
   give the CPU-against-CPU ratio — the part the code decides.
2. **cold state** — ``python -m fold_core state`` on the 100,000-record
   history of ``history.py`` (annotation-heavy: 4,937 annotations) with no
   snapshot (removed before each run, untimed), against a process that only
   parses the same log line by line with ``json.loads``. Each round runs,
   for each version, a parse and a read back to back (orders alternating),
   so each pair sees the same machine; the figure is the median of the
   pairs' rate ratios (parse time / read time), with their range, and the
   same from the children's CPU time (user + system), which a busy machine
   disturbs less.
3. **where the time goes** — ``floor_stages.py`` on the *after* code: the
   commit split into its stages, the refresh, and the cold read's phases.

The section between the ``floor`` markers of ``docs/benchmarks.md`` is
rewritten (``run_all`` keeps it). ``--quick`` is a smoke run (5,000 records,
one round) that leaves the document alone unless ``--doc`` is given;
``--render FILE`` only rewrites the section from saved results. Nothing
fails on time.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)

from doc_sections import replace_section  # noqa: E402
from report_floor import render_section  # noqa: E402
from timing import SCRATCH, clean_env  # noqa: E402

FULL = {"records": 100_000, "rounds": 3, "commits": 300, "warmups": 40, "cold_rounds": 7}
QUICK = {"records": 5_000, "rounds": 1, "commits": 60, "warmups": 10, "cold_rounds": 1}
FLOOR = os.path.join(SCRATCH, "floor")
NOW = "2027-06-01T09:00:00+08:00"
PARSE = "import json, sys\nfor line in open(sys.argv[1], 'rb'):\n    json.loads(line)\n"


def history_store(records: int) -> tuple[str, dict]:
    """The cached log of ``history.py`` (shared with ``run_flat``), built when missing."""
    from run_flat import history_store as cached

    return cached(records)


def code_dir(base: str) -> str:
    """The code at commit ``base``, unpacked once."""
    target = os.path.join(FLOOR, f"code-{base}")
    if not os.path.exists(os.path.join(target, "fold_core", "__init__.py")):
        shutil.rmtree(target, ignore_errors=True)
        os.makedirs(target)
        archive = subprocess.run(["git", "archive", base], cwd=REPO, capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", target], input=archive, check=True)
    _link_packages(target)
    return target


def _link_packages(code: str) -> None:
    """Make the packages that ``package-dir`` maps to other directories importable from ``code``.

    ``PYTHONPATH`` finds ``fold_core`` in the unpacked tree, but ``fold_consumers``
    lives in ``consumers/``: without a link of its own name it would come from this
    repository's editable install, which is other code.
    """
    import tomllib

    with open(os.path.join(code, "pyproject.toml"), "rb") as file:
        mapping = tomllib.load(file).get("tool", {}).get("setuptools", {}).get("package-dir", {})
    for package, directory in mapping.items():
        link = os.path.join(code, package)
        if package != directory and not os.path.lexists(link):
            os.symlink(directory, link)


def _env(code: str) -> dict:
    env = clean_env()
    env["PYTHONPATH"] = code
    env["FOLD_BENCH_CODE"] = code
    return env


def _json_run(argv: list[str], code: str, scratch: str | None = None) -> dict:
    env = _env(code)
    if scratch:
        env["FOLD_BENCH_DIR"] = scratch
    done = subprocess.run([sys.executable, *argv], env=env, capture_output=True, text=True, cwd=FLOOR)
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        return {"error": f"exit {done.returncode}: {done.stderr.strip()[-1500:]}"}
    return json.loads(lines[-1])


def commit_rounds(codes: dict, sizes: dict, scratch: str | None = None) -> dict:
    """``bench_commit`` runs, the versions alternating; ``scratch`` elsewhere (tmpfs) than the default."""
    runs: dict[str, list] = {label: [] for label in codes}
    for _ in range(sizes["rounds"]):
        for label, code in codes.items():
            print(f"commit{' on ' + scratch if scratch else ''}: {label}…", file=sys.stderr, flush=True)
            result = _json_run([os.path.join(HERE, "bench_commit.py"), "--commits", str(sizes["commits"]),
                                "--warmups", str(sizes["warmups"])], code, scratch)
            runs[label].append(result)
    return runs


def fsync_probe(directory: str, count: int = 50) -> float:
    """Median seconds of a bare 3.6 kB ``write`` + ``fsync`` on the scratch disk (its speed this minute)."""
    path = os.path.join(directory, "probe")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    samples = []
    try:
        for _ in range(count):
            started = time.perf_counter()
            os.write(fd, b"x" * 3600 + b"\n")
            os.fsync(fd)
            samples.append(time.perf_counter() - started)
    finally:
        os.close(fd)
        os.remove(path)
    return statistics.median(samples)


def _timed(argv: list[str], code: str) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the child: user + system) of one process."""
    started = time.perf_counter()
    child = subprocess.Popen(argv, env=_env(code), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=FLOOR)
    _, status, usage = os.wait4(child.pid, 0)
    elapsed = time.perf_counter() - started
    err = child.stderr.read()
    child.stderr.close()
    if status != 0:
        raise RuntimeError(f"{argv} exited with status {status}: {err.decode()[-600:]}")
    return elapsed, usage.ru_utime + usage.ru_stime


def _no_snapshot(path: str) -> None:
    for name in os.listdir(path):
        if name.startswith("snapshot") or name.startswith(".snapshot"):
            os.remove(os.path.join(path, name))


def cold_rounds(codes: dict, log_dir: str, rounds: int) -> dict:
    """Per round and version, a parse and a cold read back to back (the order alternating): pairs
    that see the same machine; the figure is the median of the pairs' rate ratios."""
    cold = os.path.join(FLOOR, "cold")
    shutil.rmtree(cold, ignore_errors=True)
    os.makedirs(cold)
    for name in ("meta.json", "events.jsonl"):
        os.link(os.path.join(log_dir, name), os.path.join(cold, name))
    log_path = os.path.join(cold, "events.jsonl")
    result: dict = {label: {"parse": [], "read": [], "parse_cpu": [], "read_cpu": []} for label in codes}
    for index in range(rounds + 1):  # the first round warms the page cache and the bytecode caches
        print(f"cold state: round {index}…", file=sys.stderr, flush=True)
        labels = list(codes) if index % 2 == 0 else list(reversed(codes))
        for label in labels:
            steps = ["parse", "read"] if (index // 2) % 2 == 0 else ["read", "parse"]
            for step in steps:
                if step == "parse":
                    wall, cpu = _timed([sys.executable, "-c", PARSE, log_path], REPO)
                else:
                    _no_snapshot(cold)
                    wall, cpu = _timed([sys.executable, "-m", "fold_core", "state", "--store", cold, "--format",
                                        "json", "--now", NOW], codes[label])
                if index:
                    result[label][step].append(wall)
                    result[label][step + "_cpu"].append(cpu)
    shutil.rmtree(cold, ignore_errors=True)
    for figures in result.values():
        figures["pair_ratios"] = [p / r for p, r in zip(figures["parse"], figures["read"])]
        figures["rate_ratio"] = statistics.median(figures["pair_ratios"])
        figures["cpu_ratio"] = statistics.median(p / r for p, r in zip(figures["parse_cpu"], figures["read_cpu"]))
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--base", default="dbb41a0", help="the code before the store's floor work (a commit)")
    parser.add_argument("--doc", help="the document to update (default: docs/benchmarks.md in full mode)")
    parser.add_argument("--render", metavar="RESULTS.json", help="only rewrite the section from saved results")
    parser.add_argument("--only", default="commit,tmpfs,cold,stages")
    args = parser.parse_args(argv)
    doc = args.doc or (None if args.quick else os.path.join(REPO, "docs", "benchmarks.md"))
    if args.render:
        with open(args.render, encoding="utf-8") as file:
            results = json.load(file)
    else:
        results = measure(args)
    section = render_section(results)
    print(section)
    if doc:
        replace_section(doc, "floor", section)
        print(f"wrote {os.path.relpath(doc, REPO)}", file=sys.stderr)
    return 0


def measure(args) -> dict:
    sizes = QUICK if args.quick else FULL
    only = set(args.only.split(","))
    started = time.perf_counter()
    os.makedirs(FLOOR, exist_ok=True)
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True)
    codes = {"before": code_dir(args.base), "after": REPO}
    results = {"mode": "quick" if args.quick else "full", "sizes": sizes, "base": args.base,
               "head": head.stdout.strip(), "python": sys.version.split()[0], "nproc": os.cpu_count(),
               "loadavg_start": os.getloadavg()}
    log_dir, facts = history_store(sizes["records"])
    results["history"] = facts
    if "commit" in only:
        results["commit"] = commit_rounds(codes, sizes)
        results["fsync_probe"] = fsync_probe(FLOOR)
    if "tmpfs" in only and os.path.isdir("/dev/shm"):
        shm = os.path.join("/dev/shm", "fold-floor")
        try:
            results["commit_tmpfs"] = commit_rounds(codes, sizes, shm)
        finally:
            shutil.rmtree(shm, ignore_errors=True)
    if "cold" in only:
        results["cold"] = cold_rounds(codes, log_dir, sizes["cold_rounds"])
    if "stages" in only:
        cold = os.path.join(FLOOR, "stages-cold")
        shutil.rmtree(cold, ignore_errors=True)
        os.makedirs(cold)
        for name in ("meta.json", "events.jsonl"):
            os.link(os.path.join(log_dir, name), os.path.join(cold, name))
        results["stages"] = _json_run([os.path.join(HERE, "floor_stages.py"), "--cold", cold], REPO)
        shutil.rmtree(cold, ignore_errors=True)
    results["loadavg_end"] = os.getloadavg()
    results["seconds"] = time.perf_counter() - started
    with open(os.path.join(FLOOR, f"results-{results['mode']}.json"), "w", encoding="utf-8") as out:
        json.dump(results, out, ensure_ascii=False, indent=1)
    return results


if __name__ == "__main__":
    sys.exit(main())
