"""``foldctl backup`` and ``foldctl restore`` (contract §11.2): an online copy of a store, and back.

``backup --out DIR`` works while the daemon runs (see ``fold_host.ops.backup``);
``restore BACKUP --store NEWDIR`` refuses a non-empty target (exit 2),
checks every file's digest (exit 4 on a damaged backup) and verifies the
restored store.
"""

from __future__ import annotations

import argparse

from fold_core.cli.common import add_format, add_store, resolve_now, resolve_store

__all__ = ["register"]


def register(commands) -> None:
    backup = commands.add_parser("backup", help="copy the store and host.db while the daemon runs",
                                 description="An online backup: the store up to one event_seq, host.db through "
                                             "SQLite's backup API, and manifest.json with every file's sha256.")
    add_store(backup)
    backup.add_argument("--out", required=True, help="a new (or empty) directory for the backup")
    add_format(backup)
    backup.set_defaults(run=run_backup, render_text=_backup_text)

    restore = commands.add_parser("restore", help="a new store from a backup",
                                  description="Restore a backup into a new, empty store directory; every file's "
                                              "digest is checked and the result verified.")
    restore.add_argument("backup", help="the backup directory (with manifest.json)")
    add_store(restore)
    add_format(restore)
    restore.set_defaults(run=run_restore, render_text=_restore_text)


def _now() -> str:
    """The clock in ``[host] timezone`` (UTC when plugins.toml does not set one), like the host's."""
    from datetime import datetime
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    from fold_core.cli.common import config_given
    from fold_core.configfile import view_settings

    zone = view_settings(config_given())[1]
    try:
        return datetime.now(ZoneInfo(zone)).isoformat(timespec="seconds") if zone else resolve_now(None)
    except (ZoneInfoNotFoundError, ValueError):
        return resolve_now(None)


def run_backup(args: argparse.Namespace) -> tuple[dict, int]:
    from fold_host.ops.backup import backup

    manifest = backup(resolve_store(args.store), args.out, now=_now())
    return {"ok": True, "out": args.out, **manifest}, 0


def run_restore(args: argparse.Namespace) -> tuple[dict, int]:
    from fold_core.errors import UsageError
    from fold_host.ops.backup import restore

    if not args.store:
        raise UsageError("restore needs --store NEWDIR: the new store's directory (it must not hold anything)")
    return restore(args.backup, args.store, now=_now()), 0


def _backup_text(doc: dict) -> str:
    if "files" not in doc:
        from fold_core.cli.textview import render_answer

        return render_answer("", doc)
    from fold_host.words import words

    return words()("backup of event {event_seq} (revision {revision}) in {out}: {count} files",
                   event_seq=doc["event_seq"], revision=doc["revision"], out=doc["out"],
                   count=len(doc["files"])) + "\n"


def _restore_text(doc: dict) -> str:
    if "verify" not in doc:
        from fold_core.cli.textview import render_answer

        return render_answer("", doc)
    from fold_host.words import words

    w = words()
    return w("restored event {event_seq} (revision {revision}, backed up at {at}) into {store}; verify: ok",
             event_seq=doc["event_seq"], revision=doc["revision"], at=w.when(doc["created_at"]),
             store=doc["store"]) + "\n"
