"""``foldctl serve`` (contract §11.2, §12): the Pinboard web page.

Listens on ``--host`` / ``--port`` (else ``[pinboard] host`` / ``port`` of the
plugins.toml in use, else 127.0.0.1:8765). A non-loopback address needs a
token (``[pinboard] token_env``) or the command refuses to start (exit 2). The
store must exist (exit 3 otherwise). Runs until SIGINT / SIGTERM, then prints
``{"ok": true, "url", "store", "stopped_by"}`` and exits 0.
Starlette, uvicorn and Jinja2 load only when it runs. ``foldctl run --serve``
starts the same Pinboard beside the daemon.
"""

from __future__ import annotations

import argparse

from fold_core.cli.common import add_format, add_store, config_given, explain, non_negative, resolve_store

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
    from fold_core.store.locate import describe
    from fold_host.pinboard.app import from_config
    from fold_host.plugins import load_config
    from fold_host.web.server import listen, serve_socket

    location = resolve_store(args.store, url_ok=True)
    store = describe(location)  # a password written in a URL is masked
    app, bind = from_config(load_config(config_given()), location, host=args.host, port=args.port)
    sock = listen(bind)
    url = bind.url(sock.getsockname()[1])
    stopped_by = serve_socket(app, sock, lambda: explain(f"foldctl serve: the Pinboard of {store} at {url}"
                                                         f"{' (token required)' if bind.token else ''};"
                                                         " Ctrl-C stops it"))
    return {"ok": True, "url": url, "store": store, "stopped_by": stopped_by}, 0
