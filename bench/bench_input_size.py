"""What one editor call sends: the §9 input's size and the prompt tokens, by state size and history (§9).

Method: stores of 20, 200 and 1,000 active items (root items, and parents
whose children layers are filled with trace items, within every layer's
budget of 64), each with a fresh host.db holding 20 new observations
(realistic mail, 300–1,500 characters, CJK, threads); and the 200-item store
after 1,000 more cycles of history (each creates one trace item and withdraws
the oldest, so the log and the not-active index grow by 1,000). For each,
the host's own path builds the input (``signal.decide_signal``, then
``context.build_input``) and the real ``openai`` backend sends one attempt —
skill, tools and input — to the scripted OpenAI-compatible server
(``tests/support/llm_servers.py``), whose reported prompt tokens are its
deterministic estimate (UTF-8 JSON characters of the request / 4), not a real
tokenizer's count. The input is sent as the host sends it to an editor with tools
(``bounded_view.editor_view``: above ``BRIEF_ABOVE`` active items, trace items brief); the whole input's size is
shown beside it, and so is the skill's own size per language.

Run: ``python bench/bench_input_size.py`` (under a minute; scratch space
under ``$FOLD_BENCH_DIR``). It prints the figures and writes its section of
``docs/benchmarks.md`` (``--no-doc`` to only print).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from datetime import timedelta

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO_ROOT)  # the scripted server lives in tests/support

from bench_context import observations  # noqa: E402
from common import SCRATCH, now_at  # noqa: E402
from doc_sections import replace_section  # noqa: E402

from fold_agents.llm.openai import OpenAIBackend, OpenAISettings  # noqa: E402
from fold_core.plugin_api import AgentRequest  # noqa: E402
from fold_core.store.file import file_store  # noqa: E402
from fold_core.timefmt import parse_instant  # noqa: E402
from fold_host.cycle.bounded_view import BRIEF_ABOVE, editor_view  # noqa: E402
from fold_host.cycle.context import build_input  # noqa: E402
from fold_host.cycle.signal import decide_signal  # noqa: E402
from fold_host.cycle.tools import HostTools  # noqa: E402
from fold_host.hostdb import open_host_db  # noqa: E402
from fold_host.skill import load_skill  # noqa: E402
from tests.support.llm_servers import LLMServer, text  # noqa: E402

SECTION = "input-size"
NEW_EVENTS = 20
HISTORY = 1000
ANSWER = json.dumps({"dispositions": [], "batch": {"declarations": [], "acknowledges": []}})


def item(item_id: str, weight: str, step: int) -> dict:
    return {"id": item_id, "title": f"跟进事项 {item_id}", "summary": f"第 {step} 条：等对方回复后再跟进，附件已更新。",
            "weight": weight, "kind": "in-progress", "reason": "新邮件提到这件事。",
            "sources": [{"channel": "email", "ref": f"event:e-{item_id}"}]}


def build(path: str, active: int) -> None:
    """A store of ``active`` items: up to 20 trace root items, else parents (low) of trace children."""
    shutil.rmtree(path, ignore_errors=True)
    store = file_store(path, budget=64)
    if active <= 20:
        batch = {"declarations": [item(f"r{n}", "trace", n) for n in range(active)]}
        store.commit(batch, actor="agent", now=now_at(0), batch_id="build-root")
        return
    parents = -(-active // 62)  # each children layer holds 62 trace items (1 share each) within its 64
    children = active - parents
    for p in range(parents):
        count = children // parents + (1 if p < children % parents else 0)
        parent = {**item(f"p{p}", "low", p), "children": [item(f"p{p}-c{n}", "trace", n) for n in range(count)]}
        store.commit({"declarations": [parent]}, actor="agent", now=now_at(p), batch_id=f"build-{p}")


def add_history(path: str, cycles: int) -> None:
    """``cycles`` commits at the root: each creates one trace item and withdraws the one made before it."""
    store = file_store(path)
    for n in range(cycles):
        declarations = [item(f"h{n}", "trace", n)]
        if n:
            declarations.append({"id": f"h{n - 1}", "relation": "withdraw", "reason": "移出当前状态。"})
        store.commit({"declarations": declarations}, actor="agent", now=now_at(100 + n), batch_id=f"history-{n}")


def measure(path: str, server: LLMServer) -> dict:
    for leftover in ("host.db", "host.db-wal", "host.db-shm"):
        if os.path.exists(os.path.join(path, leftover)):
            os.remove(os.path.join(path, leftover))
    now = now_at(30_000)
    with open_host_db(path) as db:
        db.add_observations(observations(NEW_EVENTS))
        signal, events = decide_signal(db, now=parse_instant(now), now_text=now, review_every=timedelta(hours=6),
                                       max_events=50, coverage=[], last_window=None)
        document = build_input(file_store(path), db, now=now, batch_id="bench",
                               user={"background": "", "purpose": "", "feedback_policy": ""}, events=events,
                               signal=signal)
        backend = OpenAIBackend(OpenAISettings(model="scripted-model", base_url=server.openai_url))
        shown = editor_view(document, backend, db)  # what the host sends an editor with tools
    server.reset().script(text(ANSWER))
    reply = backend.propose(AgentRequest(input=shown, skill=load_skill("zh"), tools=HostTools(path, now)))
    body = json.dumps(server.requests[0].body, ensure_ascii=False).encode()
    state = document["state"]
    return {"whole": len(json.dumps(document, ensure_ascii=False, separators=(",", ":")).encode()),
            "bytes": len(json.dumps(shown, ensure_ascii=False, separators=(",", ":")).encode()),
            "brief": _brief(shown["state"]["root"]),
            "request": len(body), "tokens": reply.input_tokens, "events": len(document["events"]),
            "active": _active(state["root"]), "not_active": len(state["not_active"]),
            "not_active_total": state["not_active_total"]}


def _brief(layer: dict) -> int:
    return sum(bool(entry.get("brief")) + (_brief(entry["children"]) if entry.get("children") else 0)
               for entry in layer["items"])


def _active(layer: dict) -> int:
    return sum(1 + (_active(entry["children"]) if entry.get("children") else 0) for entry in layer["items"])


def run() -> dict:
    base = os.path.join(SCRATCH, "input-size")
    results = {}
    with LLMServer() as server:
        for active in (20, 200, 1000):
            path = os.path.join(base, f"active-{active}")
            build(path, active)
            results[f"active-{active}"] = measure(path, server)
        path = os.path.join(base, "active-200-history")
        build(path, 200)
        add_history(path, HISTORY)
        results["history"] = measure(path, server)
    results["skill"] = {lang: len(load_skill(lang).encode()) for lang in ("zh", "en")}
    return results


def section(results: dict) -> str:
    def row(label: str, case: dict) -> str:
        return (f"| {label} | {case['active']} | {case['brief']} | {case['events']} | {case['not_active']} of "
                f"{case['not_active_total']} | {case['whole'] / 1000:.1f} kB | {case['bytes'] / 1000:.1f} kB | "
                f"{case['request'] / 1000:.1f} kB | {case['tokens']} |")

    skill = results["skill"]
    big, history = results["active-1000"], results["history"]
    return "\n".join([
        "## 16. What one editor call sends: input size and prompt tokens",
        "",
        "`bench/bench_input_size.py`. " + __doc__.split("\n\n")[1].replace("\n", " "),
        "",
        "| state | active items | sent brief | new events | not-active entries listed | §9 input, whole | "
        "§9 input as sent | whole request (skill, tools, input) | prompt tokens (scripted server) |",
        "|---|---|---|---|---|---|---|---|---|",
        row("20 active items", results["active-20"]),
        row("200 active items", results["active-200"]),
        row("1,000 active items", big),
        row(f"200 active items after {HISTORY:,} cycles of history", history),
        "",
        f"Skill text: {skill['zh'] / 1000:.1f} kB in Chinese, {skill['en'] / 1000:.1f} kB in English (UTF-8), the "
        "same bytes on every call. History adds "
        f"{history['bytes'] / results['active-200']['bytes']:.3f}× to the 200-item input as sent (the not-active "
        "list is bounded): flat in history. Above "
        f"{BRIEF_ABOVE} active items an editor with tools gets the trace items brief (id, title, weight, kind, "
        "share; the rest through `fold_get_item`): the 1,000-item input as sent is "
        f"{big['bytes'] / big['whole']:.2f}× the whole one, about "
        f"{(big['bytes'] - results['active-200']['bytes']) / 800:.0f} bytes per further active item instead of "
        f"{(big['whole'] - results['active-200']['whole']) / 800:.0f}. Editors without tools (the baseline, "
        "`command`, `max_tool_calls = 0`) get the whole state.",
    ])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--no-doc", action="store_true", help="print only; leave docs/benchmarks.md alone")
    args = parser.parse_args(argv)
    text_ = section(run())
    print(text_)
    if not args.no_doc:
        replace_section(os.path.join(REPO_ROOT, "docs", "benchmarks.md"), SECTION, text_)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
