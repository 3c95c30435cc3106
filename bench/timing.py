"""Timing and process helpers of the benchmarks (no Fold import).

Kept apart from ``common`` so that a benchmark can run against another copy
of ``fold_core`` (``PYTHONPATH``): importing these helpers never imports the
repository's own code. Scratch space: ``$FOLD_BENCH_DIR`` (default
/tmp/fold-bench).
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import time

SCRATCH = os.environ.get("FOLD_BENCH_DIR", "/tmp/fold-bench")


def summarize(samples: list[float]) -> dict:
    """Median and spread (min, max, and the interquartile range when n ≥ 4)."""
    ordered = sorted(samples)
    q1, q3 = statistics.quantiles(ordered, n=4)[::2] if len(ordered) >= 4 else (ordered[0], ordered[-1])
    return {"n": len(ordered), "median": statistics.median(ordered), "min": ordered[0], "max": ordered[-1],
            "mean": statistics.fmean(ordered), "q1": q1, "q3": q3}


def timed(function, setup=None) -> float:
    """Seconds taken by one ``function()`` (``setup()`` runs before, untimed)."""
    if setup is not None:
        setup()
    started = time.perf_counter()
    function()
    return time.perf_counter() - started


def paired(subject, baseline, repeats: int, *, warmups: int = 1, setup=None, base_setup=None) -> dict:
    """Time ``subject`` and ``baseline`` alternately, ``repeats`` pairs after ``warmups``.

    Alternating puts both under the same machine noise; the ratio is reported
    as the ratio of the medians and as the median of the per-pair ratios.
    """
    pairs = [(timed(subject, setup), timed(baseline, base_setup)) for _ in range(warmups + repeats)]
    return pair_result([a for a, _ in pairs[warmups:]], [b for _, b in pairs[warmups:]])


def pair_result(a: list[float], b: list[float]) -> dict:
    subject, baseline = summarize(a), summarize(b)
    return {"subject": subject, "baseline": baseline, "ratio": subject["median"] / baseline["median"],
            "pair_ratios": summarize([x / y for x, y in zip(a, b)])}


def clean_env() -> dict:
    """The environment of a user's shell: bytecode caching on (PYTHONDONTWRITEBYTECODE removed)."""
    env = dict(os.environ)
    for name in ("PYTHONDONTWRITEBYTECODE", "PYTHONPROFILEIMPORTTIME", "FOLD_SNAPSHOT_EVERY", "FOLD_FAULT"):
        env.pop(name, None)
    return env


def process(argv: list[str], cwd: str | None = None):
    """A function that runs ``argv`` (stdout to /dev/null) in the clean environment."""
    env = clean_env()

    def run() -> None:
        done = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, cwd=cwd)
        if done.returncode != 0:
            raise RuntimeError(f"{argv} exited {done.returncode}: {done.stderr.decode()[-400:]}")

    return run


def bench_dir(name: str) -> str:
    """A fresh scratch directory under ``SCRATCH``."""
    path = os.path.join(SCRATCH, name)
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path)
    return path


def filesystem(path: str) -> str:
    """``device (type) mounted at`` for ``path``, from /proc/mounts."""
    path, best = os.path.realpath(path), ("?", "", "?")
    with open("/proc/mounts") as mounts:
        for line in mounts:
            device, point, fstype = line.split()[:3]
            if (path == point or path.startswith(point.rstrip("/") + "/")) and len(point) >= len(best[1]):
                best = (device, point, fstype)
    return f"{best[0]} ({best[2]}) mounted at {best[1]}"


def machine_facts() -> dict:
    """Cores, Python, load average and scratch directory: the context a figure was measured in."""
    import platform

    return {"nproc": os.cpu_count(), "python": platform.python_version(), "loadavg": os.getloadavg(),
            "scratch": SCRATCH}


def finish(result: dict, doc: str | None, write_section) -> int:
    """Add the machine facts, print ``result`` as one JSON line and, given ``doc``, write its section."""
    result["machine"] = machine_facts()
    print(json.dumps(result))
    if doc:
        write_section(doc, result)
    return 0


IMPORT_NAMES = (("fold_core", "fold_core"), ("fold_adapters", "adapters"), ("fold_consumers", "consumers"),
                ("fold_host", "host"), ("conformance", "conformance"))  # pyproject's package-dir


def code_at(commit: str, repo: str) -> str:
    """A ``PYTHONPATH`` entry that imports Fold as it was at ``commit`` (unpacked once under ``SCRATCH``).

    The repository's folders are not named as their packages (``host`` is
    ``fold_host``): the entry is a folder of links with the import names.
    """
    root = os.path.join(SCRATCH, "code", commit)
    names = os.path.join(root, ".import-names")
    if not os.path.exists(os.path.join(names, "fold_host", "__init__.py")):
        shutil.rmtree(root, ignore_errors=True)
        os.makedirs(root)
        archive = subprocess.run(["git", "archive", commit], cwd=repo, capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", root], input=archive, check=True)
        os.makedirs(names)
        for name, folder in IMPORT_NAMES:
            os.symlink(os.path.join(root, folder), os.path.join(names, name), target_is_directory=True)
    return names


def run_json(argv: list[str], code: str | None = None, cwd: str | None = None) -> dict:
    """Run a benchmark script in a new process (with ``code`` first on its path) and read its JSON line."""
    env = clean_env()
    if code is not None:
        env["PYTHONPATH"] = code
    else:
        env.pop("PYTHONPATH", None)
    done = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True)
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        raise RuntimeError(f"{argv} exited {done.returncode}: {done.stderr.strip()[-1500:]}")
    return json.loads(lines[-1])


def spread(values: list[float]) -> dict:
    """Median, min and max of a few figures (one per round)."""
    ordered = sorted(values)
    return {"n": len(ordered), "median": statistics.median(ordered), "min": ordered[0], "max": ordered[-1],
            "values": values}


def emit_json(result: dict) -> None:
    print(json.dumps(result, ensure_ascii=False))  # one line on stdout: run_all reads it


def parse_once(path: str) -> int:
    """The baseline of every recovery figure: ``json.loads`` of each line of a log; the line count."""
    loads, count = json.loads, 0
    with open(path, "rb") as log:
        for line in log:
            loads(line)
            count += 1
    return count
