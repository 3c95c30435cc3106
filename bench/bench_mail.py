"""Benchmark: the ``maildir`` adapter's observations per second vs a bare ``email.message_from_bytes`` loop.

What: one poll of a fresh ``maildir`` adapter over a Maildir of N = 10,000
realistic messages (``mail_corpus.py``: provider header blocks, plain and
HTML alternatives, newsletters, attachments, GB18030/Big5/ISO-2022-JP),
``first_run = last:N`` and ``max_per_poll = N`` so one poll reads them all:
list the folder, read every file, parse it (modern policy), decode headers
and charsets, pick and convert the body (HTML through lxml), list the
attachments, check the seen cache, build and validate the ``Observation``.

Baseline: ``email.message_from_bytes(raw)`` (the default, compat32 policy)
over the same files, read the same way (``os.scandir`` of ``new/``,
``open().read()``) — parsing only, nothing decoded or built.

How: the two run alternately (adapter, baseline, adapter, …) in this
process after one untimed warm-up pair, so both see the same machine noise
and the same page cache. The ratio is observations per second of the adapter
over messages per second of the baseline (higher is better; target ≥ 0.5×).
A per-kind table (``--per-kind`` messages of each kind, in memory, parse and
observation only) shows where the time goes.

``python bench/bench_mail.py [--messages N] [--repeats R] [--doc docs/benchmarks.md]``
"""

from __future__ import annotations

import argparse
import email
import json
import os
import platform
import random
import sys
import time
from datetime import datetime, timezone

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from timing import SCRATCH, pair_result
from doc_sections import replace_block
from mail_corpus import KINDS, build_maildir

from fold_adapters.mail.mailbox import MaildirAdapter, MaildirSettings
from fold_adapters.mail.mime import mail_observations, read_mail

BEGIN, END = "<!-- mail benchmark: begin -->", "<!-- mail benchmark: end -->"
NOW = datetime(2026, 10, 20, 8, 0, tzinfo=timezone.utc)
CORPUS_VERSION = 1


def corpus(count: int) -> tuple[str, int]:
    path = os.path.join(SCRATCH, f"mail-corpus-v{CORPUS_VERSION}-{count}")
    marker = os.path.join(path, "complete")
    if not os.path.exists(marker):
        size = build_maildir(path, count)
        with open(marker, "w") as file:
            file.write(str(size))
    with open(marker) as file:
        return path, int(file.read())


def adapter_poll(path: str, count: int) -> int:
    adapter = MaildirAdapter("bench", MaildirSettings(path=path, first_run=f"last:{count}", max_per_poll=count))
    poll = adapter.poll(None, now=NOW)
    if poll.health.status != "ok":
        raise RuntimeError(f"the adapter failed: {poll.health}")
    return len(poll.observations)


def bare_parse(path: str) -> int:
    parsed = 0
    with os.scandir(os.path.join(path, "new")) as listing:
        for item in listing:
            with open(item.path, "rb") as file:
                email.message_from_bytes(file.read())
            parsed += 1
    return parsed


def per_kind(count: int, rounds: int = 7) -> list[dict]:
    """Per message kind, in memory: parse and observation vs a bare parse, alternated, ``rounds`` timed rounds.

    Times are CPU time of this thread (``time.thread_time``: waiting for a core is not counted); the ratio is
    the ratio of the medians, with the lowest and highest per-round ratio.
    """
    rows = []
    rng = random.Random(11)
    for share, make in KINDS:
        raws = [make(rng, n).encode("ascii") for n in range(count)]
        ours, base = [], []
        for round_ in range(rounds + 1):
            started = time.thread_time()
            for n, raw in enumerate(raws):
                mail_observations(read_mail(raw), source="bench", native_id=str(n), observed_at=NOW)
            elapsed = time.thread_time() - started
            started = time.thread_time()
            for raw in raws:
                email.message_from_bytes(raw)
            if round_:  # the first round warms caches and imports
                ours.append(elapsed)
                base.append(time.thread_time() - started)
        result = pair_result(ours, base)
        per_round = sorted(b / a for a, b in zip(ours, base))
        rows.append({"kind": make.__name__.strip("_"), "share": share, "bytes": sum(map(len, raws)) // count,
                     "ours_ms": result["subject"]["median"] / count * 1000,
                     "base_ms": result["baseline"]["median"] / count * 1000,
                     "ratio": result["baseline"]["median"] / result["subject"]["median"],
                     "ratio_min": per_round[0], "ratio_max": per_round[-1], "rounds": rounds})
    return rows


def newsletter_parts(count: int, rounds: int = 7) -> dict:
    """Where a newsletter's time goes (CPU time of this thread per message, median of ``rounds``)."""
    from email.parser import BytesParser

    from lxml import etree

    from fold_adapters.mail.policy import parse, parser_policy
    from fold_adapters.text import html as htmltext

    rng = random.Random(11)
    make = dict((make.__name__.strip("_"), make) for _, make in KINDS)["newsletter"]
    raws = [make(rng, n).encode("ascii") for n in range(count)]
    pages = [parse(raw).get_body(preferencelist=("html",)).get_content() for raw in raws]
    mails = [read_mail(raw) for raw in raws]
    htmltext.html_to_text(pages[0])
    parts = {
        "bare parse (the baseline)": lambda: [email.message_from_bytes(raw) for raw in raws],
        "the feed parser with the adapters' policy": lambda: [BytesParser(policy=parser_policy()).parsebytes(raw)
                                                              for raw in raws],
        "the adapters' parse (direct path)": lambda: [parse(raw) for raw in raws],
        "libxml2's parse of the HTML alone": lambda: [etree.fromstring(page, parser=htmltext._PARSER)
                                                      for page in pages],
        "HTML to text (libxml2 and the passes)": lambda: [htmltext.html_to_text(page) for page in pages],
        "the observation from the read mail": lambda: [mail_observations(mail, source="bench", native_id=str(n),
                                                                         observed_at=NOW)
                                                       for n, mail in enumerate(mails)],
        "all: read_mail and the observation": lambda: [mail_observations(read_mail(raw), source="bench",
                                                                         native_id=str(n), observed_at=NOW)
                                                       for n, raw in enumerate(raws)],
    }
    samples: dict = {name: [] for name in parts}
    for round_ in range(rounds + 1):
        for name, part in parts.items():
            started = time.thread_time()
            part()
            if round_:
                samples[name].append(time.thread_time() - started)
    return {name: sorted(values)[len(values) // 2] / count * 1000 for name, values in samples.items()}


def compare_kinds(before: str, rounds: int, count: int) -> dict:
    """Rounds of the per-kind table with the code at ``before`` and with this code, each in a new process."""
    from timing import code_at, run_json, spread

    repo = os.path.dirname(HERE)
    runs: dict = {"before": [], "after": []}
    for round_ in range(rounds):
        for label, code in (("before", code_at(before, repo)), ("after", None)):
            print(f"round {round_ + 1}/{rounds}: {label}…", file=sys.stderr, flush=True)
            runs[label].append(run_json([sys.executable, os.path.abspath(__file__), "--kinds-only",
                                         "--per-kind", str(count)], code, cwd=repo)["kinds"])
    table = {}
    for label, results in runs.items():
        for index, row in enumerate(results[0]):
            table.setdefault(row["kind"], {})[label] = spread([result[index]["ratio"] for result in results])
    return {"before_code": before, "rounds": rounds, "kinds": table}


def poll_pairs(messages: int, repeats: int) -> dict:
    """One poll of the whole Maildir alternated with the bare parse of the same files."""
    path, size = corpus(messages)
    ours, base, ours_cpu, base_cpu, observed = [], [], [], [], 0
    for round_ in range(repeats + 1):
        started, cpu = time.perf_counter(), time.process_time()
        observed = adapter_poll(path, messages)
        elapsed, cpu_elapsed = time.perf_counter() - started, time.process_time() - cpu
        started, cpu = time.perf_counter(), time.process_time()
        parsed = bare_parse(path)
        base_elapsed, base_cpu_elapsed = time.perf_counter() - started, time.process_time() - cpu
        if round_:  # the first pair warms the page cache and the imports
            ours.append(elapsed)
            base.append(base_elapsed)
            ours_cpu.append(cpu_elapsed)
            base_cpu.append(base_cpu_elapsed)
    result = pair_result(ours, base)
    result["cpu"] = pair_result(ours_cpu, base_cpu)
    result.update({"messages": messages, "observations": observed, "parsed": parsed, "bytes": size,
                   "obs_per_s": observed / result["subject"]["median"],
                   "msg_per_s": parsed / result["baseline"]["median"]})
    result["throughput_ratio"] = result["obs_per_s"] / result["msg_per_s"]
    result["cpu_ratio"] = (observed / result["cpu"]["subject"]["median"]) / (parsed / result["cpu"]["baseline"]["median"])
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--per-kind", type=int, default=200)
    parser.add_argument("--kinds-only", action="store_true", help="only the per-kind table (as JSON)")
    parser.add_argument("--before", help="also the per-kind table of the code at this commit, in alternating rounds")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--doc", help="replace the mail section of this Markdown file")
    args = parser.parse_args(argv)
    if args.kinds_only:
        print(json.dumps({"kinds": per_kind(args.per_kind)}))
        return 0
    load_start = os.getloadavg()
    result = poll_pairs(args.messages, args.repeats)
    result["kinds"] = per_kind(args.per_kind)
    result["newsletter_parts"] = newsletter_parts(args.per_kind)
    if args.before:
        result["compare"] = compare_kinds(args.before, args.rounds, args.per_kind)
    result["machine"] = {"nproc": os.cpu_count(), "python": platform.python_version(), "loadavg_start": load_start,
                         "loadavg_end": os.getloadavg()}
    print(json.dumps(result))
    if args.doc:
        write_section(args.doc, result)
    return 0


def kinds_table(result: dict) -> str:
    """Per kind: this run's figures, and the rounds before and after when measured (``--before``)."""
    compare = result.get("compare")
    head = "| kind | share | size | adapter | bare parse | ratio [lowest–highest round] |"
    rule = "|---|---|---|---|---|---|"
    if compare:
        head += f" before (`{compare['before_code']}`), {compare['rounds']} rounds | after, {compare['rounds']} rounds |"
        rule += "---|---|"
    rows = [head, rule]
    for k in result["kinds"]:
        row = (f"| {k['kind']} | {k['share'] * 100:.0f} % | {k['bytes'] / 1024:.1f} kB | {k['ours_ms']:.3f} ms | "
               f"{k['base_ms']:.3f} ms | {k['ratio']:.2f}× [{k['ratio_min']:.2f}–{k['ratio_max']:.2f}] |")
        if compare:
            both = compare["kinds"][k["kind"]]
            row += "".join(f" {both[label]['median']:.2f}× [{both[label]['min']:.2f}–{both[label]['max']:.2f}] |"
                           for label in ("before", "after"))
        rows.append(row)
    return "\n".join(rows)


def section(result: dict) -> str:
    ratio = result["throughput_ratio"]
    verdict = "meets" if ratio >= 0.5 else "**misses**"
    sub, base, cpu = result["subject"], result["baseline"], result["cpu"]
    cpu_verdict = "meets" if result["cpu_ratio"] >= 0.5 else "**misses**"
    load = " / ".join(f"{v:.2f}" for v in result["machine"]["loadavg_start"])
    load_end = " / ".join(f"{v:.2f}" for v in result["machine"]["loadavg_end"])
    kinds = {k["kind"]: k for k in result["kinds"]}
    targets = "\n".join(
        f"| {label} per message, adapter / bare parse (CPU time) | {kinds[kind]['ratio']:.2f}× "
        f"[{kinds[kind]['ratio_min']:.2f}–{kinds[kind]['ratio_max']:.2f}] | ≥ 0.5× | "
        f"{'meets' if kinds[kind]['ratio'] >= 0.5 else '**misses**'} |"
        for kind, label in (("newsletter", "HTML-only newsletter"), ("east_asian", "Chinese / Japanese mail")))
    parts = "\n".join(f"| {name} | {value:.3f} ms |" for name, value in result["newsletter_parts"].items())
    return f"""{BEGIN}
## 9. Mail adapters: maildir → observations

Generated by `python bench/bench_mail.py --before <commit> --doc docs/benchmarks.md` (without `--before`: no
before/after columns); `run_all.py` keeps this section.

| what | adapter | baseline (same run) | ratio | target | verdict |
|---|---|---|---|---|---|
| {result['messages']:,} messages ({result['bytes'] / 1e6:.0f} MB) from a Maildir, one poll, wall clock | {result['obs_per_s']:,.0f} obs/s ({sub['median']:.2f} s [{sub['q1']:.2f}–{sub['q3']:.2f}]) | {result['msg_per_s']:,.0f} msg/s ({base['median']:.2f} s [{base['q1']:.2f}–{base['q3']:.2f}]) `email.message_from_bytes` | {ratio:.2f}× | ≥ 0.5× | {verdict} |
| the same, CPU time of this process | {cpu['subject']['median']:.2f} s | {cpu['baseline']['median']:.2f} s | {result['cpu_ratio']:.2f}× | ≥ 0.5× | {cpu_verdict} |

| per kind | ratio [lowest–highest round] | target | verdict |
|---|---|---|---|
{targets}

Where the time goes, per message kind (in memory: parse and observation only; CPU time of the thread,
{result['kinds'][0]['rounds']} timed rounds after a warm-up, the adapter and the bare parse alternated):

{kinds_table(result)}

Where an HTML-only newsletter's time goes (CPU time per message, the median of 7 rounds):

| part | per message |
|---|---|
{parts}

Method. The corpus (`bench/mail_corpus.py`, seeded) imitates a working inbox: every message carries a
large provider's header block (Received chain, ARC and DKIM signatures, about 3 kB), 40 % are
person-to-person plain + HTML alternatives with quoted history, 20 % plain replies over long quotes,
12 % HTML-only newsletters (layout tables, inline CSS, a hidden preview text), 10 % notifications,
10 % carry a 30–150 kB PDF, 8 % are GB18030, Big5 or ISO-2022-JP. The adapter side is one poll of a
fresh `maildir` adapter (`first_run = last:N`, `max_per_poll = N`): listing, reading, parsing with the
modern policy, decoding, body choice, HTML to text, attachments, the seen cache and a validated
`Observation` per message. The baseline reads the same files the same way and only parses them with
`email.message_from_bytes` (compat32). They alternate, {sub['n']} timed pairs after a warm-up pair; the
ratio is observations per second over messages per second (ratio of the medians; median of the per-pair
ratios {1 / result['pair_ratios']['median']:.2f}×); the CPU-time row (`time.process_time`) is less
disturbed by other processes on a shared machine. The per-kind rows are measured in memory, CPU time of the
thread; with `--before`, each round runs the per-kind table with the code at that commit and then with this
code, each in a new process. Python {result['machine']['python']},
{result['machine']['nproc']} cores, load average {load} at the start and {load_end} at the end.

Reading. One-part messages (replies, newsletters, Chinese and Japanese mail) are built without the
standard library's feed parser: their header lines and body are cut directly, into the same message
object (`policy.parse`), at about a third of the parser's cost; multipart mail (a header block that
names a multipart type) goes to the parser as before. That lifts Chinese and Japanese mail over the
target (barely: a round may fall under it); what is left per message is fixed work the baseline does not do — decoding the subject and
names (RFC 2047, GB18030/Big5/ISO-2022-JP), the date, the fingerprint, the body's charset and a validated
`Observation`. An HTML-only newsletter stays under the target: libxml2's parse of its HTML alone costs
about half a bare parse of the whole message, and the converter's passes over the tree (hidden elements,
blocks, table cells, list items) and the text's white space twice that; with the direct parse, the
observation and the header and body work, even a converter whose Python passes cost nothing would stay
near the target, and a different converter would change the text of the observations, which must stay the
same (`bench/mail_identity.py` compares them, before and after, over the corpus, the fixtures, hostile mail
and their variants, and 30,000 random HTML documents: identical). Mail with an attachment is mostly the
parse of the attachment and comes close to 1×.
{END}
"""


def write_section(path: str, result: dict) -> None:
    replace_block(path, BEGIN, END, section(result))


if __name__ == "__main__":
    sys.exit(main())
