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
``write_snapshot``): the bytes FileRecorder would write, without N fsyncs.
Scratch space: ``$FOLD_BENCH_DIR`` (default /tmp/fold-bench). The timing helpers live in
``timing`` (re-exported here).
"""

from __future__ import annotations

import json
import os
import random
import shutil
import sys
import time
from datetime import datetime, timedelta, timezone

# The repository's code, or another copy of it (``FOLD_BENCH_CODE``: run_floor measures the code before a change).
sys.path.insert(0, os.environ.get("FOLD_BENCH_CODE") or os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from fold_core import kernel  # noqa: E402
from fold_core.state import empty_state  # noqa: E402
from fold_core.store.log import encode_record  # noqa: E402
from fold_core.store.meta import write_meta  # noqa: E402
from fold_core.store.refresh import write_snapshot  # noqa: E402
from timing import (SCRATCH, bench_dir, clean_env, emit_json, filesystem, pair_result, paired,  # noqa: E402,F401
                    process, summarize, timed)

BUDGET, ACTOR = 64, "agent"
START = datetime(2026, 10, 8, 20, 0, tzinfo=timezone(timedelta(hours=8)))
TOPICS = ["签证材料", "周报", "机票改签", "信用卡账单", "PR 评审", "季度预算", "体检预约", "房租续约",
          "论文修改", "客户回访", "服务器告警", "孩子家长会", "快递签收", "年假申请", "保险理赔"]
STEPS = ["待确认", "进行中", "等回复", "缺材料", "已提交", "需要你决定", "明天截止", "已排期"]
CHANNELS = ["email", "worklog", "calendar", "chat", "rss"]


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
        build_store(path, kind, count, (0, 31, 64))
    return path


def build_store(path: str, kind: str, count: int, tails: tuple[int, ...] = (0,)) -> dict:
    """Write a store of ``count`` records at ``path`` (see the module docstring).

    For each ``t`` in ``tails`` the snapshot ``t`` records behind the log end
    (its head and parts) is kept in ``<path>.snapshots/tail-<t>/``; the
    tail-0 one (fresh) is also installed. Returns facts (sizes, build time).
    """
    from fold_core.state import Replayer  # T folded record by record (linear)

    started = time.perf_counter()
    aside = path + ".snapshots"
    for directory in (path, aside):
        shutil.rmtree(directory, ignore_errors=True)
        os.makedirs(directory)
    write_meta(path, BUDGET)
    workload = Workload(kind)
    full = Replayer(empty_state(BUDGET))
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
                kept = os.path.join(aside, f"tail-{tail}")
                os.makedirs(kept)
                state = full.freeze()
                full = Replayer(state)
                if not write_snapshot(kept, state, offset=offset, last_offset=last_offset, batches=dict(batches)):
                    raise RuntimeError(f"could not write the snapshot into {kept}")
        log.flush()
        os.fsync(log.fileno())
    state = full.freeze()
    install_snapshot(path, 0 if 0 in tails else None)
    return {"kind": kind, "records": count, "log_bytes": offset, "build_seconds": time.perf_counter() - started,
            "items": len(state.items), "active": sum(len(m) for m in state.active.values()),
            "not_active": state.inactive_total}


def snapshot_files(directory: str) -> list[str]:
    """The names of a snapshot's files in ``directory`` (the head and its parts)."""
    return sorted(name for name in os.listdir(directory) if name.startswith("snapshot."))


def install_snapshot(path: str, tail: int | None) -> None:
    """Put the kept snapshot ``tail`` records behind in place (None: no snapshot at all)."""
    for name in snapshot_files(path):
        os.remove(os.path.join(path, name))
    if tail is not None:
        kept = os.path.join(path + ".snapshots", f"tail-{tail}")
        for name in snapshot_files(kept):
            shutil.copyfile(os.path.join(kept, name), os.path.join(path, name))
