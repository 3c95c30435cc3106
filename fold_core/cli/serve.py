"""``foldctl serve`` (contract §11.2, §12): the Pinboard web page.

Listens on ``--host`` / ``--port`` (else ``[pinboard] host`` / ``port`` of the
plugins.toml in use, else 127.0.0.1:8765). A non-loopback address needs a
token (``[pinboard] token_env``) or the command refuses to start (exit 2). The
store must exist (exit 3 otherwise). Runs until SIGINT / SIGTERM; then prints
``{"ok": true, "url", "store"}``. Starlette, uvicorn and Jinja2 load only here.
"""

from __future__ import annotations

import argparse

from fold_core.cli.common import add_format, add_store, explain, non_negative, resolve_store

__all__ = ["register"]


def register(commands) -> None:
    serve = commands.add_parser(
        "serve",
        help="the Pinboard: the state as a live web page (annotate, feedback)",
        description="Serve the Pinboard: the budget rectangles of every layer, item pages with sources,"
        " annotations and history, and forms for annotations and feedback.",
    )
    add_store(serve)
    serve.add_argument("--host", help="the address to listen on (else [pinboard] host, else 127.0.0.1);"
                       " a non-loopback address needs [pinboard] token_env")
    serve.add_argument("--port", type=non_negative, help="the port (else [pinboard] port, else 8765; 0 = any free)")
    add_format(serve)
    serve.set_defaults(run=run_serve)


def run_serve(args: argparse.Namespace) -> tuple[dict, int]:
    from fold_consumers.pinboard.app import create_app
    from fold_consumers.pinboard.server import listen, resolve_bind, serve_socket
    from fold_core.config import load_config

    config = load_config()
    section = config.pinboard
    bind = resolve_bind(args.host or section.host, section.port if args.port is None else args.port,
                        section.token_env)
    store = resolve_store(args.store)
    app = create_app(store, token=bind.token, loopback=bind.loopback, timezone=config.host.timezone)
    sock = listen(bind)
    url = bind.url(sock.getsockname()[1])
    explain(f"foldctl serve: the Pinboard of {store} at {url}"
            f"{' (token required)' if bind.token else ''}; Ctrl-C stops it")
    serve_socket(app, sock)
    return {"ok": True, "url": url, "store": store}, 0
