"""Shared helpers of the benchmarks: workloads, store building, timing.

Workloads (deterministic, seeded): a ~200-item state with realistic content
(CJK titles and summaries, sources with quotes, due dates) laid out as the
contract allows it under budget 64 — 10 root parents with 18 children each
(every layer within its budget) and 10 childless root items — and two streams
of agent ticks over it:

* ``steady``: each tick patches two random items (new summary, sometimes new
  sources); the item table stays at ~200 entries.
* ``churn``: each tick creates one childless root item and withdraws the
  oldest one; the not-active part of the item table grows by one per tick.

Every batch goes through the real kernel (``apply_batch``); a rejection is a
bug in the workload and raises. ``build_store`` writes a store of N records
with the store's own encoders (``write_meta``, ``encode_record``,
``encode_snapshot``): the bytes FileRecorder would write, without N fsyncs.
Scratch space: ``$FOLD_BENCH_DIR`` (default /tmp/fold-bench).
"""

from __future__ import annotations

import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import time
from datetime import datetime, timedelta, timezone

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the repository

from fold_core import kernel  # noqa: E402
from fold_core.state import empty_state  # noqa: E402
from fold_core.store.log import encode_record  # noqa: E402
from fold_core.store.meta import write_meta  # noqa: E402
from fold_core.store.snapshot import batches_line, encode_snapshot  # noqa: E402

BUDGET, ACTOR = 64, "agent"
START = datetime(2026, 10, 8, 20, 0, tzinfo=timezone(timedelta(hours=8)))
TOPICS = ["签证材料", "周报", "机票改签", "信用卡账单", "PR 评审", "季度预算", "体检预约", "房租续约",
          "论文修改", "客户回访", "服务器告警", "孩子家长会", "快递签收", "年假申请", "保险理赔"]
STEPS = ["待确认", "进行中", "等回复", "缺材料", "已提交", "需要你决定", "明天截止", "已排期"]
CHANNELS = ["email", "worklog", "calendar", "chat", "rss"]
SCRATCH = os.environ.get("FOLD_BENCH_DIR", "/tmp/fold-bench")


def now_at(tick: int) -> str:
    """The tick's ``now``: one minute per tick, with an offset."""
    return (START + timedelta(minutes=tick)).isoformat()


def _title(rng: random.Random, n: int) -> str:
    return f"{rng.choice(TOPICS)}{rng.choice(STEPS)} #{n}"[:24]


def _summary(rng: random.Random, tick: int) -> str:
    return f"第 {tick} 次更新：{rng.choice(TOPICS)}{rng.choice(STEPS)}，等对方回复后再跟进。"[:60]


def _sources(rng: random.Random, tick: int) -> list[dict]:
    return [{"channel": rng.choice(CHANNELS), "ref": f"event:e-{tick}-{k}",
             "quote": f"请在{rng.randint(1, 28)}日{rng.randint(8, 20)}点前回复，附件已更新。"}
            for k in range(rng.randint(1, 2))]


class Workload:
    """A kernel-driven stream of batches over the ~200-item state."""

    def __init__(self, kind: str, seed: int = 7) -> None:
        assert kind in ("steady", "churn", "commit")
        self.kind, self.rng, self.state = kind, random.Random(seed), empty_state(BUDGET)
        self.tick = self.serial = 0
        self.info: dict[str, tuple[str, str]] = {}  # id -> (weight, kind)
        self.leaves: list[str] = []  # childless root items, oldest first
        self.children: list[str] = []

    def initial_batch(self) -> dict:
        rng, declarations = self.rng, []
        child_weights = ["normal"] * 2 + ["low"] * 6 + ["trace"] * 10  # 40 of 64 in each children layer
        for p, weight in enumerate(["normal"] * 2 + ["low"] * 8):  # 36 + 14 (leaves below) of 64 at the root
            children = [self._new(f"p{p:02d}-c{c:02d}", w, rng.choice(["needs-you", "in-progress", "fyi"]))
                        for c, w in enumerate(child_weights)]
            self.children += [child["id"] for child in children]
            declarations.append({**self._new(f"p{p:02d}", weight, "in-progress"), "children": children})
        for w in ["low"] * 2 + ["trace"] * 8:
            declarations.append(self._new(self._leaf_id(), w, "fyi"))
        return {"batch_id": "init", "declarations": declarations}

    def _leaf_id(self) -> str:
        self.serial += 1
        self.leaves.append(f"n-{self.serial:07d}")
        return self.leaves[-1]

    def _new(self, item_id: str, weight: str, kind: str) -> dict:
        rng = self.rng
        self.info[item_id] = (weight, kind)
        decl = {"id": item_id, "title": _title(rng, self.serial), "summary": _summary(rng, self.tick),
                "weight": weight, "kind": kind, "reason": "新邮件提到这件事，需要跟进。",
                "sources": _sources(rng, self.tick)}
        if rng.random() < 0.3:
            decl["due_at"] = now_at(self.tick + rng.randint(60, 20000))
        return decl

    def _patch(self, item_id: str) -> dict:
        rng = self.rng
        weight, kind = self.info[item_id]
        decl = {"id": item_id, "relation": f"supersedes:{item_id}", "summary": _summary(rng, self.tick),
                "weight": weight, "kind": kind, "reason": "对方回复了最新进展。"}
        if rng.random() < 0.3:
            decl["sources"] = _sources(rng, self.tick)
        return decl

    def _replace_oldest_leaf(self) -> list[dict]:
        old = self.leaves.pop(0)
        weight, kind = self.info.pop(old)
        return [self._new(self._leaf_id(), weight, kind),
                {"id": old, "relation": "withdraw", "reason": "已处理完毕，移出当前状态。"}]

    def next_batch(self) -> dict:
        """The next tick's batch (a fresh batch_id every time)."""
        self.tick += 1
        if self.kind == "steady":
            ids = self.rng.sample(sorted(self.info), 2)
            declarations = [self._patch(item) for item in ids]
        elif self.kind == "churn":
            declarations = self._replace_oldest_leaf()
        else:  # commit: one patch, one new, one withdraw
            declarations = [self._patch(self.rng.choice(self.children))] + self._replace_oldest_leaf()
        return {"batch_id": f"tick-{self.kind}-{self.tick}", "declarations": declarations}

    def accept(self, batch: dict, now: str) -> dict:
        """Run ``batch`` through the kernel; the record (raises on a rejection)."""
        outcome = kernel.apply_batch(self.state, batch, actor=ACTOR, now=now)
        if not isinstance(outcome, kernel.Accepted):
            raise RuntimeError(f"workload batch rejected: {json.dumps(outcome.document, ensure_ascii=False)[:600]}")
        self.state = outcome.state
        return outcome.record

    def records(self, count: int, prune_every: int = 1000):
        """``count`` records: the initial batch, then ticks.

        Every ``prune_every`` ticks the kernel's working state drops its
        withdrawn items: no batch here names one and ids are never reused, so
        the records are the same, but ``apply_batch`` (whose ``apply_record``
        copies the whole item table) stays linear over 100k churn ticks.
        """
        yield self.accept(self.initial_batch(), now_at(0))
        for _ in range(count - 1):
            if prune_every and self.tick % prune_every == 0 and self.state.inactive_total:
                items = {k: v for k, v in self.state.items.items() if v["status"] == "active"}
                self.state = self.state.replace(items=items)
            yield self.accept(self.next_batch(), now_at(self.tick + 1))

    @classmethod
    def from_state(cls, kind: str, state, seed: int = 11) -> "Workload":
        """A workload that continues from a stored state (ids, weights and leaves read from it)."""
        workload, items = cls(kind, seed), state.items
        for layer, members in state.active.items():
            for item in members:
                workload.info[item] = (items[item]["weight"], items[item]["kind"])
                if layer is not None:
                    workload.children.append(item)
        workload.leaves = [item for item in state.active.get(None, ()) if not state.active.get(item)]
        workload.serial = max((int(item[2:]) for item in items if item.startswith("n-")), default=0)
        workload.tick = state.event_seq
        return workload


def existing_store(stores: str, kind: str, count: int) -> str:
    """The path of the ``kind`` store of ``count`` records under ``stores``, built when missing."""
    path = os.path.join(stores, f"{kind}-{count}")
    if not os.path.exists(os.path.join(path, "events.jsonl")):
        build_store(path, kind, count, (0, 63, 64))
    return path


def build_store(path: str, kind: str, count: int, tails: tuple[int, ...] = (0,)) -> dict:
    """Write a store of ``count`` records at ``path`` (see the module docstring).

    For each ``t`` in ``tails`` the snapshot ``t`` records behind the log end
    is kept as ``<path>.snapshots/tail-<t>.json``; the tail-0 one (fresh) is
    also installed as ``snapshot.json``. Returns facts (sizes, build time).
    """
    from fold_core.state import _Builder  # T folded record by record (linear)

    started = time.perf_counter()
    aside = path + ".snapshots"
    for directory in (path, aside):
        shutil.rmtree(directory, ignore_errors=True)
        os.makedirs(directory)
    write_meta(path, BUDGET)
    workload = Workload(kind)
    full = _Builder(empty_state(BUDGET))
    batches: dict = {}
    offset = last_offset = 0
    wanted = {count - t: t for t in tails}
    with open(os.path.join(path, "events.jsonl"), "wb") as log:
        for record in workload.records(count):
            data = encode_record(record)
            log.write(data)
            full.apply(record)
            batches[record["batch_id"]] = [record["event_seq"], record["request_digest"], offset]
            last_offset, offset = offset, offset + len(data)
            tail = wanted.get(record["event_seq"])
            if tail is not None:
                with open(os.path.join(aside, f"tail-{tail}.json"), "wb") as snap:
                    snap.write(encode_snapshot(full.freeze(), offset, last_offset, batches_line(batches)))
        log.flush()
        os.fsync(log.fileno())
    state = full.freeze()
    install_snapshot(path, 0 if 0 in tails else None)
    return {"kind": kind, "records": count, "log_bytes": offset, "build_seconds": time.perf_counter() - started,
            "items": len(state.items), "active": sum(len(m) for m in state.active.values()),
            "not_active": state.inactive_total}


def install_snapshot(path: str, tail: int | None) -> None:
    """Put the kept snapshot ``tail`` records behind in place (None: no snapshot at all)."""
    target = os.path.join(path, "snapshot.json")
    if tail is not None:
        shutil.copyfile(os.path.join(path + ".snapshots", f"tail-{tail}.json"), target)
    elif os.path.exists(target):
        os.remove(target)


# -- timing --------------------------------------------------------------------


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


def emit_json(result: dict) -> None:
    print(json.dumps(result, ensure_ascii=False))  # one line on stdout: run_all reads it
