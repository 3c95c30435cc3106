"""``foldctl mcp`` (contract §11.2): Fold's tools and resources for AI agents over MCP.

Over stdio by default — the client (Claude Code, Codex, …) starts ``foldctl
mcp`` and speaks on its stdin and stdout; the command ends when the client
closes stdin and prints nothing of its own on stdout. ``--http`` serves
Streamable HTTP at ``http://HOST:PORT/mcp`` instead, until SIGINT / SIGTERM
(then ``{"ok": true, "url", "store", "stopped_by"}``), loopback only unless
``[mcp] token_env`` or ``token_file`` gives a bearer token. ``--read-only``
offers only the reading tools. The SDK is imported only when it runs.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from fold_core.cli.common import add_store, config_given, explain, non_negative, resolve_store
from fold_core.errors import UsageError

if TYPE_CHECKING:  # the names only: the configuration and the server load when the command runs
    from fold_host.mcp.operations import FoldDesk
    from fold_host.settings import HostConfig

__all__ = ["DEFAULT_PORT", "register"]

DEFAULT_PORT = 8766


def register(commands) -> None:
    mcp = commands.add_parser(
        "mcp",
        help="serve Fold to AI agents over MCP (stdio, or --http)",
        description="An MCP server on the store and host database: read the state, items, history and "
                    "observations; annotate, give feedback, report an agent's work.",
    )
    add_store(mcp)
    mcp.add_argument("--read-only", dest="read_only", action="store_true",
                     help="offer only the reading tools (fold_state, fold_item, fold_history, fold_observation)")
    mcp.add_argument("--http", action="store_true", help="serve Streamable HTTP at /mcp instead of stdio")
    mcp.add_argument("--host", help="with --http: the address (default 127.0.0.1; another needs [mcp] token_env "
                                    "or token_file)")
    mcp.add_argument("--port", type=non_negative,
                     help=f"with --http: the port (default {DEFAULT_PORT}; 0 = any free)")
    mcp.add_argument("--now", help="stands in for the clock in every call (an instant with an offset)")
    mcp.add_argument("--format", choices=("json", "text"), default=None,
                     help="with --http: the final document's format (stdio prints nothing of its own)")
    mcp.set_defaults(run=run_mcp)


def run_mcp(args: argparse.Namespace) -> tuple[dict | None, int]:
    from fold_core.cli.common import resolve_now
    from fold_host.mcp.operations import FoldDesk
    from fold_host.mcp.quota import HourlyQuota
    from fold_host.plugins import load_config

    if not args.http and (args.host is not None or args.port is not None):
        raise UsageError("--host and --port belong to --http (over stdio the client starts the server)")
    config = load_config(config_given())
    store = resolve_store(args.store, url_ok=True)
    now = resolve_now(args.now) if args.now is not None else None
    desk = FoldDesk(store, source=config.mcp.source, timezone=config.host.timezone, now=now,
                    read_only=args.read_only, quota=HourlyQuota(config.mcp.max_reports_per_hour))
    try:
        return _serve(args, config, shown_location(store), desk)
    finally:
        desk.close()


def shown_location(store: str) -> str:
    """The store as messages show it: a password in a store URL masked."""
    from fold_core.store.location import is_url, parse_url

    return parse_url(store).display if is_url(store) else store


def _serve(args: argparse.Namespace, config: HostConfig, store: str, desk: FoldDesk) -> tuple[dict | None, int]:
    mode = " (read-only)" if args.read_only else ""
    if not args.http:
        from fold_host.mcp.server import run_stdio

        explain(f"foldctl mcp: the store {store} over stdio{mode}")
        run_stdio(desk)
        return None, 0
    from fold_host.mcp import http
    from fold_host.mcp.server import build_server

    bind = http.resolve_bind(args.host or "127.0.0.1", DEFAULT_PORT if args.port is None else args.port,
                             http.read_token(config.mcp))
    guard = " (token required)" if bind.token else ""
    url, stopped_by = http.serve(build_server(desk), bind, lambda url: explain(
        f"foldctl mcp: the store {store} at {url}{mode}{guard}; Ctrl-C stops it"))
    return {"ok": True, "url": url, "store": store, "stopped_by": stopped_by}, 0
