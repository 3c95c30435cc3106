"""``foldctl state | history | verify`` (contract §7, §8).

Reads take the store's shared lock and recover (only the log tail after the
snapshot) before answering, so they never show half a record or a stale
cache. A store that does not exist, or cannot be read, is exit 3
(``store_unavailable``): a read never answers "empty" or "not found" for a
store it could not read. ``verify`` replays the whole log (exit 0, or 4 with
the first bad line).
"""

from __future__ import annotations

import argparse

from fold_core.cli.common import Commands, add_format, add_store, non_negative, resolve_now, resolve_store
from fold_core.errors import UsageError

__all__ = ["register"]


def register(commands: Commands) -> None:
    state = commands.add_parser(
        "state",
        help="the current state with the time projection",
        description="The current state (§8) with durations computed at --now.",
    )
    add_store(state)
    state.add_argument("--now", help="the instant to project durations to (default: the current clock)")
    state.add_argument("--item", help="show this active item (with its children) instead of the root layer")
    state.add_argument("--depth", type=non_negative, help="expand item levels 1…N; deeper layers as counts")
    state.add_argument("--not-active", dest="not_active", type=_not_active, default=None, metavar="N|all",
                       help="how many recent not-active entries to list (default 200)")
    add_format(state)
    state.set_defaults(run=run_state)

    history = commands.add_parser(
        "history",
        help="accepted records, or whether a batch was accepted",
        description="Accepted records, oldest first; --batch ID answers whether that batch was accepted.",
    )
    add_store(history)
    history.add_argument("--batch", help="was this batch_id accepted? {found, record}")
    history.add_argument("--item", help="records with a post-image of this item or an annotation on it")
    history.add_argument("--since", type=non_negative, help="only records with event_seq > SEQ")
    history.add_argument("--limit", type=non_negative, help="keep the first N records")
    add_format(history)
    history.set_defaults(run=run_history)

    verify = commands.add_parser("verify", help="replay the whole log and check the snapshot",
                                 description="Full integrity check: exit 0, or 4 with the first bad line.")
    add_store(verify)
    add_format(verify)
    verify.set_defaults(run=run_verify)


def _not_active(text: str) -> int | str:
    if text == "all":
        return "all"
    return non_negative(text)


def run_state(args: argparse.Namespace) -> tuple[dict, int]:
    from fold_core.store.locate import open_store

    now = resolve_now(args.now)
    path = resolve_store(args.store, url_ok=True)
    options = {}
    if args.not_active is not None:
        options["not_active"] = None if args.not_active == "all" else args.not_active
    answer = open_store(path).state_document(now=now, item=args.item, depth=args.depth, **options)
    return answer.document, answer.exit_code


def run_history(args: argparse.Namespace) -> tuple[dict, int]:
    from fold_core.store.locate import open_store

    if args.batch is not None and (args.item is not None or args.since is not None or args.limit is not None):
        raise UsageError("--batch answers one question; it cannot be combined with --item, --since or --limit")
    path = resolve_store(args.store, url_ok=True)
    answer = open_store(path).history(batch=args.batch, item=args.item, since=args.since, limit=args.limit)
    return answer.document, answer.exit_code


def run_verify(args: argparse.Namespace) -> tuple[dict, int]:
    from fold_core.store.locate import verify

    return verify(resolve_store(args.store, url_ok=True)), 0
