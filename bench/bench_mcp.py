"""Benchmark 17: ``fold_state`` through ``foldctl mcp`` vs ``Store.state_document`` in process.

What: the wall time of one ``tools/call fold_state`` as an agent sees it —
the MCP SDK's own client (``ClientSession`` over ``stdio_client``) sends the
request to a running ``foldctl mcp`` process and parses the answer into a
``CallToolResult`` (the document as the JSON text of one text block) — on
the benchmark's ~200-item state (``common``: the steady workload,
``--records`` records, fresh snapshot). Also timed: the same call with its
text read into a dict by ``json.loads`` (a second parse, for a program).

Baseline, alternated with each call in the same run: ``Store.state_document``
in this process on a long-lived ``Store`` of the same store (the server keeps
one too) plus a JSON round trip of the document (``json.dumps`` and
``json.loads``, what any transport must at least do). The same ``now`` for
both (``--now`` of the server). Target: the median of the subject ≤ 1.5× the
median of the baseline. Also timed, without a target: the same call over
Streamable HTTP (``foldctl mcp --http`` on 127.0.0.1, the SDK's
``streamable_http_client``).

``python bench/bench_mcp.py [--records N] [--repeats N] [--doc docs/benchmarks.md]``
prints the figures as JSON and, with ``--doc``, replaces its section of the
document (between the ``mcp`` markers; ``run_all.py`` keeps it). Benchmarks
are not tests: nothing fails on time.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from common import build_store, summarize  # noqa: E402
from doc_sections import replace_section  # noqa: E402
from timing import bench_dir, clean_env, finish, pair_result  # noqa: E402

from fold_core.store.file import file_store  # noqa: E402

NOW = "2026-12-01T09:00:00+08:00"
FOLDCTL = os.path.join(os.path.dirname(sys.executable), "foldctl")


def baseline(store) -> None:
    document = store.state_document(now=NOW).document
    json.loads(json.dumps(document, ensure_ascii=False))


def server_cpu() -> float:
    """CPU seconds used so far by this process's ``foldctl mcp`` children (from /proc)."""
    total, me = 0.0, str(os.getpid())
    for pid in os.listdir("/proc"):
        try:
            with open(f"/proc/{pid}/stat") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
            with open(f"/proc/{pid}/cmdline", "rb") as handle:
                command = handle.read()
        except (OSError, IndexError):
            continue
        if fields[1] == me and b"mcp" in command:
            total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


async def pairs(session, store, repeats: int, warmups: int) -> dict:
    """Alternate: the call (until the client has its result), the call read into a dict, the baseline.

    Also the CPU time per call, less sensitive to a busy machine than wall time: the client's (this
    process, around the plain calls) plus the server's (its /proc counters over all calls), against the
    baseline's.
    """
    subject, parsed, base, sizes = [], [], [], set()
    client_cpu = base_cpu = 0.0
    for index in range(warmups + repeats):
        if index == warmups:
            server_start = server_cpu()
        started, cpu = time.perf_counter(), time.process_time()
        result = await session.call_tool("fold_state", {})
        elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
        started = time.perf_counter()
        result = await session.call_tool("fold_state", {})
        document = json.loads(result.content[0].text)  # the answer as a program uses it
        elapsed_parsed = time.perf_counter() - started
        assert not result.is_error and document["schema"] == "fold.state/1", document
        sizes.add(len(result.content[0].text.encode("utf-8")))
        started_base, cpu_base = time.perf_counter(), time.process_time()
        baseline(store)
        elapsed_base, cpu_base = time.perf_counter() - started_base, time.process_time() - cpu_base
        if index >= warmups:
            subject.append(elapsed)
            parsed.append(elapsed_parsed)
            base.append(elapsed_base)
            client_cpu += cpu
            base_cpu += cpu_base
    served = (server_cpu() - server_start) / (2 * repeats)  # two calls per triple
    cpu = {"client": client_cpu / repeats, "server": served, "baseline": base_cpu / repeats}
    cpu["ratio"] = (cpu["client"] + cpu["server"]) / cpu["baseline"]
    return {**pair_result(subject, base), "parsed": pair_result(parsed, base), "document_bytes": max(sizes),
            "cpu": cpu}


async def over_stdio(path: str, repeats: int, warmups: int) -> dict:
    from mcp import ClientSession, StdioServerParameters, stdio_client

    params = StdioServerParameters(command=FOLDCTL, args=["mcp", "--store", path, "--now", NOW, "--read-only"],
                                   env=clean_env())
    with open(os.devnull, "w") as quiet:
        async with stdio_client(params, errlog=quiet) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                return await pairs(session, file_store(path), repeats, warmups)


async def over_http(url: str, path: str, repeats: int, warmups: int) -> dict:
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    async with streamable_http_client(url) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            return await pairs(session, file_store(path), repeats, warmups)


def http_server(path: str):
    process = subprocess.Popen([FOLDCTL, "mcp", "--store", path, "--now", NOW, "--read-only", "--http",
                                "--port", "0"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                               env=clean_env())
    line = process.stderr.readline()
    found = re.search(r"(http://\S+/mcp)", line)
    if not found:
        process.kill()
        raise RuntimeError(f"foldctl mcp --http did not start: {line}{process.stderr.read()}")
    return process, found.group(1)


def main() -> int:
    import anyio

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=200)
    parser.add_argument("--warmups", type=int, default=20)
    parser.add_argument("--doc")
    args = parser.parse_args()
    path = os.path.join(bench_dir("mcp"), f"steady-{args.records}")
    facts = build_store(path, "steady", args.records)
    result = {"store": facts, "warmups": args.warmups, "loadavg_start": os.getloadavg(),
              "stdio": anyio.run(over_stdio, path, args.repeats, args.warmups)}
    process, url = http_server(path)
    try:
        result["http"] = anyio.run(over_http, url, path, args.repeats, args.warmups)
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(30)
    result["direct"] = summarize([_timed(lambda: file_store(path).state_document(now=NOW)) for _ in range(20)])
    return finish(result, args.doc, write_section)


def _timed(function) -> float:
    started = time.perf_counter()
    function()
    return time.perf_counter() - started


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.2f} ms"


def figure(summary: dict) -> str:
    return f"{ms(summary['median'])} [{ms(summary['q1'])}–{ms(summary['q3'])}]"


def section(result: dict) -> str:
    rows = [("what", "`fold_state` through MCP", "`Store.state_document` + JSON round trip (same run)", "ratio",
             "target", "verdict"), ("---",) * 6]
    stdio, http = result["stdio"], result["http"]
    rows.append(("stdio (`foldctl mcp`): until the client has the tool result", figure(stdio["subject"]),
                 figure(stdio["baseline"]), f"{stdio['ratio']:.2f}×", "≤ 1.5×",
                 "meets" if stdio["ratio"] <= 1.5 else "**misses**"))
    rows.append(("stdio, and its text read into a dict (`json.loads`)", figure(stdio["parsed"]["subject"]),
                 figure(stdio["parsed"]["baseline"]), f"{stdio['parsed']['ratio']:.2f}×", "—", "—"))
    cpu = stdio["cpu"]
    rows.append(("stdio, CPU time per call (client + server)", f"{ms(cpu['client'] + cpu['server'])} "
                 f"({ms(cpu['client'])} + {ms(cpu['server'])})", ms(cpu["baseline"]), f"{cpu['ratio']:.2f}×", "—",
                 "—"))
    rows.append(("Streamable HTTP (`foldctl mcp --http`): until the client has the tool result",
                 figure(http["subject"]), figure(http["baseline"]), f"{http['ratio']:.2f}×", "—", "—"))
    table = "\n".join("| " + " | ".join(row) + " |" for row in rows)
    store, load = result["store"], " / ".join(f"{value:.2f}" for value in result["machine"]["loadavg"])
    start = " / ".join(f"{value:.2f}" for value in result["loadavg_start"])
    return f"""## 17. Agents over MCP (`foldctl mcp`)

Generated by `python bench/bench_mcp.py --doc docs/benchmarks.md`; `run_all.py` keeps this section.

{table}

Method. The benchmark's steady workload ({store['records']:,} records, {store['active']} active items,
fresh snapshot). Subject: one `tools/call fold_state` (no filter) from the `mcp` SDK's own client
(`ClientSession`) to a running `foldctl mcp --read-only --now T` process, until the client has the parsed
`CallToolResult` — what an MCP client hands a model: the document ({stdio['document_bytes']:,} bytes of
compact JSON) as the text of one text block. The request and the answer go through the SDK on both sides:
one serialisation on the server, one parse on the client, as in the baseline. The second row also reads
the text into a dict (`json.loads`), a second parse the baseline does not have, for a program that wants
the document as data. Baseline, alternated with each call: `Store.state_document` in the benchmark's
process on a long-lived `Store` of the same store (the server keeps one too), then `json.dumps` and
`json.loads` of the document. CPU time: the client's around each plain call (`time.process_time`), the
server's from its `/proc` counters over all calls, the baseline's around it — less stretched by other
work than wall time. {stdio['subject']['n']} triples (call, call read into a dict, baseline) after
{result['warmups']} warm-up triples; the ratio is the ratio of the medians (median of per-pair ratios:
stdio {stdio['pair_ratios']['median']:.2f}×, read into a dict {stdio['parsed']['pair_ratios']['median']:.2f}×,
HTTP {http['pair_ratios']['median']:.2f}×). Times are medians [interquartile range]. For scale,
`state_document` on a new `Store` each time (recovery from the snapshot included) took
{ms(result['direct']['median'])}. Python {result['machine']['python']}, {result['machine']['nproc']} cores,
load average at the start {start}, at the end {load} (other work shares the machine: a busy machine
stretches both sides, the two processes' hand-offs most).
"""


def write_section(path: str, result: dict) -> None:
    replace_section(path, "mcp", section(result))


if __name__ == "__main__":
    sys.exit(main())
