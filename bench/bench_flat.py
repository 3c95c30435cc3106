"""Benchmark 5: costs that must stay flat as the history grows.

Runs against whatever ``fold_core`` is first on ``sys.path`` (``run_flat``
runs it once with the code before the flat-cost store (eff7271) and once with the current code),
on two stores prepared by that same code (its own snapshot): ``--big``, the
long history of ``history.py`` (100k records), and ``--small``, a ~200-item
store of the same stream. It measures every row of the issue's table:

1. **state** — a warm ``python -m fold_core state --store BIG --format json``
   subprocess vs ``python -c 'import json'`` (same interpreter), alternating;
2. **cli-commit** — a ``python -m fold_core commit`` subprocess on a copy of
   the big store vs the same on a copy of the small one, alternating; each
   batch creates one item, withdraws the previous run's and patches a leaf;
3. **commit** — in-process ``Store.commit`` on a long-lived
   ``Store(FileRecorder(copy))`` of each store, alternating, same batches;
   its median at the big store vs at the small one;
4. **slowest** — the slowest of those commits on the big store (snapshot
   refreshes included) vs their median;
5. **recovery** — a new ``FileRecorder`` recovering the whole big log with no
   snapshot (until the session is handed out) vs ``for line in log:
   json.loads(line)``, alternating; compared as rates (records/s).

Commit figures are taken twice: with the copies on the scratch disk (what a
user sees, fsync included) and on tmpfs (``/dev/shm``: the fsync costs
almost nothing there, so the figure is the CPU cost that grows — or not —
with the history). In-process commits start after warm-ups that cover what
a long-lived process pays once (its first refresh, 32 commits in, and the
look-ups that collect the index keys); the slowest warm-up is kept too.
Every figure also has its CPU time (the children's user + system time for
processes, ``process_time`` in-process): steadier than wall time on a busy
machine. Prints one JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

from timing import clean_env, emit_json, pair_result, paired, parse_once

from fold_core.store.base import Store
from fold_core.store.file import FileRecorder

ACTOR = "agent"
NOW = "2027-06-01T09:00:00+08:00"


def _copy(source: str, parent: str, name: str) -> str:
    target = os.path.join(parent, name)
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(source, target)
    return target


class Batches:
    """A stream of 3-declaration batches valid on a store: new item, withdraw the previous one, patch a leaf."""

    def __init__(self, state, tag: str) -> None:
        self.tag, self.count = tag, 0
        items = state.items
        root = state.active.get(None, ())
        used = sum(items[m]["share"] for m in root)
        self.first_withdraw = None
        if used + 1 > state.budget or len(root) >= 14:
            leaves = [m for m in root if not state.active.get(m) and not items[m]["ever_had_children"]]
            self.first_withdraw = leaves[0]
        self.leaves = sorted(m for layer, members in state.active.items() if layer is not None for m in members
                             if not state.active.get(m))
        self.info = {m: (items[m]["weight"], items[m]["kind"]) for m in self.leaves}

    def next(self) -> dict:
        k = self.count
        self.count += 1
        leaf = self.leaves[k % len(self.leaves)]
        weight, kind = self.info[leaf]
        declarations = [
            {"id": f"bench-{self.tag}-{k}", "title": f"基准条目 {k}", "summary": "新邮件：请确认附件。",
             "weight": "trace", "kind": "fyi", "sources": [{"channel": "email", "ref": f"event:bench-{k}"}]},
            {"id": leaf, "relation": f"supersedes:{leaf}", "summary": f"第 {k} 次基准更新：等对方回复。",
             "weight": weight, "kind": kind}]
        previous = f"bench-{self.tag}-{k - 1}" if k else self.first_withdraw
        if previous is not None:
            declarations.append({"id": previous, "relation": "withdraw", "reason": "基准：换下一条。"})
        return {"batch_id": f"bench-{self.tag}-{k}-{os.getpid()}", "declarations": declarations}


def _child(argv: list[str], cwd: str, cpu: list) -> None:
    """Run ``argv`` (stdout to /dev/null) in the clean environment; its CPU seconds go to ``cpu``."""
    child = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=clean_env(), cwd=cwd)
    _, status, usage = os.wait4(child.pid, 0)
    err = child.stderr.read()
    child.stderr.close()
    if status != 0:
        raise RuntimeError(f"{argv} exited with status {status}: {err.decode()[-600:]}")
    cpu.append(usage.ru_utime + usage.ru_stime)


def _with_cpu(result: dict, cpu_a: list, cpu_b: list, warmups: int) -> dict:
    """Add the children's CPU time (user + system) to a pair result: steadier than wall time on a busy machine."""
    a, b = cpu_a[warmups:], cpu_b[warmups:]
    result["cpu"] = pair_result(a, b)
    return result


def state_read(big: str, repeats: int, warmups: int) -> dict:
    python = sys.executable
    cwd = os.path.dirname(big)
    cpu_a: list = []
    cpu_b: list = []
    argv = [python, "-m", "fold_core", "state", "--store", big, "--format", "json", "--now", NOW]
    result = paired(lambda: _child(argv, cwd, cpu_a), lambda: _child([python, "-c", "import json"], cwd, cpu_b),
                    repeats, warmups=warmups)
    return _with_cpu(result, cpu_a, cpu_b, warmups)


def cli_commit(big: str, small: str, scratch: str, repeats: int, warmups: int) -> dict:
    python = sys.executable
    stores = {"big": _copy(big, scratch, "cli-big"), "small": _copy(small, scratch, "cli-small")}
    streams = {name: Batches(Store(FileRecorder(path)).state(), "cli") for name, path in stores.items()}
    batch_file = os.path.join(scratch, "batch.json")
    minute = [0]
    cpu: dict[str, list] = {"big": [], "small": []}

    def run(name: str):
        def go() -> None:
            minute[0] += 1
            with open(batch_file, "w", encoding="utf-8") as out:
                json.dump(streams[name].next(), out, ensure_ascii=False)
            now = f"2027-06-02T{minute[0] // 60 % 24:02d}:{minute[0] % 60:02d}:00+08:00"
            _child([python, "-m", "fold_core", "commit", "--store", stores[name], "--actor", ACTOR, "--now", now,
                    batch_file], scratch, cpu[name])
        return go

    result = paired(run("big"), run("small"), repeats, warmups=warmups)
    for path in stores.values():
        shutil.rmtree(path, ignore_errors=True)
    return _with_cpu(result, cpu["big"], cpu["small"], warmups)


def in_process(big: str, small: str, scratch: str, commits: int, warmups: int) -> dict:
    """Alternating long-lived in-process commits on copies of both stores (on ``scratch``).

    The warm-ups cover what a long-lived process pays once: its first snapshot
    refresh (32 commits in) and the first look-ups that collect the index keys;
    the slowest warm-up is reported too.
    """
    stores = {"big": Store(FileRecorder(_copy(big, scratch, "mem-big"))),
              "small": Store(FileRecorder(_copy(small, scratch, "mem-small")))}
    streams = {name: Batches(store.state(), "mem") for name, store in stores.items()}  # first session untimed
    times: dict[str, list[float]] = {"big": [], "small": []}
    cpu: dict[str, list[float]] = {"big": [], "small": []}
    warm: dict[str, list[float]] = {"big": [], "small": []}
    for index in range(warmups + commits):
        now = f"2027-06-03T{index // 60 % 24:02d}:{index % 60:02d}:00+08:00"
        for name, store in stores.items():
            batch = streams[name].next()
            started, started_cpu = time.perf_counter(), time.process_time()
            answer = store.commit(batch, actor=ACTOR, now=now)
            elapsed, used = time.perf_counter() - started, time.process_time() - started_cpu
            if answer.exit_code != 0:
                raise RuntimeError(f"commit rejected on {name}: {json.dumps(answer.document, ensure_ascii=False)[:600]}")
            if index >= warmups:
                times[name].append(elapsed)
                cpu[name].append(used)
            else:
                warm[name].append(elapsed)
    items = {name: len(store.state().items) for name, store in stores.items()}
    for store in stores.values():
        store.recorder.close()
    checked = _verify(stores["big"].recorder.path)
    for store in stores.values():
        shutil.rmtree(store.recorder.path, ignore_errors=True)
    result = pair_result(times["big"], times["small"])
    result["slowest_ratio"] = result["subject"]["max"] / result["subject"]["median"]
    result["cpu"] = pair_result(cpu["big"], cpu["small"])
    result["cpu"]["slowest_ratio"] = result["cpu"]["subject"]["max"] / result["cpu"]["subject"]["median"]
    result["small_slowest_ratio"] = result["baseline"]["max"] / result["baseline"]["median"]
    result["warmups"] = {"n": warmups, "slowest_big": max(warm["big"], default=0.0),
                         "slowest_small": max(warm["small"], default=0.0)}
    result["verify_after_commits"] = checked
    result["items"] = items
    return result


def _verify(path: str) -> str:
    """``foldctl verify`` of a store (the whole log replayed and compared with the snapshot)."""
    from fold_core.errors import StoreError
    from fold_core.store.verify import verify_store

    try:
        report = verify_store(path)
    except StoreError as error:
        return f"failed: {error}"
    return json.dumps({key: report[key] for key in ("ok", "records", "snapshot")})


def _remove_snapshot(path: str) -> None:
    for name in os.listdir(path):
        if name.startswith("snapshot") or name.startswith(".snapshot"):
            target = os.path.join(path, name)
            shutil.rmtree(target) if os.path.isdir(target) else os.remove(target)


def recovery(big: str, scratch: str, repeats: int) -> dict:
    cold = os.path.join(scratch, "cold")
    shutil.rmtree(cold, ignore_errors=True)
    os.makedirs(cold)
    for name in ("meta.json", "events.jsonl"):
        os.link(os.path.join(big, name), os.path.join(cold, name))
    log_path = os.path.join(cold, "events.jsonl")
    recover_times, parse_times = [], []
    for index in range(repeats + 1):
        _remove_snapshot(cold)
        manager = FileRecorder(cold).session(write=False)
        started = time.perf_counter()
        session = manager.__enter__()
        elapsed = time.perf_counter() - started
        records = session.state.event_seq
        manager.__exit__(None, None, None)
        started = time.perf_counter()
        count = parse_once(log_path)
        parsed = time.perf_counter() - started
        assert count == records, (count, records)
        if index:
            recover_times.append(elapsed)
            parse_times.append(parsed)
    shutil.rmtree(cold, ignore_errors=True)
    result = pair_result(recover_times, parse_times)
    result["records"] = records
    result["rate_ratio"] = 1 / result["ratio"]
    return result


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--big", required=True)
    parser.add_argument("--small", required=True)
    parser.add_argument("--scratch", required=True)
    parser.add_argument("--repeats", type=int, default=11)
    parser.add_argument("--warmups", type=int, default=2)
    parser.add_argument("--commits", type=int, default=100)
    parser.add_argument("--commit-warmups", type=int, default=70, help="in-process warm-ups (a first refresh is at 32)")
    parser.add_argument("--recovery-repeats", type=int, default=3)
    parser.add_argument("--only", default="state,cli,commit,recovery")
    args = parser.parse_args(argv)
    only = set(args.only.split(","))
    os.makedirs(args.scratch, exist_ok=True)
    import fold_core

    result: dict = {"name": "flat", "code": os.path.dirname(os.path.dirname(fold_core.__file__))}
    if "state" in only:
        result["state"] = state_read(args.big, args.repeats, args.warmups)
    if "cli" in only:
        result["cli_commit"] = cli_commit(args.big, args.small, args.scratch, args.repeats, args.warmups)
    if "commit" in only:
        result["commit_disk"] = in_process(args.big, args.small, args.scratch, args.commits, args.commit_warmups)
        shm = tempfile.mkdtemp(prefix="fold-flat-", dir="/dev/shm") if os.path.isdir("/dev/shm") else None
        if shm:
            try:
                result["commit_tmpfs"] = in_process(args.big, args.small, shm, args.commits, args.commit_warmups)
            finally:
                shutil.rmtree(shm, ignore_errors=True)
    if "recovery" in only:
        result["recovery"] = recovery(args.big, args.scratch, args.recovery_repeats)
    return result


if __name__ == "__main__":
    emit_json(main())
