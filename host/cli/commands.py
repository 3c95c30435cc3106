"""The host commands of ``foldctl`` (contract §11.2): tick, run, inbox, feedback, doctor, plugins.

This module is imported by every ``foldctl`` call, so it holds argparse only:
the configuration, the host, the SDKs and APScheduler are imported inside the
``run_*`` functions. Each returns ``(document, exit code)`` like the core
commands; a bad plugins.toml is a ``ConfigError`` (exit 2, naming file,
instance and field), a store that cannot be used is exit 3.
"""

from __future__ import annotations

import argparse
from datetime import datetime
from typing import TYPE_CHECKING

from fold_core.cli.common import add_format, add_store, config_given, explain, non_negative, resolve_store
from fold_core.cli.textview import width
from fold_core.timefmt import instants_shown
from fold_host.cli.shared import existing_store, text_view

if TYPE_CHECKING:  # the name only: the configuration loads when a command runs
    from fold_host.settings import HostConfig

__all__ = ["register"]


def register(commands) -> None:
    tick = commands.add_parser("tick", help="one host cycle",
                               description="One host cycle: poll due sources, signal, editor, commit, consumers.")
    _common(tick)
    tick.add_argument("--now", help="stands in for the clock in the whole cycle (an instant with an offset)")
    tick.set_defaults(run=run_tick, render_text=text_view(_tick_text))

    run = commands.add_parser("run", help="the daemon (until SIGTERM / SIGINT)",
                              description="Run the host daemon: sources on their schedules, cycles, reviews, "
                                          "reminders. One per store.")
    _common(run)
    run.add_argument("--log-format", dest="log_format", choices=("text", "json"), default="text",
                     help="one line per event on stderr: text (default) or json")
    run.add_argument("--serve", action="store_true",
                     help="also serve the Pinboard in this process ([pinboard] host and port, as `foldctl serve`)")
    run.set_defaults(run=run_daemon)

    inbox = commands.add_parser("inbox", help="what came in and what the editor did with it",
                                description="Observations, newest message first (--sort observed: newest arrival), with the editor's disposition and why; "
                                            "`inbox show ID`: one observation whole, with every disposition.")
    _common(inbox)
    inbox.add_argument("action", nargs="?", choices=("show",), help="show: one observation (give its ID)")
    inbox.add_argument("id", nargs="?", metavar="ID", help="the observation id (with show)")
    inbox.add_argument("--status", choices=("pending", "processed", "deferred", "expired"))
    inbox.add_argument("--source", help="only this source (instance name, or feedback / reminder)")
    inbox.add_argument("--search", metavar="TEXT", help="only observations whose title or text holds every word "
                                                        "of TEXT (best first, with a snippet)")
    inbox.add_argument("--limit", type=non_negative, default=50, help="at most N observations (default 50)")
    inbox.add_argument("--sort", choices=("date", "observed"), default="date",
                       help="date: by the message's own date (default); observed: by arrival")
    inbox.set_defaults(run=run_inbox, render_text=text_view(_inbox_text))

    feedback = commands.add_parser("feedback", help="give feedback on an item (the editor reads it next cycle)",
                                   description="Store a feedback observation; a snooze also schedules a reminder.")
    _common(feedback)
    feedback.add_argument("--item", required=True, help="the item id")
    feedback.add_argument("--meaning", required=True, choices=("ack", "decide", "act", "input", "snooze"))
    feedback.add_argument("--value", help="what was decided / done / given")
    feedback.add_argument("--until", metavar="WHEN",
                          help="snooze: when to be reminded, in [host] timezone: 2h, 30m, tomorrow 09:00, "
                               "mon 9:00, 2026-12-08, 明天 9:00, 周一 9:00, 下周一, or an ISO instant")
    feedback.add_argument("--now", help="the instant it was given (default: the current clock)")
    feedback.set_defaults(run=run_feedback, render_text=text_view(_feedback_text))

    decide = commands.add_parser("decide", help="answer an item's decision frame (bound to its digest)",
                                 description="Store the answer to a needs-you item's decision as feedback; with "
                                             "--digest, only if the frame is still the one seen.")
    _common(decide)
    decide.add_argument("--item", required=True, help="the item id")
    decide.add_argument("--option", required=True, help="the chosen option's id")
    decide.add_argument("--digest", help="the frame's digest as seen (a changed frame: stale_decision)")
    decide.add_argument("--note", help="a note with the answer")
    decide.add_argument("--now", help="the instant it was given (default: the current clock)")
    decide.set_defaults(run=run_decide, render_text=text_view(_decide_text))

    decisions = commands.add_parser("decisions", help="the decisions asked of the user and their answers",
                                    description="Items with a decision frame: open ones first, soonest "
                                                "decide_by first, each with its latest answer.")
    _common(decisions)
    decisions.add_argument("--status", choices=("open", "answered", "fell_back", "closed"))
    decisions.add_argument("--source", help="only items from this source (instance name)")
    decisions.add_argument("--now", help=argparse.SUPPRESS)
    decisions.set_defaults(run=run_decisions, render_text=text_view(_decisions_text))

    doctor = commands.add_parser("doctor", help="check configuration, store, sources, editor, consumers",
                                 description="Configuration and health checks; exit 1 when a check fails.")
    _common(doctor)
    doctor.add_argument("--probe", action="store_true",
                        help="also log in to each source that can try one (IMAP) and ask the editor's endpoint "
                             "for its model list (at most 15 s)")
    doctor.add_argument("--now", help=argparse.SUPPRESS)
    doctor.set_defaults(run=run_doctor, render_text=_doctor_text, exit_one="a check failed (see stdout)")

    plugins = commands.add_parser("plugins", help="installed plugin types",
                                  description="Installed adapter, consumer and agent types and where they come from.")
    _common(plugins)
    plugins.set_defaults(run=run_plugins, render_text=text_view(_plugins_text))


def _common(parser: argparse.ArgumentParser) -> None:
    add_store(parser)
    add_format(parser)


# -- commands --------------------------------------------------------------------


def run_tick(args: argparse.Namespace) -> tuple[dict, int]:
    from fold_host.plugins import load_config
    from fold_host.cycle.pipeline import Host, tick
    from fold_host.daemon.presence import presence
    from fold_host.daemon.retention import retain

    config = load_config(config_given())
    location = resolve_store(args.store, url_ok=True)
    now, now_text = host_clock(config, args.now)
    with presence(location, "tick", config.host.lease.total_seconds()) as holder:
        host = Host(config, location, holder=holder)
        try:
            explain(f"foldctl tick: editor: {host.describe_agent()}")
            report = tick(host, now, now_text)
            with host.open_db() as db:
                dropped = retain(db, host.store, config.host.keep_observations, now, now_text)
            if dropped:
                explain(f"foldctl tick: dropped the text of {dropped} processed observation(s) older than "
                        f"keep_observations")
        finally:
            host.close()
    for line in report.problems():
        explain(f"foldctl tick: {line}")
    return report.to_json(), 0


def run_daemon(args: argparse.Namespace) -> tuple[dict, int]:
    from fold_host.plugins import load_config
    from fold_host.daemon.service import run

    given = config_given()
    config = load_config(given)
    store_dir = resolve_store(args.store, url_ok=True)
    if not args.serve:
        return run(config, store_dir, log_format=args.log_format, load_config=lambda: load_config(given))
    from fold_host.pinboard.app import from_config
    from fold_host.web.server import ServerThread

    with ServerThread(*from_config(config, store_dir)) as pinboard:
        explain(f"foldctl run: the Pinboard at {pinboard.url}")
        document, code = run(config, store_dir, log_format=args.log_format, load_config=lambda: load_config(given))
    return {**document, "pinboard": pinboard.url}, code


def run_inbox(args: argparse.Namespace) -> tuple[dict, int]:
    from fold_host.hostdb import open_host_db

    if args.action == "show" or args.id is not None:
        from fold_host.cli.calls import run_inbox_show

        return run_inbox_show(args, existing_store(args.store))
    store_dir = existing_store(args.store)
    with open_host_db(store_dir) as db:
        if args.search is None:
            return {"observations": db.observations(status=args.status, source=args.source, limit=args.limit,
                                                    sort=args.sort)}, 0
        hits = db.search_observations(args.search, 1000 if args.status or args.source else args.limit)
        rows = {row["id"]: row for row in db.observations(status=args.status, source=args.source, limit=len(hits),
                                                          ids=[hit["id"] for hit in hits])}
    listed = [{**rows[hit["id"]], "snippet": hit["snippet"]} for hit in hits if hit["id"] in rows]
    return {"observations": listed[:args.limit]}, 0


def run_feedback(args: argparse.Namespace) -> tuple[dict, int]:
    from fold_core.cli.common import resolve_now
    from fold_core.configfile import view_settings
    from fold_host.cycle.feedback import save_feedback

    _, zone = view_settings(config_given())  # [host] timezone: the zone a phrase like "tomorrow 09:00" is read in
    return save_feedback(resolve_store(args.store, url_ok=True), args.item, args.meaning, args.value, args.until,
                         resolve_now(args.now), timezone_name=zone)


def run_decide(args: argparse.Namespace) -> tuple[dict, int]:
    from fold_core.cli.common import resolve_now
    from fold_host.cycle.decide import save_decision

    return save_decision(resolve_store(args.store, url_ok=True), args.item, args.option, args.digest, args.note,
                         resolve_now(args.now))


def run_decisions(args: argparse.Namespace) -> tuple[dict, int]:
    from fold_core.cli.common import resolve_now
    from fold_host.cycle.decide import list_decisions

    return list_decisions(existing_store(args.store), resolve_now(args.now), args.status, args.source)


def run_doctor(args: argparse.Namespace) -> tuple[dict, int]:
    from fold_host.ops.doctor import diagnose

    document = diagnose(config_given(), args.store, now=args.now, probe=args.probe)
    return document, 0 if document["ok"] else 1


def run_plugins(args: argparse.Namespace) -> tuple[dict, int]:
    from fold_host.plugins import load_config

    config = load_config(config_given())
    return {"types": [entry.to_json() for entry in config.registry.all()]}, 0


# -- helpers -----------------------------------------------------------------------


def host_clock(config: HostConfig, given: str | None) -> tuple[datetime, str]:
    """``(aware datetime, ISO text)``: ``--now`` as given, else the clock in ``[host] timezone``."""
    from zoneinfo import ZoneInfo

    from fold_core.cli.common import resolve_now
    from fold_core.timefmt import instant

    if given is not None:
        text = resolve_now(given)
        return instant(text), text
    now = datetime.now(ZoneInfo(config.host.timezone)).replace(microsecond=0)
    return now, now.isoformat()


# -- text views ----------------------------------------------------------------------


def _tick_text(doc: dict) -> str:
    from fold_host.words import words

    w = words()
    lines = [w("polled {source}: {status}, {count} new", source=p["source"], status=w(p["status"]),
               count=p["observations"]) for p in doc["polled"]]
    signal = doc["signal"]
    if signal is not None:
        lines.append(w("signal {type}: {reason}", type=signal["type"], reason=signal["reason"]))
    receipt = doc["receipt"] or {}
    seq = w(" (event {event_seq})", event_seq=receipt["event_seq"]) if receipt.get("event_seq") else ""
    lines.append(w("outcome: {outcome} after {attempts} attempt(s){event}", outcome=w(doc["outcome"]),
                   attempts=doc["attempts"], event=seq))
    return "\n".join(lines) + "\n"


def _inbox_text(doc: dict) -> str:
    from fold_host.words import words

    w = words()
    lines = []
    for o in doc["observations"]:
        verdict = w(o["status"]) if o["disposition"] is None else \
            w("{disposition}: {why}", disposition=w(o["disposition"]), why=o["why"])
        lines.append(f"{w.when(o['at']) or '-'}  {o['id']}  {o['title'] or ''}\n    {verdict}")
    return "\n".join(lines) + "\n" if lines else w("(no observations)") + "\n"


def _feedback_text(doc: dict) -> str:
    from fold_host.words import words

    w = words()
    text = w("saved {id}", id=doc["observation"]["id"])
    if doc.get("reminder"):
        text += w("; reminder at {at}", at=w.when(doc["reminder"]["due_at"]))
    read = doc.get("until")
    if read and read["given"] != read["instant"]:  # show what a phrase was read as
        text += w(" (read {given!r} as {instant}, {zone})", given=read["given"], instant=read["instant"],
                  zone=read["timezone"])
    return text + "\n"


def _decide_text(doc: dict) -> str:
    from fold_host.words import words

    w = words()
    return w("answered {item}: {option} (frame {digest})", item=doc["item"], option=doc["option"],
             digest=doc["digest"]) + "\n"


def _decisions_text(doc: dict) -> str:
    from fold_host.words import words

    w = words()
    blocks = []
    for d in doc["decisions"]:
        head = f"[{w(d['status'])}] {d['item']}  {d['question']}"
        if d["decide_by"]:
            head += "  " + w("decide by {at}", at=w.when(d["decide_by"]))
        lines = [head]
        for option in d["options"]:
            mark = " *" if option["id"] == d["recommended"] else "  "
            consequence = f" — {option['consequence']}" if option.get("consequence") else ""
            lines.append(f"  {mark} {option['id']}: {option['label']}{consequence}")
        if d["fallback"]:
            lines.append("    " + w("fallback: {summary}", summary=d["fallback"]["summary"]))
        if d["answer"] and d["status"] == "fell_back":
            lines.append("    " + w("fell back to {option} at {at}", option=d["answer"]["option"] or "-",
                                      at=w.when(d["answer"]["at"]) or "-"))
        elif d["answer"]:
            lines.append("    " + w("answer: {option} at {at}", option=d["answer"]["option"],
                                      at=w.when(d["answer"]["at"]) or "-"))
        if d.get("asked_by"):
            lines.append("    " + w("asked by {source}: {question_id}", **d["asked_by"]))
        blocks.append("\n".join(lines))
    return "\n".join(blocks) + "\n" if blocks else w("(no decisions)") + "\n"


def _doctor_text(doc: dict) -> str:
    """Every check, failing ones first, then warnings, then the rest (each group in doctor's order)."""
    if "checks" not in doc:  # an error document (configuration, store)
        from fold_core.cli.textview import render_answer

        return render_answer("", doc)
    from fold_host.words import say, words

    w = words()
    order = {"fail": 0, "warn": 1}
    checks = sorted(doc["checks"], key=lambda check: order.get(check["status"], 2))
    status_width = max(width(w(status)) for status in ("ok", "warn", "fail"))
    lines = [f"{' ' * (status_width - width(w(c['status'])))}{w(c['status'])}  "
             + w("{name}: {detail}", name=_check_name(w, c["name"]), detail=_local_times(w, say(w, c["detail"])))
             for c in checks]
    failed = sum(1 for c in checks if c["status"] == "fail")
    warned = sum(1 for c in checks if c["status"] == "warn")
    if failed:
        verdict = w("{failed} check(s) failed", failed=failed) + (w(", {warned} warning(s)", warned=warned)
                                                                   if warned else "")
    else:
        verdict = w("ok ({warned} warning(s))", warned=warned) if warned else w("ok")
    return "\n".join(lines) + f"\n{verdict}\n"


def _check_name(w, name: str) -> str:
    for prefix in ("probe source", "source", "consumer"):
        if name.startswith(prefix + " "):
            return w(prefix + " {name}", name=name[len(prefix) + 1:])
    return w(name)


def _local_times(w, text: str) -> str:
    """The instants doctor wrote into a detail, shown in ``[host] timezone``."""
    return text if w.zone is None else instants_shown(text, w.when)


def _plugins_text(doc: dict) -> str:
    return "\n".join(f"{t['kind']:<8} {t['type']:<16} {t['plugin']} ({t['origin']})" for t in doc["types"]) + "\n"
