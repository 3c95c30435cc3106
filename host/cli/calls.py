"""``foldctl calls`` and ``foldctl inbox show``: what the editor was asked, and one observation whole (§11.2).

* ``foldctl calls [--limit N] [--window ID]`` — the editor's calls, newest
  first, one per attempt; ``foldctl calls show ID`` — one call with its
  request and response (the request body is kept for the most recent calls
  only); ``foldctl calls --summary [--since T]`` — per UTC day: windows
  asked, attempts, tokens in / cached / out, cost, the cached share.
* ``foldctl inbox show ID`` — one observation as the adapter gave it, its
  status and every disposition the editor gave it (and its expiry); an
  unknown id is ``{"found": false, "observation": null}``, exit 0.

Both read host.db only; ``--format text`` is for people (like ``llm logs``).
"""

from __future__ import annotations

import argparse
import json

from fold_core.cli.common import add_format, add_store, non_negative, positive
from fold_host.cli.shared import existing_store

__all__ = ["register", "run_calls", "run_inbox_show"]


def register(commands) -> None:
    calls = commands.add_parser("calls", help="the editor's calls: model, skill, tools, tokens, outcome",
                                description="The editor's calls, newest first, one per attempt; "
                                            "`calls show ID`: one call with its request and response.")
    add_store(calls)
    add_format(calls)
    calls.add_argument("action", nargs="?", choices=("show",), help="show: one call (give its ID)")
    calls.add_argument("id", nargs="?", metavar="ID", help="the call id (with show)")
    calls.add_argument("--limit", type=positive, default=20, help="at most N calls (default 20)")
    calls.add_argument("--window", metavar="ID", help="only the calls of this window (its batch_id)")
    calls.add_argument("--summary", action="store_true",
                       help="per UTC day: calls, attempts, tokens in / cached / out, cost, cached share")
    calls.add_argument("--since", metavar="WHEN",
                       help="with --summary: only calls at or after WHEN, read in [host] timezone: an ISO "
                            "instant, 24h (ago), yesterday, mon, 2026-12-01, 昨天, 周一 …")
    calls.add_argument("--now", help=argparse.SUPPRESS)  # the instant a phrase in --since is read at
    calls.set_defaults(run=run_calls)


def _show_id(args: argparse.Namespace, kind: str) -> str:
    from fold_core.errors import UsageError

    if args.action != "show" or args.id is None:
        raise UsageError(f"foldctl {kind} show ID: give the {'call' if kind == 'calls' else 'observation'} id "
                         f"after show (found {args.action or args.id!r})")
    return args.id


def run_calls(args: argparse.Namespace) -> tuple[dict, int]:
    from fold_core.errors import UsageError
    from fold_host.hostdb import open_host_db
    from fold_host.hostdb.calls import call_entry

    store_dir = existing_store(args.store)
    if args.summary:
        return _summary(args, store_dir), 0
    if args.since is not None:
        raise UsageError("foldctl calls: --since goes with --summary")
    if args.action is not None or args.id is not None:
        wanted = _show_id(args, "calls")
        try:
            seq = non_negative(wanted)
        except argparse.ArgumentTypeError:
            raise UsageError(f"foldctl calls show: a call id is a whole number (see `foldctl calls`), "
                             f"found {wanted!r}") from None
        with open_host_db(store_dir) as db:
            detail = db.call_detail(seq)
        args.render_text = _call_text
        return {"found": detail is not None, "call": detail}, 0
    with open_host_db(store_dir) as db:
        rows = db.calls(limit=args.limit, batch_id=args.window)
    args.render_text = _calls_text
    return {"calls": [call_entry(row) for row in rows]}, 0


def _summary(args: argparse.Namespace, store_dir: str) -> dict:
    from fold_core.errors import UsageError
    from fold_core.timefmt import instant, parse_instant
    from fold_host.hostdb import open_host_db

    if args.action is not None or args.id is not None or args.window is not None:
        raise UsageError("foldctl calls --summary takes no call id and no --window")
    since, read = None, None
    if args.since is not None:
        from fold_core.cli.common import config_given, resolve_now
        from fold_core.configfile import view_settings
        from fold_host.timephrase import TimePhraseError, read_time

        _, zone = view_settings(config_given())
        try:
            read = read_time(args.since, instant(resolve_now(args.now)), zone, past=True)
        except TimePhraseError as error:
            raise UsageError(f"foldctl calls --since: {error}") from None
        since = parse_instant(read)
    with open_host_db(store_dir) as db:
        days = db.call_days(since=since)
    args.render_text = _summary_text
    document: dict = {"days": days, "since": read}
    if read is not None and read != args.since:
        document["since_given"] = args.since  # what the phrase was, beside the instant it was read as
    return document


def run_inbox_show(args: argparse.Namespace, store_dir: str) -> tuple[dict, int]:
    from fold_host.hostdb import open_host_db

    wanted = _show_id(args, "inbox")
    with open_host_db(store_dir) as db:
        detail = db.observation_detail(wanted)
    args.render_text = _observation_text
    if detail is None:
        return {"found": False, "observation": None}, 0
    return {"found": True, **detail}, 0


# -- text views (in [host] language, times in [host] timezone) ---------------------------


def _headline(w, call: dict) -> str:
    # The baseline names itself as its model too: said once.
    model = f" {call['model']}" if call.get("model") and call["model"] != call["backend"] else ""
    fallback = w(" (fallback)") if call.get("fallback") else ""
    head = w("#{id}  {at}  {backend}{model}{fallback}  skill {skill}", id=call["id"], at=w.when(call["at"]),
             backend=call["backend"], model=model, fallback=fallback, skill=call["skill"] or "-")
    return head + "\n    " + w("window {window} · attempt {attempt}", window=call["window"], attempt=call["attempt"])


def _figures(w, call: dict) -> str:
    if call["backend"] == "baseline" and call["tokens_in"] is None and call["tokens_out"] is None:
        tokens = w("no model")
    else:
        tokens = w("{tokens_in} → {tokens_out} tokens",
                   tokens_in=call["tokens_in"] if call["tokens_in"] is not None else "?",
                   tokens_out=call["tokens_out"] if call["tokens_out"] is not None else "?")
    if call.get("tokens_cached"):
        tokens += w(" ({cached} cached)", cached=call["tokens_cached"])
    if call.get("cost") is not None:
        tokens += w(" · cost {cost}", cost=f"{call['cost']:.6f}")
    latency = f"{call['latency_ms']:.0f} ms" if call.get("latency_ms") is not None else "? ms"
    tools = w(" · tools: {tools}", tools=", ".join(call["tools"])) if call.get("tools") else ""
    return f"    {w(call['outcome'])} · {tokens} · {latency}{tools}"


def _calls_text(doc: dict) -> str:
    from fold_host.words import words

    w = words()
    if not doc["calls"]:
        return w("(no calls)") + "\n"
    return "\n".join(f"{_headline(w, call)}\n{_figures(w, call)}" for call in doc["calls"]) + "\n"


def _summary_text(doc: dict) -> str:
    from fold_host.words import words

    w = words()
    if not doc["days"]:
        return w("(no calls)") + "\n"
    lines = [w("day         calls  attempts  tokens in  cached  out  cost  cached share")]
    for day in doc["days"]:
        share = f"{day['cached_share']:.0%}" if day["cached_share"] is not None else "-"
        cost = f"{day['cost']:.4f}" if day["cost"] is not None else "-"
        lines.append(f"{day['day']}  {day['calls']}  {day['attempts']}  {day['tokens_in']}  {day['tokens_cached']}  "
                     f"{day['tokens_out']}  {cost}  {share}")
    return "\n".join(lines) + "\n"


def _call_text(doc: dict) -> str:
    from fold_host.words import words

    w = words()
    call = doc.get("call")
    if not doc.get("found") or call is None:
        return w("(no such call)") + "\n"
    lines = [_headline(w, call), _figures(w, call)]
    for entry in call.get("tool_calls") or ():
        outcome = (w(" → error {error}", error=entry["error"]) if entry.get("error") else
                   w(" → {bytes} bytes", bytes=entry.get("bytes", "?")))
        lines.append(f"    {w('tool')} {entry.get('name')} {json.dumps(entry.get('arguments'), ensure_ascii=False)}"
                     f"{outcome}")
    if call.get("error"):
        lines += ["", w("error:"), json.dumps(call["error"], ensure_ascii=False, indent=1)]
    lines += ["", w("request:"), json.dumps(call["request"], ensure_ascii=False, indent=1)
              if call["request"] is not None else w("(not kept: only the most recent calls keep their request)")]
    lines += ["", w("response:"), call["response"] if call["response"] is not None else w("(none)")]
    if call.get("stderr"):
        lines += ["", w("stderr:"), call["stderr"]]
    return "\n".join(lines) + "\n"


def _observation_text(doc: dict) -> str:
    from fold_host.words import words

    w = words()
    if not doc.get("found"):
        return w("(no such observation)") + "\n"
    o = doc["observation"]
    lines = [w("{id}  ({channel} from {source})", id=o["id"], channel=o["channel"], source=o["source"]),
             w("from: {sender}", sender=o.get("from") or "-"),
             w("at: {at} · observed {observed}", at=w.when(o.get("at")) or "-", observed=w.when(o["observed_at"])),
             w("title: {title}", title=o.get("title") or "-")]
    if o.get("url"):
        lines.append(w("url: {url}", url=o["url"]))
    if o.get("thread"):
        lines.append(w("thread: {thread}", thread=o["thread"]))
    lines += ["", o.get("text") or w("(no text)"), "", w("status: {status}", status=w(doc["status"]))]
    if doc.get("deferred"):
        lines[-1] += w(" (first deferred {at}, {times} time(s))", at=w.when(doc["deferred"]["at"]),
                       times=doc["deferred"]["times"])
    for entry in doc["dispositions"]:
        related = f" → {', '.join(entry['related'])}" if entry.get("related") else ""
        verdict = w("{disposition}: {why}", disposition=w(entry["disposition"]), why=entry["why"])
        lines.append(f"  {w.when(entry['at'])}  {verdict}{related}")
    return "\n".join(lines) + "\n"
