"""The machine, method and per-benchmark sections of ``docs/benchmarks.md`` (see ``report``)."""

from __future__ import annotations

from report import TAIL_LABELS, iqr, markdown_table, ms, rate, size


def machine_section(results: dict) -> str:
    m = results["machine"]
    load = lambda values: " / ".join(f"{v:.2f}" for v in values)  # noqa: E731
    rows = [["nproc", str(m["nproc"])], ["Python", f"{m['python']} (`{m['executable']}`)"],
            ["kernel", f"{m['kernel']} ({m['machine']})"], ["SQLite", m["sqlite"]], ["date (UTC)", m["date"]],
            ["code", f"`{m['commit']}`" + (" with uncommitted changes in fold_core/" if m["dirty"] else "")],
            ["load average (1/5/15 min) at start", load(m["loadavg_start"])],
            ["load average at end", load(m.get("loadavg_end", ()))],
            ["scratch directory", f"`{m['scratch']}` on {m['filesystem']}"],
            ["mode", f"{results['mode']} ({results['seconds']:.0f} s in all)"]]
    return "## Machine\n\n" + markdown_table(["", ""], rows) + "\n"


def method_section(results: dict) -> str:
    s, b = results["sizes"], results["builds"]
    build = "; ".join(f"{kind}: build failed ({f['error']})" if "error" in f else
                      f"{kind}: {f['records']:,} records, {size(f['log_bytes'])}, {f['items']:,} items "
                      f"({f['active']} active, {f['not_active']:,} not active), built in {f['build_seconds']:.0f} s"
                      for kind, f in b.items())
    return f"""## Method

* **Workloads** (`bench/common.py`, seeded, every batch through the real kernel `apply_batch`): budget 64;
  10 root parents with 18 children each plus 10 childless root items — 200 active items, every layer within
  its budget; titles, summaries and source quotes in Chinese, sources, some due dates. *steady*: each tick
  patches two random items (new summary, sometimes new sources) — the item table stays at 200. *churn*: each
  tick creates one childless root item and withdraws the oldest — the not-active index grows by one per tick.
* **Large stores**: {build}. Built with the store's own encoders (`write_meta`, `encode_record`,
  `write_snapshot`) instead of {s['records']:,} fsynced commits: the bytes are those FileRecorder writes. The
  kernel's working state drops withdrawn items every 1,000 ticks (no batch names one, ids are never reused, so
  the records are unchanged) and the snapshot state is folded from the records with T, so building is linear.
  Snapshots 0, 31 and 64 records behind the log end are kept beside the store and copied into place before a
  run that needs them (untimed).
* **Pairs**: each Fold measurement alternates with its baseline (Fold, baseline, Fold, …) so both see the same
  machine noise. The ratio is the ratio of the medians; the median of the per-pair ratios is given below as a
  check. Process benchmarks run after {s['process_warmups']} untimed warm-up pairs.
* **Processes** run with `PYTHONDONTWRITEBYTECODE` removed from the environment (a user's machine writes
  bytecode caches; the warm-up runs write them), from the scratch directory, stdout to `/dev/null`.
* **Repeats**: {s['commits']} commits after {s['warmups']} warm-up commits; {s['state_repeats']} pair(s) per
  `foldctl state` case; {s['recovery_repeats']} pair(s) per recovery case.
* The machine is shared: the load average above tells how busy it was. Spread (IQR) is part of every figure.
"""


def _commit(c: dict) -> str:
    p = c["parts"]
    floor = p["write_fsync"]["median"]
    cpu = p["kernel"]["median"] + p["encode"]["median"]
    text = [f"### 1. In-process commit vs SQLite\n",
            f"`bench/bench_commit.py`. A long-lived `Store(FileRecorder(...))`, as a daemon holds it; each commit a "
            f"fresh batch_id and one patch + one new + one withdraw on {c['active']} active items "
            f"({c['items']} in the item table by the end). Record size {c['record_bytes']['median']:.0f} B (median). "
            f"SQLite {c['sqlite']}: WAL, `synchronous=FULL`, one TEXT column, one `BEGIN; INSERT; COMMIT` of "
            f"the record bytes the file store just appended, long-lived connection. Both in `{c['directory']}` "
            f"({c['filesystem']}).\n",
            markdown_table(["", "median [IQR]", "mean", "n"], [
                ["Fold commit", iqr(c["subject"]), ms(c["subject"]["mean"]), str(c["subject"]["n"])],
                ["SQLite transaction", iqr(c["baseline"]), ms(c["baseline"]["mean"]), str(c["baseline"]["n"])],
                ["per-pair ratio Fold / SQLite", iqr(c["pair_ratios"], lambda v: f"{v:.2f}×"), "",
                 str(c["pair_ratios"]["n"])],
                ["bare `write` + `fsync` of the record (same loop)", iqr(p["write_fsync"]),
                 ms(p["write_fsync"]["mean"]), str(p["write_fsync"]["n"])],
                ["kernel `apply_batch` alone (no file)", iqr(p["kernel"]), ms(p["kernel"]["mean"]), str(p["kernel"]["n"])],
                ["`encode_record` alone", iqr(p["encode"]), ms(p["encode"]["mean"]), str(p["encode"]["n"])],
            ]), "",
            f"The floor of any durable append here — one `write` + `fsync` of the same bytes — is {ms(floor)} "
            f"(median), {floor / c['subject']['median']:.0%} of the Fold commit and "
            f"{floor / c['baseline']['median']:.0%} of the SQLite transaction. "
            + ("Both are bound by the fsync, so the ratio stays near 1. " if floor >= c["subject"]["median"] / 2 else
               f"The fsync was fast in this run, so the ratio measures CPU: the Fold commit spends "
               f"{ms(c['subject']['median'] - floor)} above the floor, SQLite {ms(c['baseline']['median'] - floor)}. ")
            + f"The kernel and the encoding alone take {ms(cpu)}; the rest is the store protocol (lock, meta.json, "
            f"stat and tail check, batch-id lookup, request digest, open/append/close) and, in the mean, the "
            f"snapshot refresh every 32 commits. On a shared virtual disk the fsync latency can change by an order "
            f"of magnitude between runs, and the ratio with it: read the floor before the ratio.\n"]
    if c.get("big"):
        text.append("Scale check — the same commit (200 active items) on a copy of each large store; the mean and "
                    "the maximum hold the snapshot refresh that one commit in 32 pays:\n")
        text.append(markdown_table(["store", "records", "items in table", "median [IQR]", "mean", "max", "n"], [
            [b["store"], f"{b['records']:,}", f"{b['items']:,}", iqr(b["commit"]), ms(b["commit"]["mean"]),
             ms(b["commit"]["max"]), str(b["commit"]["n"])] for b in c["big"]]) + "\n")
    return "\n".join(text)


def _state(st: dict) -> str:
    text = ["### 2. `foldctl state` vs `python -c 'import json'`\n",
            f"`bench/bench_state.py`. `python -m fold_core state --store DIR --format json` (clock `--now`), "
            f"{st['records']:,} records in the log. *tail 31* is the most a reader replays when writers refresh the "
            f"snapshot (bound 32); *tail 64* is a snapshot a writer failed to refresh (readers never write one "
            f"that is still usable).\n"]
    for kind, e in st["workloads"].items():
        text.append(f"**{kind}**\n")
        body = [[TAIL_LABELS[t], iqr(e[t]["subject"]), iqr(e[t]["baseline"]), f"{e[t]['ratio']:.2f}×",
                 f"{e[t]['pair_ratios']['median']:.2f}×", str(e[t]["subject"]["n"])] for t in TAIL_LABELS]
        text.append(markdown_table(["snapshot", "foldctl state", "import json", "ratio", "pair ratio", "n"], body))
        ph, imp = e["phases"], e["imports"]
        heavy = ", ".join(f"{h['module']} {h['cumulative_us'] / 1000:.1f} ms" for h in imp["heaviest"][:6])
        prof = e.get("profiles", {})
        if prof:
            text.append("\nOne in-process read under cProfile (modules already imported), top functions by own time:\n")
            text.append(markdown_table(["snapshot", "total", "top functions (own time, calls)"], [
                [TAIL_LABELS[t], ms(p["total_s"]), "; ".join(
                    f"`{r['function']}` {ms(r['own_s'])} ×{r['calls']}" for r in p["top"][:4])]
                for t, p in prof.items()]))
        text.append(f"\nIn-process phases (fresh snapshot, modules already imported): open + recover "
                    f"{iqr(ph['recover'])}, state document {iqr(ph['state_document'])}, JSON encoding "
                    f"{iqr(ph['encode'])}; output {size(ph['output_bytes'])}. `-X importtime` of one run: "
                    f"{imp['modules']} modules, {imp['total_us'] / 1000:.1f} ms of import time, of which fold_core "
                    f"{imp['fold_core_us'] / 1000:.1f} ms; heaviest (cumulative): {heavy}.\n")
    return "\n".join(text)


def _recovery(rc: dict) -> str:
    text = ["### 3. Cold recovery vs line-by-line `json.loads`\n",
            f"`bench/bench_recovery.py`. A new `FileRecorder`, no snapshot, {rc['records']:,} records: shared lock, "
            f"`meta.json`, scan (parse, event_seq check, batch-id and offset index) and T over every record, timed "
            f"until the session is handed out. Baseline: `for line in file: json.loads(line)` over the same file, "
            f"in the same process, alternating.\n"]
    for kind, e in rc["workloads"].items():
        text.append(f"**{kind}**: recovery {iqr(e['subject'])} = {rate(e['recover_rate'])}; parse "
                    f"{iqr(e['baseline'])} = {rate(e['parse_rate'])}; rate ratio {e['rate_ratio']:.2f}× "
                    f"(per-pair {1 / e['pair_ratios']['median']:.2f}×, n={e['subject']['n']}). The recovery includes "
                    f"the snapshot the reader writes when there is none (before it answers); leaving the session "
                    f"then takes {iqr(e['snapshot_write'])}. Profile of one recovery (own time):\n")
        text.append(markdown_table(["function", "calls", "own", "cumulative"],
                                   [[f"`{r['function']}`", str(r["calls"]), ms(r["own_s"]), ms(r["cum_s"])]
                                    for r in e["profile"]]) + "\n")
    return "\n".join(text)


def _size(sz: dict) -> str:
    text = ["### 4. Bytes on disk\n",
            f"`bench/bench_size.py`. `events.jsonl` size / records, the fresh snapshot by file, and the "
            f"mean bytes of each record field over the last 1,000 records.\n"]
    body = []
    for kind, e in sz["workloads"].items():
        parts = ", ".join(f"{name} {size(n)}" for name, n in e["snapshot_parts"].items())
        fields = ", ".join(f"{k} {v}" for k, v in list(e["fields"].items())[:4])
        body.append([kind, f"{e['bytes_per_record']:.0f} B", size(e["log_bytes"]),
                     f"{size(e['snapshot_bytes'])} ({e['snapshot_bytes_per_record']:.0f} B/record): {parts}", fields])
    text.append(markdown_table(["workload", "log per record", "log", "snapshot", "largest record fields (B)"], body))
    return "\n".join(text) + "\n"


def details(results: dict) -> str:
    out = ["## Details\n"]
    for key, part in (("bench_commit", _commit), ("bench_state", _state), ("bench_recovery", _recovery),
                      ("bench_size", _size)):
        value = results.get(key, {})
        out.append(f"### {key}\n\nfailed: `{value['error']}`\n" if "error" in value else part(value))
    return "\n".join(out)
