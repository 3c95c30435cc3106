"""``foldctl calls`` and ``foldctl inbox show``: what the editor was asked, and one observation whole (§11.2).

* ``foldctl calls [--limit N] [--window ID]`` — the editor's calls, newest
  first, one per attempt; ``foldctl calls show ID`` — one call with its
  request and response (the request body is kept for the most recent calls
  only).
* ``foldctl inbox show ID`` — one observation as the adapter gave it, its
  status and every disposition the editor gave it (and its expiry); an
  unknown id is ``{"found": false, "observation": null}``, exit 0.

Both read host.db only; ``--format text`` is for people (like ``llm logs``).
"""

from __future__ import annotations

import argparse
import json

from fold_core.cli.common import add_format, add_store, non_negative, positive

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
    calls.set_defaults(run=run_calls)


def _show_id(args: argparse.Namespace, kind: str) -> str:
    from fold_core.errors import UsageError

    if args.action != "show" or args.id is None:
        raise UsageError(f"foldctl {kind} show ID: give the {'call' if kind == 'calls' else 'observation'} id "
                         f"after show (found {args.action or args.id!r})")
    return args.id


def run_calls(args: argparse.Namespace) -> tuple[dict, int]:
    from fold_core.errors import UsageError
    from fold_host.cli.commands import _existing_store
    from fold_host.hostdb import open_host_db
    from fold_host.hostdb.calls import call_entry

    store_dir = _existing_store(args.store)
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


def run_inbox_show(args: argparse.Namespace, store_dir: str) -> tuple[dict, int]:
    from fold_host.hostdb import open_host_db

    wanted = _show_id(args, "inbox")
    with open_host_db(store_dir) as db:
        detail = db.observation_detail(wanted)
    args.render_text = _observation_text
    if detail is None:
        return {"found": False, "observation": None}, 0
    return {"found": True, **detail}, 0


# -- text views ----------------------------------------------------------------------


def _headline(call: dict) -> str:
    model = f" {call['model']}" if call.get("model") else ""
    fallback = " (fallback)" if call.get("fallback") else ""
    return (f"#{call['id']}  {call['at']}  {call['backend']}{model}{fallback}  skill {call['skill'] or '-'}\n"
            f"    window {call['window']} · attempt {call['attempt']}")


def _figures(call: dict) -> str:
    tokens = f"{call['tokens_in'] if call['tokens_in'] is not None else '?'} → " \
             f"{call['tokens_out'] if call['tokens_out'] is not None else '?'} tokens"
    latency = f"{call['latency_ms']:.0f} ms" if call.get("latency_ms") is not None else "? ms"
    tools = f" · tools: {', '.join(call['tools'])}" if call.get("tools") else ""
    return f"    {call['outcome']} · {tokens} · {latency}{tools}"


def _calls_text(doc: dict) -> str:
    if not doc["calls"]:
        return "(no calls)\n"
    return "\n".join(f"{_headline(call)}\n{_figures(call)}" for call in doc["calls"]) + "\n"


def _call_text(doc: dict) -> str:
    call = doc.get("call")
    if not doc.get("found") or call is None:
        return "(no such call)\n"
    lines = [_headline(call), _figures(call)]
    for entry in call.get("tool_calls") or ():
        error = f" → error {entry['error']}" if entry.get("error") else f" → {entry.get('bytes', '?')} bytes"
        lines.append(f"    tool {entry.get('name')} {json.dumps(entry.get('arguments'), ensure_ascii=False)}{error}")
    if call.get("error"):
        lines += ["", "error:", json.dumps(call["error"], ensure_ascii=False, indent=1)]
    lines += ["", "request:", json.dumps(call["request"], ensure_ascii=False, indent=1) if call["request"] is not None
              else "(not kept: only the most recent calls keep their request)"]
    lines += ["", "response:", call["response"] if call["response"] is not None else "(none)"]
    if call.get("stderr"):
        lines += ["", "stderr:", call["stderr"]]
    return "\n".join(lines) + "\n"


def _observation_text(doc: dict) -> str:
    if not doc.get("found"):
        return "(no such observation)\n"
    o = doc["observation"]
    lines = [f"{o['id']}  ({o['channel']} from {o['source']})", f"from: {o.get('from') or '-'}",
             f"at: {o.get('at') or '-'} · observed {o['observed_at']}", f"title: {o.get('title') or '-'}"]
    for key in ("url", "thread"):
        if o.get(key):
            lines.append(f"{key}: {o[key]}")
    lines += ["", o.get("text") or "(no text)", "", f"status: {doc['status']}"]
    if doc.get("deferred"):
        lines[-1] += f" (first deferred {doc['deferred']['at']}, {doc['deferred']['times']} time(s))"
    for entry in doc["dispositions"]:
        related = f" → {', '.join(entry['related'])}" if entry.get("related") else ""
        lines.append(f"  {entry['at']}  {entry['disposition']}: {entry['why']}{related}")
    return "\n".join(lines) + "\n"
