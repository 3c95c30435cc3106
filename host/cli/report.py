"""``foldctl report`` and ``foldctl stats``: a period's report, and the attention figures (contract §11.2).

* ``foldctl report [--period 2026-W49 | --since T --until T] [--format md|html|json]`` — the report of any
  period on demand (default: the last closed ISO week), the same document the ``report`` consumer
  writes (schema ``fold.report/1``); Markdown by default.
* ``foldctl stats [--since T]`` — the attention figures from ``--since`` (default: 7 days ago) to now.

Time zone and language come from ``[host]``; both only read the store and host.db.
"""

from __future__ import annotations

import argparse
from datetime import timedelta

from fold_core.cli.common import add_format, add_store, resolve_now, resolve_store

__all__ = ["register", "run_report", "run_stats"]


def register(commands) -> None:
    report = commands.add_parser("report", help="a period's report: decisions, items, sources, attention",
                                 description="The report of a period (schema fold.report/1), as the report "
                                             "consumer writes it. Markdown by default.")
    add_store(report)
    report.add_argument("--period", help="an ISO week (2026-W49) or a day (2026-12-03); default: the last closed week")
    report.add_argument("--since", metavar="T", help="with --until: an ad-hoc span (instants with offsets)")
    report.add_argument("--until", metavar="T")
    report.add_argument("--format", choices=("md", "html", "json"), default="md")
    report.add_argument("--now", help=argparse.SUPPRESS)
    report.set_defaults(run=run_report)
    stats = commands.add_parser("stats", help="the attention figures: notifications, false interrupts, …",
                                description="Notifications by kind and mode, false interrupts, missed "
                                            "escalations, decisions and the median time to answer.")
    add_store(stats)
    add_format(stats)
    stats.add_argument("--since", metavar="T", help="from this instant (default: 7 days before now)")
    stats.add_argument("--now", help=argparse.SUPPRESS)
    stats.set_defaults(run=run_stats, render_text=_stats_text)


def _inputs(args: argparse.Namespace):
    from fold_host.hostdb import open_host_db
    from fold_host.plugins import load_config
    from fold_host.report.build import gather

    config = load_config(getattr(args, "config", None))
    location = resolve_store(args.store, url_ok=True)
    with open_host_db(location) as db:
        return config, gather(location, db)


def run_report(args: argparse.Namespace) -> tuple[dict, int]:
    from fold_core.errors import UsageError
    from fold_host.report.build import build_report
    from fold_host.report.period import closed_period, parse_period, span
    from fold_host.report.render import render

    config, inputs = _inputs(args)
    zone = config.host.timezone
    if args.period is not None and (args.since or args.until):
        raise UsageError("foldctl report: give --period or --since/--until, not both")
    if bool(args.since) != bool(args.until):
        raise UsageError("foldctl report: --since and --until go together")
    if args.period is not None:
        period = parse_period(args.period, zone)
    elif args.since:
        period = span(args.since, args.until)
    else:  # a Monday 00:00 always lies within the last 8 days
        period = closed_period("weekly", "00:00", resolve_now(args.now), zone) or parse_period("1970-W01", zone)
    report = build_report(inputs, period, timezone=zone, language=config.host.reader_language)
    if args.format != "json":
        args.render_text = lambda document: render(document, args.format).rstrip("\n")
    else:
        args.format = "json"
    return report, 0


def run_stats(args: argparse.Namespace) -> tuple[dict, int]:
    from fold_core.timefmt import instant
    from fold_host.report.build import attention

    _, inputs = _inputs(args)
    now = resolve_now(args.now)
    until = instant(now) + timedelta(seconds=1)
    since = instant(args.since) if args.since else instant(now) - timedelta(days=7)
    return {"since": since.isoformat(), "until": now, "attention": attention(inputs, since, until)}, 0


def _stats_text(document: dict) -> str:
    """The figures in ``[host] language``, the period in ``[host] timezone``."""
    from fold_host.words import words

    w = words()
    figures = document["attention"]
    sent = figures["notifications"]
    decisions = figures["decisions"]

    def counted(by: dict) -> str:
        return ", ".join(f"{name} {count}" for name, count in by.items()) or "-"

    missed = w("missed escalations: {count}", count=figures["missed_escalations"])
    if figures.get("missed_items"):
        missed += " (" + ", ".join(figures["missed_items"]) + ")"
    return "\n".join([
        w("from {since} to {until}", since=w.when(document["since"]), until=w.when(document["until"])),
        w("notifications sent: {total} (by kind: {kinds}; by mode: {modes})", total=sent["total"],
          kinds=counted(sent["by_kind"]), modes=counted(sent["by_mode"])),
        w("false interrupts: {count}", count=figures["false_interrupts"]),
        missed,
        w("decisions: {early} answered before the deadline, {late} late, {fell_back} fallen back, {open} open",
          early=decisions["answered_before_deadline"], late=decisions["answered_late"],
          fell_back=decisions["fell_back"], open=decisions["open"]),
        w("median time to answer: {hours} h", hours=decisions["median_hours_to_answer"]
          if decisions["median_hours_to_answer"] is not None else "-")]) + "\n"
