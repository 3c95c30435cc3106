"""``foldctl migrate --from A --to B [--name N]``: move a store and its host state (contract §7, §11.2).

Argparse only here; the work is ``fold_host.ops.moving``.
"""

from __future__ import annotations

__all__ = ["register"]


def register(commands) -> None:
    from fold_core.cli.common import add_format

    migrate = commands.add_parser(
        "migrate", help="move a store and its host state between a directory and a PostgreSQL database",
        description="Copy the store at --from (a directory or a postgresql:// URL) and its host state to --to, "
                    "which must be new; then check both copies (records byte for byte, verify, state, every host "
                    "table). Stop the hosts first.")
    migrate.add_argument("--from", dest="source", required=True, metavar="DIR|URL", help="the store to move")
    migrate.add_argument("--to", dest="target", required=True, metavar="DIR|URL", help="where to (a new store)")
    migrate.add_argument("--name", help="the store's name in the database (the URL side's store=NAME)")
    add_format(migrate)
    migrate.set_defaults(run=run_migrate, render_text=_text)


def run_migrate(args) -> tuple[dict, int]:
    import os

    from fold_core.cli.common import store_location
    from fold_host.ops.moving import move, with_name

    source = store_location(os.path.expanduser(args.source), "--from")
    target = store_location(os.path.expanduser(args.target), "--to")
    return move(*with_name(source, target, args.name)), 0


def _text(document: dict) -> str:
    lines = [f"moved {document['records']} record(s) from {document['from']} to {document['to']}: "
             f"revision {document['revision']}, verified"]
    host = document.get("host")
    if host is None:
        lines.append("no host state at the source")
    else:
        rows = ", ".join(f"{count} {table}" for table, count in host["tables"].items() if count)
        lines.append(f"host state: {rows or 'no rows'}; {host['windows']} open window(s); compared row by row")
    return "\n".join(lines) + "\n"
