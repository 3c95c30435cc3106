"""Benchmark 2: ``foldctl state`` on a large log vs ``python -c 'import json'``.

What: the wall time of a real ``python -m fold_core state --store DIR
--format json`` subprocess (stdout to /dev/null; ``--now`` left to the
clock, as a user runs it) on a store whose log holds N records (100,000 in
the full run), for each workload (steady / churn, see ``common``) and each
snapshot position:

* ``fresh`` — the snapshot reflects the last record (recovery reads nothing);
* ``tail 31`` — the snapshot is 31 records behind (the most a reader replays
  when writers refresh it, with the default bound of 32);
* ``tail 64`` — 64 behind (a writer failed to refresh it): the reader
  replays them; it never rewrites a usable snapshot (the kept stale snapshot
  is put back before every run anyway, untimed).

Baseline: ``python -c 'import json'`` with the same interpreter, timed
alternately with each foldctl run. Subprocesses run with
PYTHONDONTWRITEBYTECODE removed (a user's machine writes bytecode caches) and
after untimed warm-up runs (caches written, files in the page cache).

For the analysis it also times the phases in-process (modules already
imported): open + recover (parse snapshot head, replay tail), the state
document, and the JSON encoding; records ``-X importtime`` of one ``foldctl
state`` run; and profiles (cProfile) one in-process read per snapshot
position.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

from common import SCRATCH, build_store, clean_env, emit_json, install_snapshot, paired, process, summarize

TAILS = (0, 31, 64)


def foldctl_vs_python(store: str, tails, repeats: int, warmups: int) -> dict:
    python = sys.executable
    cwd = os.path.dirname(store)
    command = process([python, "-m", "fold_core", "state", "--store", store, "--format", "json"], cwd=cwd)
    baseline = process([python, "-c", "import json"], cwd=cwd)
    result = {}
    for tail in tails:
        result[f"tail-{tail}"] = paired(command, baseline, repeats, warmups=warmups,
                                        setup=lambda tail=tail: install_snapshot(store, tail))
    install_snapshot(store, 0)
    return result


def phases(store: str, repeats: int) -> dict:
    """In-process phase times of one state read (fresh snapshot)."""
    from fold_core import kernel
    from fold_core.cli.common import dumps
    from fold_core.store.file import FileRecorder

    install_snapshot(store, 0)
    now = "2026-12-01T09:00:00+08:00"
    recover, view, encode = [], [], []
    for _ in range(repeats):
        started = time.perf_counter()
        with FileRecorder(store).session(write=False) as session:  # as Store.state_document does
            view_state = getattr(session, "state_for_view", None)
            state = view_state(item=None, not_active=kernel.NOT_ACTIVE_DEFAULT) if view_state else session.state
        recover.append(time.perf_counter() - started)
        started = time.perf_counter()
        document = kernel.state_document(state, now)
        view.append(time.perf_counter() - started)
        started = time.perf_counter()
        data = dumps(document)  # what ``emit`` writes to stdout
        encode.append(time.perf_counter() - started)
    return {"recover": summarize(recover), "state_document": summarize(view), "encode": summarize(encode),
            "output_bytes": len(data)}


def profiles(store: str, tails, top: int = 6) -> dict:
    """cProfile of one in-process read per snapshot position: total and the top functions by own time."""
    import cProfile
    import pstats

    from fold_core.cli.common import dumps
    from fold_core.store.file import file_store

    result = {}
    for tail in tails:
        install_snapshot(store, tail)
        profiler = cProfile.Profile()
        started = time.perf_counter()
        profiler.enable()
        dumps(file_store(store).state_document(now="2026-12-01T09:00:00+08:00").document)
        profiler.disable()
        total = time.perf_counter() - started
        stats = pstats.Stats(profiler).stats
        rows = sorted(stats.items(), key=lambda kv: -kv[1][2])[:top]
        result[f"tail-{tail}"] = {"total_s": total, "top": [
            {"function": f"{os.path.basename(file)}:{line}:{name}", "calls": calls, "own_s": own, "cum_s": cum}
            for (file, line, name), (_, calls, own, cum, _) in rows]}
    install_snapshot(store, 0)
    return result


def import_times(store: str) -> dict:
    """``-X importtime`` of one ``foldctl state``: total and the heaviest modules (cumulative)."""
    env = clean_env()
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "fold_core", "state", "--store", store,
                           "--format", "json"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env,
                          cwd=os.path.dirname(store), text=True)
    rows = []
    for line in done.stderr.splitlines():
        if not line.startswith("import time:") or "[us]" in line:
            continue
        own, cumulative, name = (part.strip() for part in line[len("import time:"):].split("|"))
        rows.append((int(own), int(cumulative), name))
    top_level = [r for r in rows if not r[2].startswith(" ")]
    heavy = sorted(top_level, key=lambda r: -r[1])[:8]
    return {"modules": len(rows), "total_us": sum(r[0] for r in rows),
            "fold_core_us": sum(r[0] for r in rows if r[2].strip().startswith("fold_core")),
            "heaviest": [{"module": name.strip(), "cumulative_us": cum} for _, cum, name in heavy]}


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=11)
    parser.add_argument("--warmups", type=int, default=2)
    parser.add_argument("--stores", default=os.path.join(SCRATCH, "stores"),
                        help="where the stores live (built when missing)")
    parser.add_argument("--workloads", default="steady,churn")
    args = parser.parse_args(argv)
    result = {"name": "state", "records": args.records, "workloads": {}}
    for kind in args.workloads.split(","):
        store = os.path.join(args.stores, f"{kind}-{args.records}")
        facts = None
        if not os.path.exists(os.path.join(store, "events.jsonl")):
            facts = build_store(store, kind, args.records, TAILS)
        entry = foldctl_vs_python(store, TAILS, args.repeats, args.warmups)
        entry["phases"] = phases(store, max(args.repeats // 2, 1))
        entry["imports"] = import_times(store)
        entry["profiles"] = profiles(store, TAILS)
        if facts:
            entry["build"] = facts
        result["workloads"][kind] = entry
    return result


if __name__ == "__main__":
    emit_json(main())
