"""Where a commit and a cold ``foldctl state`` spend their time (see ``run_floor``).

Runs against the ``fold_core`` first on ``sys.path`` and prints one JSON line:

* ``commit`` (and ``commit_tmpfs``, the same on ``/dev/shm`` where an fsync
  costs almost nothing): the in-process commit of ``bench_commit``
  (long-lived store, 3 declarations, ~200 active items), split into stages
  by wrapping the store's own functions — lock, recovery, request digest,
  batch look-up, kernel, record encoding, the append's write, its fsync, and
  what follows — median microseconds per stage over the commits that did not
  refresh the snapshot, and the refresh alone (its fsyncs counted apart);
* ``cold``: ``foldctl state`` on the store given by ``--cold`` with no
  snapshot, run in this process through the CLI's own ``main`` (stdout to
  /dev/null): the replay of the log, the snapshot written by the reader, the
  state document and its JSON, and what is left (argument parsing, imports
  already done are not counted).

Wrapping adds about a microsecond per wrapped call; the stages are for
reading the floor, the ratios come from ``bench_commit`` and ``run_floor``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time

from common import ACTOR, Workload, bench_dir, emit_json, now_at  # noqa: E402 (sets sys.path)

from fold_core import kernel
from fold_core.store import file as file_module
from fold_core.store.base import Store
from fold_core.store.file import FileRecorder


class Marks:
    """Timestamps of entering and leaving wrapped functions, in order."""

    def __init__(self) -> None:
        self.marks: list[tuple[str, float]] = []
        self.undo: list = []

    def wrap(self, owner, name: str, label: str) -> None:
        original = getattr(owner, name)
        marks, clock = self.marks, time.perf_counter

        def wrapped(*args, **kwargs):
            marks.append((label + ">", clock()))
            try:
                return original(*args, **kwargs)
            finally:
                marks.append((label + "<", clock()))

        setattr(owner, name, wrapped)
        self.undo.append((owner, name, original))

    def restore(self) -> None:
        for owner, name, original in reversed(self.undo):
            setattr(owner, name, original)


def _stages(marks: list[tuple[str, float]]) -> dict[str, float]:
    """Seconds per stage: inside each wrapped call, and between them (named by what comes next)."""
    stages: dict[str, float] = {}
    for (first, t1), (second, t2) in zip(marks, marks[1:]):
        if first.endswith(">") and second == first[:-1] + "<":
            name = first[:-1]
        elif first.endswith(">"):
            name = first[:-1] + " (before " + second[:-1] + ")"
        else:
            name = "between: " + first[:-1] + " → " + second[:-1]
        stages[name] = stages.get(name, 0.0) + (t2 - t1)
    return stages


def _inclusive(marks: list[tuple[str, float]]) -> dict[str, float]:
    """Seconds inside each wrapped function, nested calls included (summed over its calls)."""
    totals: dict[str, float] = {}
    open_calls: list[tuple[str, float]] = []
    for label, at in marks:
        if label.endswith(">"):
            open_calls.append((label[:-1], at))
        else:
            name, began = open_calls.pop()
            totals[name] = totals.get(name, 0.0) + (at - began)
    return totals


def commit_stages(commits: int, warmups: int, tmpfs: bool = False) -> dict:
    directory = tempfile.mkdtemp(prefix="fold-stages-", dir="/dev/shm") if tmpfs else bench_dir("floor-stages")
    store = Store(FileRecorder(os.path.join(directory, "store"), budget=64))
    workload = Workload("commit")
    assert store.commit(workload.initial_batch(), actor=ACTOR, now=now_at(0)).exit_code == 0
    for _ in range(warmups):
        store.commit(workload.next_batch(), actor=ACTOR, now=now_at(workload.tick))
    marks = Marks()
    recorder = store.recorder
    marks.wrap(recorder, "_take_lock", "lock") if hasattr(recorder, "_take_lock") else marks.wrap(recorder, "_lock",
                                                                                                  "lock")
    marks.wrap(recorder, "_recover", "recover")
    marks.wrap(kernel, "request_identity", "request digest")
    marks.wrap(kernel, "apply_batch", "kernel")
    marks.wrap(file_module, "encode_record", "encode")
    marks.wrap(os, "fsync", "fsync")
    marks.wrap(recorder, "_refresh", "refresh")
    plain: dict[str, list[float]] = {}
    refreshes: list[dict] = []
    totals: list[float] = []
    try:
        for _ in range(commits):
            batch = workload.next_batch()
            marks.marks.clear()
            marks.marks.append(("commit>", time.perf_counter()))
            answer = store.commit(batch, actor=ACTOR, now=now_at(workload.tick))
            marks.marks.append(("commit<", time.perf_counter()))
            assert answer.exit_code == 0, answer.document
            stages = _stages(marks.marks)
            if any(label == "refresh>" for label, _ in marks.marks):
                fsyncs = sum(1 for label, _ in marks.marks if label == "fsync>") - 1
                inside = _inclusive(marks.marks)
                refreshes.append({"seconds": inside.get("refresh", 0.0), "fsync_seconds": inside.get("fsync", 0.0),
                                  "commit": marks.marks[-1][1] - marks.marks[0][1], "fsyncs": fsyncs})
                continue
            totals.append(marks.marks[-1][1] - marks.marks[0][1])
            for name, seconds in stages.items():
                plain.setdefault(name, []).append(seconds)
    finally:
        marks.restore()
        store.recorder.close()
        shutil.rmtree(directory, ignore_errors=True)
    return {"n": len(totals), "median_total": statistics.median(totals),
            "stages": {name: statistics.median(values) for name, values in plain.items()
                       if len(values) == len(totals)},
            "refresh": {"n": len(refreshes), "median": statistics.median(r["seconds"] for r in refreshes)
                        if refreshes else None,
                        "fsync_median": statistics.median(r["fsync_seconds"] for r in refreshes) if refreshes else None,
                        "commit_median": statistics.median(r["commit"] for r in refreshes) if refreshes else None,
                        "fsyncs": max((r["fsyncs"] for r in refreshes), default=0)}}


def cold_state(path: str) -> dict:
    from fold_core import cli
    from fold_core.store import refresh

    for name in os.listdir(path):
        if name.startswith("snapshot") or name.startswith(".snapshot"):
            os.remove(os.path.join(path, name))
    marks = Marks()
    marks.wrap(FileRecorder, "_apply_tail", "replay")
    marks.wrap(FileRecorder, "_refresh", "snapshot written by the reader")
    marks.wrap(refresh, "plan_head", "snapshot: plan")
    marks.wrap(refresh, "_write_plan", "snapshot: encode the parts")
    marks.wrap(os, "fsync", "fsync")
    marks.wrap(kernel, "state_document", "state document")
    common = sys.modules.get("fold_core.cli.common")
    if common is not None and hasattr(common, "dumps"):
        marks.wrap(common, "dumps", "JSON of the document")
    saved = os.dup(1)
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)
    started = time.perf_counter()
    try:
        code = cli.main(["state", "--store", path, "--format", "json", "--now", "2027-06-01T09:00:00+08:00"])
    except SystemExit as done:
        code = done.code
    finally:
        total = time.perf_counter() - started
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(null)
        os.close(saved)
        marks.restore()
    return {"exit": code, "total": total, "stages": _inclusive(marks.marks)}


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commits", type=int, default=320)
    parser.add_argument("--warmups", type=int, default=40)
    parser.add_argument("--cold", help="a store (meta.json and events.jsonl) to read cold")
    args = parser.parse_args(argv)
    result = {"commit": commit_stages(args.commits, args.warmups)}
    if os.path.isdir("/dev/shm"):
        result["commit_tmpfs"] = commit_stages(args.commits, args.warmups, tmpfs=True)
    if args.cold:
        result["cold"] = cold_state(args.cold)
    return result


if __name__ == "__main__":
    emit_json(main())
