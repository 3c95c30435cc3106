"""A long, realistic history: years of heavy mail folded into one store.

``History`` is a seeded stream of requests driven through the real kernel
(every batch goes through ``apply_batch``; a rejection is a bug here and
raises). Its shape follows what the issue measured on a 100k-record log
written by an independent implementation: most items end withdrawn or
merged (≥ 50k of 100k records' worth), thousands of annotations (saved,
acknowledged, on items later withdrawn or merged), merges, restores, and
records of every type. Per record, by weight:

* *mail* (50 %): a new item (CJK title, summary, 1–2 sources with quotes,
  sometimes a due date) in a parent's children layer or at the root; the
  oldest leaves of that layer are withdrawn in the same batch when the
  budget needs room;
* *update* (21 %): 1–3 active leaves patched (summary, sometimes sources or kind);
* *done* (8 %): 1–2 active leaves withdrawn;
* *merge* (4 %): 2–3 leaves of one layer merged into a new item;
* *restore* (2 %): a withdrawn leaf (recent or old) whose parent is active
  comes back (room made as for *mail*);
* *annotate* (5 %): a user annotation on an active item or a recently withdrawn one;
* *ack* (2 %): pending annotations acknowledged (an ``acknowledge`` record);
* *checked* (6 %): a batch that changes nothing;
* *project* (2 %): a new root parent with 5–15 children; the oldest parent is
  withdrawn with all its children when the root needs room or holds 8 parents.

``write_history`` writes ``meta.json`` and ``events.jsonl`` with the store's
own encoders — the bytes a FileRecorder writes, without one fsync per
record — and no snapshot: each code under test builds its own by recovering.
The kernel's working state drops, every 1,000 records, the not-active items
no later batch can name (everything but the restore candidates): the records
are the same, and building stays linear whatever the kernel costs per item.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import time
from datetime import datetime, timedelta, timezone

from fold_core import kernel
from fold_core.state import empty_state
from fold_core.store.log import encode_record
from fold_core.store.meta import write_meta

__all__ = ["History", "write_history"]

BUDGET, ACTOR = 64, "agent"
MAX_LAYER = 14  # members per layer: older leaves are withdrawn to stay below
MAX_PARENTS = 8  # projects at the root: a new one retires the oldest
START = datetime(2024, 1, 8, 8, 0, tzinfo=timezone(timedelta(hours=8)))
TOPICS = ["签证材料", "周报", "机票改签", "信用卡账单", "PR 评审", "季度预算", "体检预约", "房租续约", "论文修改",
          "客户回访", "服务器告警", "孩子家长会", "快递签收", "年假申请", "保险理赔", "合同续签", "发票报销"]
STEPS = ["待确认", "进行中", "等回复", "缺材料", "已提交", "需要你决定", "明天截止", "已排期"]
CHANNELS = ["email", "worklog", "calendar", "chat", "rss"]
KINDS = ["needs-you", "in-progress", "fyi", "done"]
SHARES = {"critical": 24, "high": 12, "normal": 6, "low": 3, "trace": 1}
NOTES = ["这封邮件我已经电话确认过了，不用再提醒。", "流水明天上午去银行打印。", "等老板回复再说。\n先别动。",
         "这个优先级太高了，降一点。", "和上周那件是同一件事。", "已经交给小王处理。"]
MIX = [("mail", 50), ("update", 21), ("done", 8), ("merge", 4), ("restore", 2), ("annotate", 5), ("ack", 2),
       ("checked", 6), ("project", 2)]


def now_at(step: int) -> str:
    """The record's ``now``: 17 minutes per record (100k records ≈ 3 years), with an offset."""
    return (START + timedelta(minutes=17 * step)).isoformat()


class History:
    """The seeded request stream; ``records(count)`` yields the accepted records."""

    def __init__(self, seed: int = 11) -> None:
        self.rng = random.Random(seed)
        self.state = empty_state(BUDGET)
        self.step = 0
        self.serial = 0
        self.gone: list[str] = []  # withdrawn leaves, oldest first: restore candidates
        self.pending: list[str] = []  # saved annotation ids

    # -- reading the kernel's state ---------------------------------------

    def _members(self, layer: str | None) -> tuple[str, ...]:
        return self.state.active.get(layer, ())

    def _used(self, layer: str | None, leaving: set[str]) -> int:
        items = self.state.items
        return sum(items[m]["share"] for m in self._members(layer) if m not in leaving)

    def _is_parent(self, item_id: str) -> bool:
        return item_id.startswith("p-")

    def _leaves(self, layer: str | None, leaving: set[str]) -> list[str]:
        items = self.state.items
        return [m for m in self._members(layer) if m not in leaving and not self._is_parent(m)
                and not items[m]["ever_had_children"]]

    def _parents(self) -> list[str]:
        return [m for m in self._members(None) if self._is_parent(m)]

    # -- building declarations --------------------------------------------

    def _text(self, size: int) -> str:
        rng = self.rng
        return f"{rng.choice(TOPICS)}{rng.choice(STEPS)} #{self.serial}"[:size]

    def _summary(self) -> str:
        rng = self.rng
        return f"第 {self.step} 条：{rng.choice(TOPICS)}{rng.choice(STEPS)}，等对方回复后再跟进，附件已更新。"[:60]

    def _sources(self) -> list[dict]:
        rng = self.rng
        return [{"channel": rng.choice(CHANNELS), "ref": f"event:e-{self.step}-{k}",
                 "quote": f"请在{rng.randint(1, 28)}日{rng.randint(8, 20)}点前回复：{rng.choice(TOPICS)}的材料还缺一份。"}
                for k in range(rng.randint(1, 2))]

    def _new(self, item_id: str, weight: str) -> dict:
        rng = self.rng
        decl = {"id": item_id, "title": self._text(24), "summary": self._summary(), "weight": weight,
                "kind": rng.choice(KINDS), "reason": "新邮件提到这件事，需要跟进。", "sources": self._sources()}
        if rng.random() < 0.3:
            decl["due_at"] = now_at(self.step + rng.randint(10, 3000))
        return decl

    def _next_id(self, prefix: str) -> str:
        self.serial += 1
        return f"{prefix}-{self.serial:07d}"

    def _room(self, layer: str | None, share: int, leaving: set[str]) -> list[dict] | None:
        """Withdrawals of the layer's oldest leaves that make room for ``share`` (None: impossible)."""
        out = []
        used, count = self._used(layer, leaving), len([m for m in self._members(layer) if m not in leaving])
        for member in self._leaves(layer, leaving):
            if used + share <= BUDGET and count < MAX_LAYER:
                break
            count -= 1
            leaving.add(member)
            used -= self.state.items[member]["share"]
            out.append({"id": member, "relation": "withdraw", "reason": "很久没有动静，移出当前状态。"})
        return out if used + share <= BUDGET and count < MAX_LAYER else None

    def _weight(self, layer: str | None) -> str:
        weights = ["trace"] * 5 + ["low"] * 3 + ["normal"] * 2 if layer is not None else ["trace"] * 3 + ["low"]
        return self.rng.choice(weights)

    # -- the kinds of request ---------------------------------------------

    def _mail(self) -> dict:
        parents = self._parents()
        layer = self.rng.choice(parents) if parents and self.rng.random() < 0.6 else None
        weight, leaving = self._weight(layer), set()
        room = self._room(layer, SHARES[weight], leaving)
        if room is None:
            return self._checked()
        item_id = self._next_id("m")
        new = self._new(item_id, weight)
        if layer is None:
            return {"declarations": [new] + room}
        stored = self.state.items[layer]
        patch = {"id": layer, "relation": f"supersedes:{layer}", "weight": stored["weight"], "kind": stored["kind"]}
        keep = [{"id": m, "relation": f"supersedes:{m}", "weight": self.state.items[m]["weight"],
                 "kind": self.state.items[m]["kind"]} for m in self._members(layer) if m not in leaving]
        return {"declarations": [{**patch, "children": keep + [new] + room}]}

    def _update(self) -> dict:
        rng = self.rng
        pool = [m for layer in self.state.active for m in self._members(layer) if not self._is_parent(m)]
        if not pool:
            return self._checked()
        declarations = []
        for item_id in rng.sample(sorted(pool), min(len(pool), rng.randint(1, 3))):
            stored = self.state.items[item_id]
            decl = {"id": item_id, "relation": f"supersedes:{item_id}", "summary": self._summary(),
                    "weight": stored["weight"], "kind": stored["kind"], "reason": "对方回复了最新进展。"}
            if rng.random() < 0.3:
                decl["sources"] = self._sources()
            if rng.random() < 0.2:
                decl["kind"] = rng.choice(KINDS)
            declarations.append(decl)
        return {"declarations": declarations}

    def _done(self) -> dict:
        pool = [m for layer in self.state.active for m in self._leaves(layer, set())]
        if not pool:
            return self._checked()
        chosen = self.rng.sample(sorted(pool), min(len(pool), self.rng.randint(1, 2)))
        return {"declarations": [{"id": m, "relation": "withdraw", "reason": "已经处理完毕。"} for m in chosen]}

    def _merge(self) -> dict:
        rng = self.rng
        layers = [layer for layer in self.state.active if len(self._leaves(layer, set())) >= 3]
        if not layers:
            return self._mail()
        layer = rng.choice(sorted(layers, key=lambda x: x or ""))
        sources = rng.sample(self._leaves(layer, set()), rng.randint(2, 3))
        items = self.state.items
        weight = max((items[s]["weight"] for s in sources), key=lambda w: SHARES[w])
        new = self._new(self._next_id("g"), weight)
        new["relation"] = "merges:[" + ", ".join(sources) + "]"
        return {"declarations": [new]}

    def _restore(self) -> dict:
        rng, items = self.rng, self.state.items
        for _ in range(8):
            if not self.gone:
                break
            index = len(self.gone) - 1 - rng.randrange(min(len(self.gone), 300)) if rng.random() < 0.6 \
                else rng.randrange(len(self.gone))
            item_id = self.gone[index]
            stored = items.get(item_id)
            if stored is None or stored["status"] != "withdrawn":
                continue
            parent = stored["parent"]
            if parent is not None and (parent not in items or items[parent]["status"] != "active"):
                continue
            leaving: set[str] = set()
            room = self._room(parent, stored["share"], leaving)
            if room is None:
                continue
            del self.gone[index]
            return {"declarations": [{"id": item_id, "relation": f"supersedes:{item_id}",
                                      "weight": stored["weight"], "kind": stored["kind"],
                                      "reason": "对方又来信了，重新跟进。"}] + room}
        return self._mail()

    def _ack(self) -> dict:
        if not self.pending:
            return self._checked()
        count = min(len(self.pending), self.rng.randint(1, 5))
        acked, self.pending = self.pending[:count], self.pending[count:]
        return {"declarations": [], "acknowledges": acked}

    def _checked(self) -> dict:
        return {"declarations": []}

    def _project(self) -> dict:
        rng = self.rng
        weight, leaving = rng.choice(["normal", "low"]), set()
        declarations = []
        used = self._used(None, leaving)
        parents = self._parents()
        if used + SHARES[weight] > BUDGET or len(parents) >= MAX_PARENTS:
            if parents:  # retire the oldest project with all its children
                leaving.add(parents[0])
                used -= self.state.items[parents[0]]["share"]
                declarations.append({"id": parents[0], "relation": "withdraw", "reason": "项目结束，整体归档。"})
        room = self._room(None, SHARES[weight], leaving)
        if room is None:
            return self._mail()
        parent = self._new(self._next_id("p"), weight)
        parent["children"] = [self._new(self._next_id("c"), rng.choice(["trace", "trace", "low"]))
                              for _ in range(rng.randint(5, 15))]
        return {"declarations": declarations + room + [parent]}

    # -- the stream ----------------------------------------------------------

    def _annotate(self) -> dict | None:
        rng = self.rng
        recent = [m for m in self.gone[-50:] if self.state.items.get(m, {}).get("status") == "withdrawn"]
        pool = recent if recent and rng.random() < 0.2 else \
            [m for layer in self.state.active for m in self._members(layer)]
        if not pool:
            return None
        return {"item": rng.choice(sorted(pool)), "text": rng.choice(NOTES), "author": "user"}

    def next_request(self) -> tuple[str, dict]:
        """``("commit", batch)`` or ``("annotate", arguments)`` for the next record."""
        self.step += 1
        kind = self.rng.choices([k for k, _ in MIX], [w for _, w in MIX])[0]
        if kind == "annotate":
            arguments = self._annotate()
            if arguments is not None:
                return "annotate", arguments
            kind = "mail"
        batch = getattr(self, f"_{kind}")()
        batch["batch_id"] = f"h-{self.step}"
        return "commit", batch

    def accept(self, request: tuple[str, dict]) -> dict:
        """Run one request through the kernel; the record (raises on a rejection)."""
        kind, body = request
        now = now_at(self.step)
        if kind == "annotate":
            outcome = kernel.save_annotation(self.state, now=now, **body)
        else:
            outcome = kernel.apply_batch(self.state, body, actor=ACTOR, now=now)
        if not isinstance(outcome, kernel.Accepted):
            raise RuntimeError(f"history request rejected: {json.dumps(outcome.document, ensure_ascii=False)[:800]}")
        self.state = outcome.state
        record = outcome.record
        if kind == "annotate":
            self.pending.append(record["annotation"]["id"])
        else:
            for change in record["changes"]:
                image = change["item"]
                if image["status"] == "withdrawn" and not self._is_parent(image["id"]) \
                        and not image["ever_had_children"]:
                    self.gone.append(image["id"])
        return record

    def initial_batch(self) -> dict:
        rng, declarations = self.rng, []
        for _ in range(8):
            parent = self._new(self._next_id("p"), rng.choice(["normal", "low"]))
            parent["children"] = [self._new(self._next_id("c"), w)
                                  for w in ["normal"] * 2 + ["low"] * 6 + ["trace"] * 12]
            declarations.append(parent)
        declarations += [self._new(self._next_id("m"), "trace") for _ in range(12)]
        return {"batch_id": "h-0", "declarations": declarations}

    def records(self, count: int, prune_every: int = 1000):
        """``count`` records: the initial batch, then the mix."""
        yield self.accept(("commit", self.initial_batch()))
        for _ in range(count - 1):
            if prune_every and self.step % prune_every == 0:
                self._prune()
            yield self.accept(self.next_request())

    def _prune(self) -> None:
        """Drop not-active items no later request names (all but restore and annotation candidates)."""
        self.gone = self.gone[-2000:] + []
        keep = set(self.gone)
        items = {k: v for k, v in self.state.items.items() if v["status"] == "active" or k in keep}
        self.state = self.state.replace(items=items)


def write_history(path: str, count: int) -> dict:
    """Write ``meta.json`` and ``events.jsonl`` of ``count`` records at ``path`` (no snapshot); facts."""
    started = time.perf_counter()
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path)
    write_meta(path, BUDGET)
    history = History()
    kinds: dict[str, int] = {}
    size = 0
    with open(os.path.join(path, "events.jsonl"), "wb") as log:
        for record in history.records(count):
            data = encode_record(record)
            log.write(data)
            size += len(data)
            kinds[record["type"]] = kinds.get(record["type"], 0) + 1
        log.flush()
        os.fsync(log.fileno())
    return {"records": count, "log_bytes": size, "types": kinds, "annotations": len(history.state.annotations),
            "build_seconds": time.perf_counter() - started}
