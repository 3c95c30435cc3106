"""The agent input stays bounded with the editor's tools (contract §9: tools, max_tool_calls, max_tool_bytes).

Method: the two stores of ``bench_context`` (the ``churn`` workload, 100 and
10,000 records: the not-active index and the log grow with the records; the
host.db inbox holds 2,000 observations). For each, one attempt of an LLM
editor that uses its tools is played through the host's own code: the §9
input (``decide_signal`` then ``build_input``), the five tool definitions as
the OpenAI SDK sends them, and the answers of a fixed series of calls made
through the attempt's ``ToolBox`` over ``HostTools`` with the default bounds
(8 calls, 16 KB each): the biggest active item with its children, the
history of an item that lives through the whole log (limit 50), a search
(limit 20), the not-active items (limit 50), one observation, and three more
item and history lookups. The size that counts is the attempt's last
request, which holds all of it (UTF-8 JSON bytes); the time of each lookup is
shown beside it.

Run: ``python bench/bench_tools.py`` (about a minute the first time: it builds
the stores; scratch space under ``$FOLD_BENCH_DIR``). It prints the figures
and writes its section of ``docs/benchmarks.md`` (``--no-doc`` to only print).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from datetime import timedelta

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from bench_context import prepare  # noqa: E402
from common import now_at  # noqa: E402
from doc_sections import replace_section  # noqa: E402

from fold_core.editor_tools import ToolBox  # noqa: E402
from fold_core.store.file import file_store  # noqa: E402
from fold_core.timefmt import parse_instant  # noqa: E402
from fold_host.cycle.tools import HostTools  # noqa: E402
from fold_host.cycle.context import build_input  # noqa: E402
from fold_host.hostdb import open_host_db  # noqa: E402
from fold_host.cycle.signal import decide_signal  # noqa: E402

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SECTION = "tools"


def _document(path: str, now: str) -> dict:
    with open_host_db(path) as db:
        signal, events = decide_signal(db, now=parse_instant(now), now_text=now, review_every=timedelta(hours=6),
                                       max_events=50, coverage=[], last_window=None)
        return build_input(file_store(path), db, now=now, batch_id="bench",
                           user={"background": "", "purpose": "", "feedback_policy": ""}, events=events,
                           signal=signal)


def _calls(document: dict) -> list[tuple[str, dict]]:
    """The attempt's tool calls, chosen from what the input shows (the same choice for every store)."""
    items = document["state"]["root"]["items"]
    parent = max(items, key=lambda item: len((item.get("children") or {}).get("items", ())))
    lasting = sorted(item["id"] for item in items)[0]
    first_event = document["events"][0]["id"]
    return [("fold_get_item", {"id": parent["id"]}), ("fold_get_history", {"item": lasting, "limit": 50}),
            ("fold_search_observations", {"query": "签证 截止", "limit": 20}),
            ("fold_list_not_active", {"limit": 50}), ("fold_get_observation", {"id": first_event}),
            ("fold_get_item", {"id": items[-1]["id"]}), ("fold_get_history", {"item": parent["id"], "limit": 50}),
            ("fold_list_not_active", {"query": "签证", "limit": 50})]


def measure(path: str) -> dict:
    now = now_at(30_000)
    document = _document(path, now)
    box = ToolBox(HostTools(path, now))
    conversation = [{"role": "system", "content": "(skill)"},
                    {"role": "user", "content": json.dumps(document, ensure_ascii=False, separators=(",", ":"))}]
    timings = []
    for number, (name, arguments) in enumerate(_calls(document)):
        started = time.perf_counter()
        answer = box.call(name, arguments)
        timings.append((name, time.perf_counter() - started, len(answer.text.encode())))
        call_id = f"call_{number}"
        conversation.append({"role": "assistant", "content": None, "tool_calls": [
            {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}]})
        conversation.append({"role": "tool", "tool_call_id": call_id, "content": answer.text})
    tools = [{"type": "function", "function": spec} for spec in box.specs]
    request = {"model": "m", "messages": conversation, "tools": tools}
    size = lambda value: len(json.dumps(value, ensure_ascii=False).encode())  # noqa: E731
    return {"input": size(document), "specs": size(tools), "answers": sum(t[2] for t in timings),
            "request": size(request), "calls": timings, "errors": [c for c in box.calls if c.get("error")]}


def run() -> dict:
    results = {"small": measure(prepare("records-100", 100, 2000)),
               "large": measure(prepare("records-10000", 10_000, 2000))}
    results["ratio"] = results["large"]["request"] / results["small"]["request"]
    return results


def section(results: dict) -> str:
    small, large = results["small"], results["large"]

    def row(label: str, case: dict) -> str:
        return (f"| {label} | {case['input'] / 1000:.1f} kB | {case['specs'] / 1000:.1f} kB | "
                f"{case['answers'] / 1000:.1f} kB | **{case['request'] / 1000:.1f} kB** |")

    lookups = [f"| {name} | {s[2] / 1000:.1f} kB | {s[1] * 1000:.0f} ms | {l[2] / 1000:.1f} kB | {l[1] * 1000:.0f} ms |"
               for (name, *_), s, l in zip(small["calls"], small["calls"], large["calls"])]
    return "\n".join([
        "## 15. Agent input with the editor's tools",
        "",
        "`bench/bench_tools.py`. " + __doc__.split("\n\n")[1].replace("\n", " "),
        "",
        "| store | §9 input | tool definitions | 8 tool answers | last request (all of it) |",
        "|---|---|---|---|---|",
        row("100 records", small),
        row("10,000 records", large),
        "",
        f"**Ratio 10,000 / 100 records: {results['ratio']:.3f}×** (target ≤ 1.2×). Each answer is at most "
        "16 KB and an attempt makes at most 8 calls, so the tools add at most 128 KB whatever the history.",
        "",
        "| lookup | answer (100) | time (100) | answer (10,000) | time (10,000) |",
        "|---|---|---|---|---|",
        *lookups,
    ])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--no-doc", action="store_true", help="print only; leave docs/benchmarks.md alone")
    args = parser.parse_args(argv)
    results = run()
    assert not results["small"]["errors"] and not results["large"]["errors"], results
    text = section(results)
    print(text)
    if not args.no_doc:
        replace_section(os.path.join(REPO_ROOT, "docs", "benchmarks.md"), SECTION, text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
