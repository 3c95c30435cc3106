"""``foldctl sources``: the sources and their health, feed discovery, OPML import and export (contract §11.2).

* ``sources list`` — every configured source with its health; an rss
  instance of many feeds lists each feed's own health line (from its cursor);
* ``sources discover URL`` — what a URL offers: the feed itself, or the
  feeds a web page names in ``<link rel="alternate">``;
* ``sources export-opml [--out FILE]`` — every configured feed as OPML 2.0,
  one folder per rss instance: OPML on stdout whatever stdout is (a file
  included), the wrapped JSON form only with ``--format json``;
* ``sources import-opml FILE --name NAME [--every D] [--into plugins.toml]`` —
  the ``[[adapters]]`` block reading the list's feeds (their folders and
  titles kept); with ``--into`` it is appended to that file only when the
  file still loads with it (nothing new wrong), written atomically.

Light at registration: argparse only; the rest is imported when a command runs.
"""

from __future__ import annotations

import argparse

from fold_core.cli.common import add_format, add_store
from fold_host.cli.shared import text_view

__all__ = ["register"]


def register(commands) -> None:
    sources = commands.add_parser("sources", help="sources and their health; feed discovery; OPML",
                                  description="The configured sources, feed discovery, OPML import and export.")
    actions = sources.add_subparsers(dest="sources_command", metavar="ACTION", parser_class=type(sources))
    actions.required = True

    listed = actions.add_parser("list", help="every source with its health (each feed of a many-feed instance)")
    _common(listed)
    listed.add_argument("--now", help=argparse.SUPPRESS)  # the instant "today" and the daemon check are read at
    listed.set_defaults(run=run_list, render_text=text_view(_list_text))

    discover = actions.add_parser("discover", help="the feeds a URL offers")
    _common(discover)
    discover.add_argument("url", help="a feed or a web page (http or https)")
    discover.add_argument("--timeout", type=float, default=30.0, help="seconds to wait for an answer (default 30)")
    discover.set_defaults(run=run_discover, render_text=text_view(_discover_text))

    export = actions.add_parser("export-opml", help="every configured feed as OPML 2.0")
    _common(export)
    export.add_argument("--out", help="write the OPML to this file (default: stdout, as OPML unless --format json)")
    export.set_defaults(run=run_export, render_text=text_view(_export_text))

    imported = actions.add_parser("import-opml", help="an [[adapters]] block reading an OPML list's feeds")
    _common(imported)
    imported.add_argument("file", help="the OPML file")
    imported.add_argument("--name", required=True, help="the new rss instance's name ([a-z0-9-]{1,32})")
    imported.add_argument("--every", default="30m", help='how often to poll (default "30m")')
    imported.add_argument("--into", metavar="PLUGINS_TOML",
                          help="append the block to this plugins.toml (after checking that it still loads)")
    imported.set_defaults(run=run_import, render_text=text_view(_import_text))


def _common(parser: argparse.ArgumentParser) -> None:
    add_store(parser)
    add_format(parser)


# -- list ----------------------------------------------------------------------------


def run_list(args: argparse.Namespace) -> tuple[dict, int]:
    from datetime import datetime
    from zoneinfo import ZoneInfo

    from fold_core.cli.common import config_given, resolve_store
    from fold_core.timefmt import instant
    from fold_host.hostdb import host_db_exists, open_host_db
    from fold_host.hostdb.sources import last_error
    from fold_host.ops.doctor import daemon_polls
    from fold_host.plugins import load_config

    config = load_config(config_given())
    store_dir = resolve_store(args.store, url_ok=True)
    zone = ZoneInfo(config.host.timezone)
    now = instant(args.now).astimezone(zone) if args.now else datetime.now(zone).replace(microsecond=0)
    day_start = datetime.combine(now.date(), datetime.min.time(), tzinfo=zone)  # today, in [host] timezone
    db = open_host_db(store_dir) if host_db_exists(store_dir) else None
    try:
        polling = daemon_polls(db, store_dir, now)  # without a daemon a stored next poll is only a wish
        health = {entry["source"]: entry for entry in
                  (db.source_health(config.adapters, detail=True, now=now) if db else [])}
        rows = db.source_rows() if db else {}
        listed = []
        for instance in config.adapters:
            entry = _source_line(instance, health.get(instance.name), rows.get(instance.name), polling)
            entry["last_error"] = last_error(rows[instance.name]["last_error"]) if instance.name in rows else None
            entry["observations"] = (db.observation_counts(instance.name, day_start) if db
                                     else {"today": 0, "all": 0})
            feeds = _feed_lines(instance, db.cursor(instance.name) if db else None)
            if feeds is not None:
                for feed in feeds:
                    if not polling:
                        feed["next_at"] = None
                    if db and feed.get("key"):
                        feed["observations"] = db.observation_counts(instance.name, day_start,
                                                                     id_prefix=f"{instance.name}:{feed['key']}:")
                entry["feeds"] = feeds
            listed.append(entry)
    finally:
        if db is not None:
            db.close()
    return {"sources": listed, "daemon_running": polling, "now": now.isoformat(),
            "timezone": config.host.timezone}, 0


def _source_line(instance, health: dict | None, row: dict | None, polling: bool) -> dict:
    """One source's fields: status, last ok, last poll, next poll (only while a daemon polls), failures."""
    entry = {"source": instance.name, "type": instance.type_name,
             "channel": getattr(instance.cls, "channel", None) or instance.type_name, "status": "unknown",
             "last_ok_at": None,
             "last_poll_at": None, "next_poll_at": None, "failures": 0, "disabled": False}
    if health is not None:
        entry.update({key: health[key] for key in ("status", "last_ok_at", "last_poll_at", "failures", "disabled")
                      if key in health})
        if health.get("error"):
            entry["error"] = health["error"]
        if polling and not entry["disabled"]:
            entry["next_poll_at"] = health.get("next_poll_at")
    return entry


def _feed_lines(instance, cursor) -> list[dict] | None:
    from fold_adapters.feeds.rss import RssAdapter

    if not issubclass(instance.cls, RssAdapter) or not instance.settings.many:
        return None
    from fold_adapters.feeds.many import feed_health
    from fold_adapters.feeds.opml import OpmlError

    try:
        return feed_health(instance.settings, cursor)
    except OpmlError as error:
        return [{"status": "failed", "error": {"class": "config", "message": str(error)}}]


def _words():
    """The view words in [host] language (sources' and servers' own words stay as given)."""
    from fold_host.words import words

    return words()


def _list_text(doc: dict) -> str:
    w, lines = _words(), []
    polling = doc.get("daemon_running", True)
    for source in doc["sources"]:
        error = f" — {source['error']}" if source.get("error") else ""
        lines.append(f"{source['source']} ({source['type']}): {w(source['status'])}{error}")
        lines.append("    " + _schedule(w, source, source.get("next_poll_at"), polling))
        lines.append("    " + _counts(w, source))
        if source.get("last_error"):
            problem = source["last_error"]
            lines.append("    " + w("last error {at} ({error_class}): {message}", at=w.when(problem.get("at")) or "-",
                                    error_class=problem.get("class") or "-", message=problem.get("message")))
        for feed in source.get("feeds", []):
            problem = feed.get("error") or {}
            why = f" — {problem.get('class')}: {problem.get('message')}" if feed.get("status") != "ok" and problem \
                else ""
            found = w(" (found on {page})", page=feed["discovered_from"]) if feed.get("discovered_from") else ""
            lines.append(f"  {w(feed['status']):<7} {feed.get('polled_url') or feed.get('url')}{found}{why}")
            if "failures" in feed:
                lines.append("      " + _schedule(w, feed, feed.get("next_at"), polling, feed=True))
                lines.append("      " + _counts(w, feed))
    if lines and not polling:
        lines.append(w("(no daemon runs: no next poll is scheduled; start `foldctl run`, or run `foldctl tick`)"))
    return "\n".join(lines) + "\n" if lines else w("(no sources configured)") + "\n"


def _schedule(w, line: dict, next_at: str | None, polling: bool, *, feed: bool = False) -> str:
    if not polling:
        upcoming = w("no daemon")
    elif next_at:
        upcoming = w.when(next_at)
    else:
        upcoming = w("with the source") if feed else "-"
    return w("last ok {last_ok} · last poll {last_poll} · next poll {next} · failures {failures}",
             last_ok=w.when(line.get("last_ok_at")) or "-", last_poll=w.when(line.get("last_poll_at")) or "-",
             next=upcoming, failures=line.get("failures") or 0)


def _counts(w, line: dict) -> str:
    counts = line.get("observations") or {"today": 0, "all": 0}
    return w("observations: {today} today, {all} in all", today=counts["today"], all=counts["all"])


# -- discover --------------------------------------------------------------------------


def run_discover(args: argparse.Namespace) -> tuple[dict, int]:
    from fold_adapters.feeds.discovery import alternate_links, looks_like_html
    from fold_adapters.feeds.entries import parse_feed
    from fold_adapters.feeds.feed import user_agent
    from fold_adapters.feeds.fetch import FetchError, fetch

    try:
        fetched = fetch(args.url, timeout=args.timeout, deadline=args.timeout * 2, user_agent=user_agent())
    except FetchError as error:
        from fold_core.netpolicy import mask_credentials

        return {"ok": False, "url": mask_credentials(args.url),
                "errors": [{"code": error.error_class, "message": error.message}]}, 1
    from fold_core.netpolicy import mask_credentials

    document = {"url": mask_credentials(args.url), "answered": mask_credentials(fetched.url), "status": fetched.status,
                "is_feed": False, "feeds": []}
    if fetched.status != 200:
        return {**document, "ok": False, "errors": [{"code": "http", "message":
                                                     f"{document['answered']} answered HTTP {fetched.status}"}]}, 1
    content_type = fetched.headers.get("content-type")
    parsed = parse_feed(fetched.body, url=fetched.url, content_type=content_type)
    if parsed.is_feed:
        kind = (content_type or "").split(";")[0].strip() or None
        document.update(is_feed=True, feeds=[{"url": mask_credentials(fetched.moved_to or fetched.url), "type": kind,
                                              "title": parsed.title, "entries": len(parsed.entries)}])
    elif looks_like_html(fetched.body, content_type):
        document["feeds"] = [link.to_json() for link in alternate_links(fetched.body, fetched.url)]
    return document, 0


def _discover_text(doc: dict) -> str:
    w = _words()
    if doc["is_feed"]:
        feed = doc["feeds"][0]
        return w("{url} is a feed ({type}): {title}, {entries} entries", url=feed["url"], type=feed["type"],
                 title=feed["title"] or w("untitled"), entries=feed["entries"]) + "\n"
    if not doc["feeds"]:
        return w("{url} names no feed", url=doc["answered"]) + "\n"
    return "".join(f"{f['url']}  ({f['type']}){'  ' + f['title'] if f['title'] else ''}\n" for f in doc["feeds"])


# -- OPML -------------------------------------------------------------------------------


def run_export(args: argparse.Namespace) -> tuple[dict, int]:
    from fold_adapters.feeds.many import feed_refs
    from fold_adapters.feeds.opml import OpmlError, write_opml
    from fold_adapters.feeds.rss import RssAdapter
    from fold_core.cli.common import config_given, explain
    from fold_core.errors import UsageError
    from fold_host.plugins import load_config

    config = load_config(config_given())
    groups = []
    for instance in config.adapters:
        if not issubclass(instance.cls, RssAdapter):
            continue
        try:
            refs, _ = feed_refs(instance.settings)
        except OpmlError as error:
            explain(f"foldctl sources export-opml: {instance.name}: {error}; its feeds are left out")
            continue
        groups.append((instance.name, refs))
    data = write_opml(groups)
    count = sum(len(refs) for _, refs in groups)
    if args.out is None:
        # `export-opml > subs.opml` must write OPML, not the JSON that a non-terminal stdout gets by default.
        if args.format is None:
            args.format = "text"
        return {"opml": data.decode("utf-8"), "feeds": count}, 0
    try:
        with open(args.out, "wb") as handle:
            handle.write(data)
    except OSError as error:
        raise UsageError(f"cannot write {args.out}: {error.strerror or error}") from None
    return {"out": args.out, "feeds": count}, 0


def run_import(args: argparse.Namespace) -> tuple[dict, int]:
    from pathlib import Path

    from fold_adapters.feeds.opml import OpmlError, read_opml_file
    from fold_core.errors import UsageError
    from fold_host.ops.opml_import import adapter_block, append_checked

    try:
        refs, notes = read_opml_file(Path(args.file))
    except OpmlError as error:
        raise UsageError(str(error)) from None
    if not refs:
        raise UsageError(f"{args.file} names no feed")
    block = adapter_block(args.name, refs, every=args.every)
    document = {"name": args.name, "feeds": len(refs), "skipped": notes, "block": block}
    if args.into is not None:
        append_checked(Path(args.into), block)
        document["into"] = args.into
    return document, 0


def _import_text(doc: dict) -> str:
    if doc.get("into"):
        w = _words()
        return w("appended [[adapters]] {name} ({feeds} feeds) to {into}", name=doc["name"], feeds=doc["feeds"],
                 into=doc["into"]) + "\n"
    return doc["block"]


def _export_text(doc: dict) -> str:
    if "opml" in doc:
        return doc["opml"]
    w = _words()
    return w("wrote {feeds} feed(s) to {out}", feeds=doc["feeds"], out=doc["out"]) + "\n"
