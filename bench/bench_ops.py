"""Benchmark 12: ``GET /metrics`` and ``foldctl backup`` on a store with 100,000 records and 50,000 observations.

What, each against a baseline measured in the same run:

* ``GET /metrics`` of a running ``foldctl serve`` app (uvicorn in this
  process, 127.0.0.1, one keep-alive HTTP/1.1 client): every scrape reads
  host.db (counters, inbox counts, sources, consumers, the daemon record) and
  the store's state. Baseline, alternated with each scrape on the same server
  and connection: a static answer of the same byte size through the same
  guard middleware and thread pool. Target: the ratio of the medians ≤ 3×.
* ``foldctl backup --out DIR`` as a real process (the store's files up to one
  event_seq with their sha256, host.db through SQLite's backup API, the
  manifest, the target synced to disk). Baseline, alternated: ``cp -a`` of the same
  store directory; also shown: ``cp -a`` followed by ``sync`` of the copies (a copy as
  durable as the backup), that plus the copies' sha256 (the same guarantees by
  hand), and the sha256 alone. Target: the ratio of the medians to ``cp -a`` ≤ 2×.

The store is the Pinboard benchmark's 100,000-record history
(``bench_pinboard.build``, every batch through the kernel); host.db gets
50,000 observations through ``HostDB`` (49,000 processed with their
dispositions, 1,000 pending), a poll per observation, 5,000 editor calls and
a consumer: what months of a busy daemon leave. Both are kept under
``$FOLD_BENCH_DIR/ops-store-<N>-<M>`` and reused while their parameters match.

``python bench/bench_ops.py [--records N] [--observations M] [--repeats N] [--doc docs/benchmarks.md]``
prints the figures as JSON and, with ``--doc``, replaces its section of the
document (between the ``ops`` markers; ``run_all.py`` keeps it).
Benchmarks are not tests: nothing fails on time.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from bench_pinboard import build as build_history  # noqa: E402
from common import SCRATCH, pair_result  # noqa: E402
from doc_sections import replace_section  # noqa: E402
from timing import clean_env, finish  # noqa: E402

FORMAT = 1  # bump when the generated host.db changes
# What hashing every byte costs by itself, in a new Python process like the backup's (OpenSSL's sha256).
HASH_ONLY = ("import hashlib, sys\nfor name in sys.argv[1:]:\n    with open(name, 'rb') as file:\n"
             "        hashlib.file_digest(file, 'sha256')")
# The same backup with every fsync a no-op: what it costs when the disk costs nothing (a benchmark's probe only).
NO_SYNC = ("import os, sys\nos.fsync = lambda descriptor: None\nimport fold_host.ops.filecopy as copy\n"
           "copy._start_write_back = lambda *args: None\nfrom fold_host.cli import main\n"
           "sys.argv[0] = 'foldctl'\nsys.exit(main())")
# The same backup without its copying and hashing: what comes before the first byte is copied, and the manifest.
NO_COPY = ("import sys\nimport fold_host.ops.backup as backup\nbackup.copy_files = lambda jobs, directory: {}\n"
           "from fold_host.cli import main\nsys.argv[0] = 'foldctl'\nsys.exit(main())")
NOW = "2026-03-22T08:00:00+08:00"


def build(records: int, observations: int) -> tuple[str, dict]:
    """The store with its host.db (reused when its marker matches)."""
    path = os.path.join(SCRATCH, f"ops-store-{records}-{observations}")
    marker = os.path.join(path, "ops-bench.json")
    from fold_host.hostdb.schema import MIGRATIONS

    want = {"format": FORMAT, "records": records, "observations": observations, "host_db_schema": len(MIGRATIONS)}
    try:
        with open(marker, encoding="utf-8") as file:
            if json.load(file) == want:
                return path, {"reused": True, "seconds": 0.0}
    except (OSError, ValueError):
        pass
    started = time.perf_counter()
    history = os.path.join(SCRATCH, f"pinboard-store-{records}")
    build_history(history, records)
    shutil.rmtree(path, ignore_errors=True)
    shutil.copytree(history, path)
    fill_host_db(path, observations)
    with open(marker, "w", encoding="utf-8") as file:
        json.dump(want, file)
    return path, {"reused": False, "seconds": time.perf_counter() - started}


def fill_host_db(path: str, count: int) -> None:
    """``count`` observations from two sources, most of them settled; polls, calls and a consumer."""
    from fold_core.observation import Health, Observation, Poll
    from fold_host.hostdb import open_host_db

    with open_host_db(path) as db:
        chunk = 1000
        for start in range(0, count, chunk):
            batch = [Observation.model_validate({
                "id": f"{'mail' if n % 3 else 'blog'}:{n}", "source": "mail" if n % 3 else "blog",
                "channel": "email" if n % 3 else "rss", "from": "someone@example.org", "at": NOW,
                "observed_at": NOW, "title": f"第 {n} 封邮件：季度预算与周报", "text": "正文 " * 200,
                "thread": f"thread-{n // 4}"}) for n in range(start, min(start + chunk, count))]
            for source in ("mail", "blog"):
                mine = [o for o in batch if o.source == source]
                db.record_poll(source, Poll(observations=mine, cursor=start, health=Health.ok()), now=NOW)
            settled = [o for o in batch if int(o.id.split(":")[1]) < count - 1000]
            db.mark([{"event": o.id, "disposition": "used", "why": "filed under an item", "related": ["r0"]}
                     for o in settled], batch_id=f"fold-events-{start}", now=NOW)
        for n in range(count // 10):
            db.log_call(batch_id=f"fold-events-{n}", attempt=1, backend="openai", at=NOW, latency_ms=900.0,
                        request=None, response="{}", input_tokens=3000, output_tokens=400, outcome="accepted")
        db.add_consumer("morning", 1, now=NOW)
        db.daemon_started(pid=1, now=NOW)
        db.daemon_stopped(pid=1, now=NOW)
        db.connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")


def time_metrics(path: str, repeats: int, warmups: int) -> dict:
    import httpx
    from starlette.applications import Starlette
    from starlette.responses import Response
    from starlette.routing import Route

    from fold_host.pinboard.app import create_app
    from fold_host.web.security import Guard
    from fold_host.web.server import Bind, ServerThread

    copy: dict = {}
    static = Guard(Starlette(routes=[Route("/static-copy", lambda request: Response(
        copy["body"], media_type="text/plain; version=0.0.4; charset=utf-8"))]), token=None, loopback=True)
    app = create_app(path, timezone="Asia/Shanghai")

    async def both(scope, receive, send):
        target = static if scope["type"] == "http" and scope["path"] == "/static-copy" else app
        await target(scope, receive, send)

    result: dict = {}
    with ServerThread(both, Bind("127.0.0.1", 0, None)) as server, httpx.Client(base_url=server.url) as client:
        started = time.perf_counter()
        first = client.get("/metrics")
        result["first_scrape"] = time.perf_counter() - started
        assert first.status_code == 200, first.text[:500]
        copy["body"] = first.content
        result["bytes"] = len(first.content)
        result["series"] = sum(1 for line in first.text.splitlines() if line and not line.startswith("#"))
        subject, baseline = [], []
        for index in range(warmups + repeats):
            for target, samples in (("/metrics", subject), ("/static-copy", baseline)):
                started = time.perf_counter()
                response = client.get(target)
                elapsed = time.perf_counter() - started
                assert response.status_code == 200
                if index >= warmups:
                    samples.append(elapsed)
    result.update(pair_result(subject, baseline))
    return result


def time_backup(path: str, repeats: int) -> dict:
    scratch = os.path.join(SCRATCH, "ops-backups")
    env = clean_env()
    foldctl = [sys.executable, "-m", "fold_host", "--store", path, "backup", "--format", "json", "--out"]
    cpu: dict[str, list[float]] = {}

    def run(label: str, argv: list[str]) -> float:
        os.sync()  # untimed: nothing an earlier run left in the page cache is written out during this one
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        done = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=HERE)
        elapsed = time.perf_counter() - started
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if done.returncode != 0:
            raise RuntimeError(f"{argv} exited {done.returncode}: {done.stderr.decode()[-400:]}")
        cpu.setdefault(label, []).append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
        return elapsed

    names = sorted(name for name in os.listdir(path) if name in ("meta.json", "events.jsonl", "host.db")
                   or name.startswith("snapshot."))
    hash_copies = f'{sys.executable} -c "$HASH" ' + " ".join(f'"$1/{name}"' for name in names)
    by_hand = 'cp -a "$0" "$1" && sync "$1" "$1"/* && ' + hash_copies
    largest = max(names, key=lambda name: os.path.getsize(os.path.join(path, name)))
    rounds: dict[str, list[float]] = {"backup": [], "cp": [], "synced": [], "hashed": [], "by_hand": [],
                                      "largest": [], "no_sync": [], "no_copy": [], "bare": []}
    for index in range(repeats + 1):
        shutil.rmtree(scratch, ignore_errors=True)
        os.makedirs(scratch)
        took = {"backup": run("backup", [*foldctl, os.path.join(scratch, "backup")]),
                "cp": run("cp", ["cp", "-a", path, os.path.join(scratch, "copy")]),
                "synced": run("synced", ["sh", "-c", 'cp -a "$0" "$1" && sync "$1" "$1"/*', path,
                                         os.path.join(scratch, "synced")]),
                "hashed": run("hashed", [sys.executable, "-c", HASH_ONLY,
                                         *(os.path.join(path, name) for name in names)]),
                "by_hand": run("by_hand", ["env", f"HASH={HASH_ONLY}", "sh", "-c", by_hand, path,
                                           os.path.join(scratch, "by-hand")]),
                "largest": run("largest", [sys.executable, "-c", HASH_ONLY, os.path.join(path, largest)]),
                "no_sync": run("no_sync", [sys.executable, "-c", NO_SYNC, *foldctl[3:],
                                           os.path.join(scratch, "no-sync")]),
                "no_copy": run("no_copy", [sys.executable, "-c", NO_COPY, *foldctl[3:],
                                           os.path.join(scratch, "no-copy")]),
                "bare": run("bare", [sys.executable, "-c", "pass"])}
        if index:  # the first round warms the page cache
            for label, seconds in took.items():
                rounds[label].append(seconds)
    with open(os.path.join(scratch, "backup", "manifest.json"), encoding="utf-8") as file:
        manifest = json.load(file)
    sizes = {name: os.path.getsize(os.path.join(path, name)) for name in manifest["files"]}
    shutil.rmtree(scratch, ignore_errors=True)
    subject = rounds["backup"]
    compared = {label: pair_result(subject, values) for label, values in rounds.items()
                if label not in ("backup", "cp")}
    compared["largest"]["name"] = largest
    return {**pair_result(subject, rounds["cp"]), **compared,
            "cpu": {label: statistics.median(values[1:]) for label, values in cpu.items()},
            "files": len(sizes), "bytes": sum(sizes.values()),
            "host_db_bytes": sizes.get("host.db", 0), "log_bytes": sizes.get("events.jsonl", 0),
            "event_seq": manifest["event_seq"]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--observations", type=int, default=50_000)
    parser.add_argument("--repeats", type=int, default=200)
    parser.add_argument("--backups", type=int, default=7)
    parser.add_argument("--doc", help="replace the ops section of this Markdown file")
    args = parser.parse_args(argv)
    path, built = build(args.records, args.observations)
    result = {"records": args.records, "observations": args.observations, "build": built,
              "metrics": time_metrics(path, args.repeats, 20), "backup": time_backup(path, args.backups)}
    return finish(result, args.doc, write_section)


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.2f} ms" if seconds < 0.1 else f"{seconds * 1000:.0f} ms"


def figure(summary: dict) -> str:
    return f"{ms(summary['median'])} [{ms(summary['q1'])}–{ms(summary['q3'])}]"


def section(result: dict) -> str:
    metrics, backup = result["metrics"], result["backup"]
    rows = [("what", "subject", "baseline (same run)", "ratio", "target", "verdict"), ("---",) * 6,
            (f"`GET /metrics` ({metrics['series']} series, {metrics['bytes']:,} bytes)", figure(metrics["subject"]),
             f"static answer of the same size: {figure(metrics['baseline'])}", f"{metrics['ratio']:.2f}×", "≤ 3×",
             "meets" if metrics["ratio"] <= 3 else "**misses**"),
            (f"`foldctl backup` ({backup['files']} files, {backup['bytes'] / 2**20:.0f} MiB)",
             figure(backup["subject"]), f"`cp -a`: {figure(backup['baseline'])}",
             f"{backup['ratio']:.2f}×", "≤ 2×", "meets" if backup["ratio"] <= 2 else "**misses**"),
            *(("the same backup", figure(backup["subject"]), f"{what}: {figure(backup[key]['baseline'])}",
               f"{backup[key]['ratio']:.2f}×", "—", "—") for key, what in (
                ("synced", "`cp -a`, then `sync` of the copied files and their directory (durable too)"),
                ("by_hand", "`cp -a`, `sync` of the files, then their sha256 in a new Python process (the same "
                            "guarantees, by hand)"),
                ("hashed", "sha256 of the same files in a new Python process"),
                ("largest", f"sha256 of the largest file alone ({backup['largest']['name']}), in a new Python "
                            "process"),
                ("no_sync", "the same backup with every fsync a no-op (a probe, not an option: what is left when "
                            "the disk costs nothing)"),
                ("no_copy", "the same backup without its copying and hashing (a probe: start-up, the lock, the "
                            "pin, the manifest)")))]
    table = "\n".join("| " + " | ".join(row) + " |" for row in rows)
    load = " / ".join(f"{value:.2f}" for value in result["machine"]["loadavg"])
    cpu, copy = backup["cpu"], backup["baseline"]["median"]
    floor_sync = backup["synced"]["baseline"]["median"] / copy
    floor_hash = backup["hashed"]["baseline"]["median"] / copy
    floor_largest = backup["largest"]["baseline"]["median"] / copy
    floor_no_sync = backup["no_sync"]["baseline"]["median"] / copy
    floor_start = backup["no_copy"]["baseline"]["median"] / copy
    bare = backup["bare"]["baseline"]["median"]
    floor_both = (backup["no_copy"]["baseline"]["median"] + backup["largest"]["baseline"]["median"] - bare) / copy
    return f"""## 18. Monitoring and backup (`/metrics`, `foldctl backup`)

Generated by `python bench/bench_ops.py --doc docs/benchmarks.md`; `run_all.py` keeps this section.

{table}

Method. The store is the Pinboard benchmark's history of {result['records']:,} records
({backup['log_bytes'] / 2**20:.0f} MiB of `events.jsonl`, every batch through the kernel) with a host.db
of {result['observations']:,} observations written through `HostDB` (all but 1,000 settled with their
dispositions, a poll for each, {result['observations'] // 10:,} editor calls, a consumer;
{backup['host_db_bytes'] / 2**20:.0f} MiB). `/metrics`: the `foldctl serve` app in this process
(uvicorn on 127.0.0.1), one keep-alive httpx client alternating `GET /metrics` with `GET /static-copy`,
a route answering the same bytes through the same guard middleware and thread pool:
{metrics['subject']['n']} pairs after 20 warm-up pairs; every scrape reads host.db and the store (no
cache); the ratio is the ratio of the medians (median of per-pair ratios:
{metrics['pair_ratios']['median']:.2f}×); the first scrape after the start took
{ms(result['metrics']['first_scrape'])}. Backup: `python -m fold_host backup` as a new process (start-up
included; the target is synced to disk before it returns) alternated with `cp -a` of the store
directory (the target's baseline), with `cp -a` followed by `sync` of the copied files and their
directory (a copy as durable as the backup), with that and then the sha256 of the copies in a new
Python process (the backup's guarantees by hand), with a Python process that only computes the
sha256 of the same files (`hashlib`, what the manifest's digests cost by themselves: a backup reads
every byte to hash it, where `cp -a` copies inside the kernel without reading it), with one that
hashes only the largest file, with the backup run with `os.fsync` replaced by a no-op and with the
backup run with its copying and hashing replaced by nothing (probes in the benchmark, not options of
Fold), with a bare `python -c pass`,
{backup['subject']['n']} rounds after one warm-up round, into a fresh directory each time on the same
file system; `sync` (untimed) before each process, so no run writes out what an earlier one left in
the page cache. Times are medians [interquartile range], wall time; CPU seconds (user + system, median)
per process: backup {cpu['backup']:.2f} s, `cp -a` {cpu['cp']:.2f} s, `cp -a` + `sync` {cpu['synced']:.2f} s,
sha256 only {cpu['hashed']:.2f} s. Python
{result['machine']['python']}, {result['machine']['nproc']} cores, load average at the end {load}
(other work shares the machine).

Reading: the ≤ 2× `cp -a` target is not reachable while each file carries its sha256 in the manifest
(the issue's own format), and the figures of this run say why. Two parts of a backup cannot overlap.
First what comes before the copy and after it: the interpreter, its imports, the read of the snapshot
head under the store's lock and the pin on host.db, then the manifest once every file is on disk —
the same backup with its copying and hashing left out takes {floor_start:.2f}× `cp -a`. Host.db's copy and
digest can only begin after the pin (the pin fixes what they are),
and one file's digest is one sequential stream: the largest file, {backup['largest']['name']}
({backup['host_db_bytes'] / 2**20:.0f} MiB), hashed by a Python process that does nothing else takes
{floor_largest:.2f}× `cp -a` of the whole store. Together, with the interpreter's own start ({ms(bare)}) counted
once, they come to {floor_both:.2f}× `cp -a` before anything else; the other files are copied and hashed on the
second core meanwhile. The disk is not what is left: the same backup with every fsync made a no-op
takes {floor_no_sync:.2f}× `cp -a` (the real one takes {backup['no_sync']['ratio']:.2f}× that), because the copy does not wait for
the disk at the end: each file is copied in the kernel and the disk is asked to start writing every
8 MiB as soon as it is copied (`posix_fadvise`), so the writing overlaps the copy and the hashing
(when that was introduced, the same backup of a 220 MB store went from 0.32 s to 0.26 s, the two
versions alternating in one run); a copy made durable the usual way, `cp -a` + `sync`, costs
{floor_sync:.2f}× `cp -a` by itself, and the backup takes {backup['synced']['ratio']:.2f}× that and {backup['by_hand']['ratio']:.2f}× the same
guarantees done by hand. Dropping the digests would meet the target and is not done: restore checks
every file against them, and a backup whose damage restore cannot see is not one.
"""


def write_section(path: str, result: dict) -> None:
    replace_section(path, "ops", section(result))


if __name__ == "__main__":
    sys.exit(main())
