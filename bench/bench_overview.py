"""Benchmark 5: the visual overview of a 64-item state vs a blank page in the same Chromium.

What: ``render_overview`` (HTML from the template → a fresh page in its own
context → fonts ready → DOM measured → a second pass when card text does not
fit → full-page PNG screenshot → overview.png and render.json written) for a
state of 64 active items with Chinese titles and summaries in three layers
(root 10 items, two children layers of 25 and 22, one of 7), all layers full or
nearly full, so that many small trace cards overflow and take the second pass.

Baseline, alternated with each render in the same browser (``paired``): a blank
page through the same path (fresh context, the same request blocking, fonts
ready, screenshot). A second baseline is a blank page of the overview's full
height (the screenshot's size alone). Also timed: capture + layout in-process
(pure Python, no browser), and the whole ``foldctl overview`` command in a
subprocess (Python start, store read, Chromium launch and close) against a
subprocess that launches the same Chromium through Playwright and
screenshots a blank page.

``python bench/bench_overview.py [--repeats N] [--doc docs/benchmarks.md]``
prints the figures as JSON and, with ``--doc``, replaces its section of the
document (between the ``overview`` markers; ``run_all.py`` keeps it).
Benchmarks are not tests: nothing fails on time.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from common import bench_dir, paired, process, summarize  # noqa: E402
from timing import finish  # noqa: E402
from doc_sections import replace_block  # noqa: E402

from fold_host.overview import layout  # noqa: E402
from fold_host.overview.browser import Browser  # noqa: E402
from fold_host.overview.render import render_overview  # noqa: E402
from fold_host.overview.page import PAGE_MARGIN, page_width  # noqa: E402
from fold_core.store.file import file_store  # noqa: E402

NOW = "2026-10-09T08:00:00+08:00"
LATER = "2026-10-10T09:30:00+08:00"
BEGIN, END = "<!-- overview benchmark: begin -->", "<!-- overview benchmark: end -->"
TOPICS = ["签证材料", "周报", "机票改签", "信用卡账单", "PR 评审", "季度预算", "体检预约", "房租续约",
          "论文修改", "客户回访", "服务器告警", "家长会", "快递签收", "年假申请", "保险理赔"]
STEPS = ["待确认", "进行中", "等回复", "缺材料", "已提交", "需要你决定", "明天截止", "已排期"]
KINDS = ["needs-you", "in-progress", "done", "fyi"]
# Weights per layer: root (10 items, 63), children of r0 (25, 64), of r1 (22, 64), of r2 (7, 32).
LAYERS = {
    "r": ["critical", "high", "normal", "normal", "normal", "low", "low", "trace", "trace", "trace"],
    "r0": ["high"] + ["normal"] * 4 + ["low"] * 4 + ["trace"] * 16,
    "r1": ["normal"] * 6 + ["low"] * 6 + ["trace"] * 10,
    "r2": ["high", "normal", "normal", "low", "low", "trace", "trace"],
}
BLANK = "<!doctype html><html><head><meta charset='utf-8'><title>blank</title></head><body></body></html>"


def declarations(seed: int = 5) -> list[dict]:
    """The 64-item workload as one batch of nested declarations."""
    rng = random.Random(seed)
    counter = iter(range(1000))

    def one(item_id: str, weight: str) -> dict:
        n = next(counter)
        title = f"{rng.choice(TOPICS)}{rng.choice(STEPS)} #{n}"[:24]
        summary = f"{rng.choice(TOPICS)}{rng.choice(STEPS)}，等对方回复后再跟进，周{n % 7 + 1}前处理。"[:60]
        return {"id": item_id, "title": title, "summary": summary, "weight": weight, "kind": rng.choice(KINDS)}

    root = [one(f"r{i}", weight) for i, weight in enumerate(LAYERS["r"])]
    for parent in ("r0", "r1", "r2"):
        root[int(parent[1:])]["children"] = [one(f"{parent}-{i}", weight) for i, weight in enumerate(LAYERS[parent])]
    return root


def build(path: str) -> dict:
    store = file_store(path, budget=64)
    answer = store.commit({"batch_id": "bench-64", "declarations": declarations()}, actor="bench", now=NOW)
    if answer.exit_code != 0:
        raise RuntimeError(f"the workload was rejected: {answer.document}")
    return answer.document


def blank(browser: Browser, width: int, height: int | None = None) -> None:
    html = BLANK if height is None else BLANK.replace("<body></body>", "<body><div id=h></div></body>").replace(
        "<title>blank</title>", f"<title>blank</title><style>#h{{height:{height}px}}</style>")
    with browser.page(width) as run:
        run.load(html)
        run.screenshot()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--warmups", type=int, default=2)
    parser.add_argument("--process-repeats", type=int, default=5)
    parser.add_argument("--doc", help="replace the overview section of this Markdown file")
    args = parser.parse_args(argv)

    work = bench_dir("overview")
    store = os.path.join(work, "store")
    build(store)
    state = file_store(store).state()
    items = sum(1 for item in state.items.values() if item["status"] == "active")

    def plan() -> layout.Overview:
        return layout.layout(layout.capture(state, now=LATER))

    layout_times = [0.0] * args.repeats
    for index in range(args.repeats):
        started = time.perf_counter()
        overview = plan()
        layout_times[index] = time.perf_counter() - started
    width = page_width(overview) + 2 * PAGE_MARGIN
    out = os.path.join(work, "out")
    result: dict = {"items": items, "layers": len(overview.layers), "layout": summarize(layout_times)}
    with Browser() as browser:
        last: dict = {}

        def render() -> None:
            last.update(render_overview(overview, out, browser=browser))

        result["browser"] = browser.version
        result["blank"] = paired(render, lambda: blank(browser, width), args.repeats, warmups=args.warmups)
        with open(last["render"], encoding="utf-8") as file:
            measured = json.load(file)
        height = measured["page"]["height"]
        result["sized_blank"] = paired(render, lambda: blank(browser, width, height), args.repeats,
                                       warmups=args.warmups)
    result["page"] = measured["page"]
    result["overflow"] = len(measured["overflow"])
    result["areas"] = measured["areas"]

    python = sys.executable
    cli = process([python, "-m", "fold_host", "--store", store, "overview", "--out", out, "--now", LATER])
    launch = process([python, "-c", (
        "from playwright.sync_api import sync_playwright\n"
        "from fold_host.overview.browser import LAUNCH_ARGS, chromium_path\n"
        "with sync_playwright() as p:\n"
        "    b = p.chromium.launch(executable_path=chromium_path(), headless=True, args=LAUNCH_ARGS)\n"
        f"    page = b.new_page(viewport={{'width': {width}, 'height': 800}})\n"
        f"    page.set_content({BLANK!r})\n"
        "    page.screenshot(full_page=True)\n"
        "    b.close()\n")])
    result["process"] = paired(cli, launch, args.process_repeats, warmups=1)
    return finish(result, args.doc, write_section)


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms" if seconds >= 0.01 else f"{seconds * 1000:.2f} ms"


def figure(summary: dict) -> str:
    return f"{ms(summary['median'])} [{ms(summary['q1'])}–{ms(summary['q3'])}]"


def section(result: dict) -> str:
    blank_pair, sized, proc = result["blank"], result["sized_blank"], result["process"]
    verdict = "meets" if blank_pair["ratio"] <= 3 else "**misses**"
    load = " / ".join(f"{value:.2f}" for value in result["machine"]["loadavg"])
    size = f"{result['page']['width']}×{result['page']['height']} px"
    table = [
        ("what", "overview", "baseline (same run)", "ratio", "target", "verdict"),
        ("---",) * 6,
        (f"render a {result['items']}-item state, in a running Chromium", figure(blank_pair["subject"]),
         f"{figure(blank_pair['baseline'])} blank page", f"{blank_pair['ratio']:.2f}×", "≤ 3×", verdict),
        (f"the same, against a blank page of the same size ({size})", figure(sized["subject"]),
         f"{figure(sized['baseline'])} sized blank page", f"{sized['ratio']:.2f}×", "—", "—"),
        ("whole `foldctl overview` process", figure(proc["subject"]),
         f"{figure(proc['baseline'])} Playwright + Chromium, blank page", f"{proc['ratio']:.2f}×", "—", "—"),
    ]
    rows = "\n".join("| " + " | ".join(row) + " |" for row in table)
    return f"""{BEGIN}
## 5. Visual overview (`foldctl overview`)

Generated by `python bench/bench_overview.py --doc docs/benchmarks.md`; `run_all.py` keeps this section.

{rows}
| capture + layout (pure Python, no browser) | {figure(result['layout'])} | — | — | — | — |

Method. The workload is one batch of {result['items']} items with Chinese titles and summaries in
{result['layers']} layers (root 10 items; children layers of 25, 22 and 7), every layer full or nearly
full, so {result['overflow']} small cards do not hold their text and the render takes its second pass
(marks and the detail list). One render is `render_overview` into a new run directory: template → fresh
page in its own context (JavaScript off, every request blocked) → fonts ready → DOM measured → second pass →
full-page PNG → overview.png and render.json written (measured areas within
{result['areas']['max_error'] * 100:.3f}% of the geometry). The baseline is a blank page through the same
path in the same browser (fresh context, the same request blocking, fonts ready, screenshot), timed
alternately with each render: {blank_pair['subject']['n']} pairs after warm-up; the ratio is the ratio of
the medians (median of per-pair ratios: {blank_pair['pair_ratios']['median']:.2f}×). Times are medians
[interquartile range]. The process row runs `python -m fold_core overview` ({proc['subject']['n']} runs)
against a Python process that launches the same Chromium through Playwright and screenshots a blank page:
the browser's start dominates both. Chromium {result['browser']}, Python {result['machine']['python']},
{result['machine']['nproc']} cores, load average at the end {load}.
{END}
"""


def write_section(path: str, result: dict) -> None:
    replace_block(path, BEGIN, END, section(result))


if __name__ == "__main__":
    sys.exit(main())
