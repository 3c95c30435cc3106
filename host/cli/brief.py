"""``foldctl brief [--since SEQ] [--format md|text|json] [--now T]`` (contract §11.2, §12).

The briefing of the current state (Markdown by default, whatever stdout is).
The "since the last briefing" window:

* ``--since SEQ``: the records after event SEQ (a pure read: nothing is kept);
* without it: the records after the event the previous ``foldctl brief``
  showed (kept in host.db as ``brief.last_event_seq``); the first run says it
  is the first briefing.

Time zone and language come from ``[host]`` in plugins.toml; the per-source
coverage from host.db (a source with a failed last poll is said to have
failed; a configured source never polled is "not polled yet"). Only argparse
is imported at registration; the store, config and host database are opened
when the command runs.
"""

from __future__ import annotations

import argparse

from fold_core.cli.common import add_store, non_negative, resolve_now, resolve_store

__all__ = ["MARK", "register", "run_brief"]

MARK = "brief.last_event_seq"


def register(commands) -> None:
    brief = commands.add_parser(
        "brief",
        help="the briefing: what matters now and what changed since the last briefing",
        description="The briefing (§12): active items in rank order per layer, what changed since the last"
                    " briefing, per-source coverage. Markdown by default.",
    )
    add_store(brief)
    brief.add_argument("--since", type=non_negative, metavar="SEQ",
                       help="list the changes after event SEQ (default: since the previous `foldctl brief`)")
    brief.add_argument("--now", help="the instant for durations, overdue and stale (default: the current clock)")
    brief.add_argument("--format", choices=("md", "text", "json"), default="md",
                       help="md (default), text or json")
    brief.set_defaults(run=run_brief)


def run_brief(args: argparse.Namespace) -> tuple[dict, int]:
    from fold_host.plugins import load_config
    from fold_core.store.locate import open_store

    from fold_consumers.briefing import build_briefing

    args.render_text = lambda brief: render_brief(args, brief)  # md | text (json is printed as JSON)
    now = resolve_now(args.now)
    config = load_config(getattr(args, "config", None))
    store_dir = resolve_store(args.store, url_ok=True)
    store = open_store(store_dir)
    document = store.state_document(now=now).document
    from fold_host.cycle.fallback import editor_status
    from fold_host.hostdb import open_host_db

    with open_host_db(store_dir) as db:
        since = args.since if args.since is not None else db.meta(MARK)
        records = store.history(since=since).document["records"] if since is not None else []
        coverage = db.source_health(config.adapters)
        brief = build_briefing(document, records=records, since=since, coverage=coverage,
                               timezone=config.host.timezone, language=config.host.reader_language,
                               editor=editor_status(db, config))
        if args.since is None:
            db.set_meta(MARK, document["event_seq"])
    return brief, 0


def render_brief(args: argparse.Namespace, brief: dict) -> str:
    from fold_consumers.briefing_render import render

    return render(brief, args.format)

