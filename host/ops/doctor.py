"""``foldctl doctor`` (contract §11.2): is this Fold set up and healthy?

``{"ok": bool, "checks": [{"name", "status": "ok"|"warn"|"fail", "detail"}]}``
— ``ok`` is false when a check fails (exit 1). Checks, in order: the
configuration and its file permissions, the store, the host database (with
the inbox backlog), the daemon (running with a fresh heartbeat, stopped
cleanly, or dead — ``health.daemon_check``; on a store in PostgreSQL, every
host sharing the work with its last heartbeat), every source
(``HostDB.source_health``'s verdict: a source that never succeeded or whose
credentials were refused fails at once; one whose next poll is more than two
intervals past is "not polling"), the editor (which backend, the default
baseline announced as such, the last failed window) and every consumer; with
``probe``, a login to each source that can try one and a model-list request
to the editor (``doctor_probe``). A plugins.toml that does not load is not a
failed check but a configuration error (exit 2), like for every command.
Doctor only reads: it creates neither a store nor a host database. Each
detail is a ``Sentence``: JSON carries its English, the text view says it in
``[host] language`` (paths, errors and a server's own words stay as given).
"""

from __future__ import annotations

import os
import stat
from datetime import datetime, timezone
from typing import Any
from zoneinfo import ZoneInfo

from fold_core.cli.common import resolve_store
from fold_core.errors import StoreError
from fold_core.store.locate import describe, open_store
from fold_core.store.location import is_url
from fold_core.store.meta import StoreMissing
from fold_core.timefmt import compact_duration, instant
from fold_host.cycle.fallback import editor_status
from fold_host.cycle.pipeline import describe_error
from fold_host.cycle.windows import last_failure
from fold_host.daemon.health import daemon_check
from fold_host.daemon.hostlock import host_running
from fold_host.daemon.retention import LAST_PASS_KEY
from fold_host.hostdb import FILE_NAME, HostDB, host_db_exists, open_host_db
from fold_host.hostdb.failures import REBUILD_HINT
from fold_host.hostdb.guard import halted
from fold_host.ops.doctor_probe import probe_all
from fold_host.plugins import load_config
from fold_host.settings import HostConfig
from fold_host.words import Sentence

__all__ = ["daemon_polls", "diagnose"]

GONE_SHOWN = 5  # hosts no longer running that doctor still lists (a store in PostgreSQL)


def diagnose(config_file: str | None, store_given: str | None, *, now: str | None = None,
             probe: bool = False) -> dict:
    config = load_config(config_file)
    store_dir = resolve_store(store_given, url_ok=True)
    moment = instant(now) if now else datetime.now(ZoneInfo(config.host.timezone)).replace(microsecond=0)
    checks = [_config(config), _permissions(config), _store(store_dir, moment.isoformat())]
    db, problem = _open_db(store_dir)
    try:
        checks.append(_host_db(db, store_dir, problem))
        if checks[-1]["status"] == "fail" and db is not None:  # the checks below read host.db: not a damaged one
            db.close()
            db = None
        hosts = _hosts(db) if is_url(store_dir) else []
        daemon = hosts.pop(0) if hosts else _daemon(db, store_dir, moment)
        checks.append(daemon)
        checks.extend(hosts)
        checks.extend(_sources(db, config, moment, daemon))
        checks.append(_agent(db, config))
        checks.extend(_caching(db, config))
        checks.extend(_consumers(db, config))
    finally:
        if db is not None:
            db.close()
    if probe:
        checks.extend(probe_all(config))
    return {"ok": all(check["status"] != "fail" for check in checks), "checks": checks}


def _check(name: str, status: str, detail: str) -> dict:
    return {"name": name, "status": status, "detail": detail}


def _config(config: HostConfig) -> dict:
    where = str(config.path) if config.path else Sentence("no plugins.toml found: the embedded defaults")
    return _check("config", "ok", Sentence("{where}: {sources} source(s), {consumers} consumer(s)", where=where,
                                           sources=len(config.adapters), consumers=len(config.consumers)))


def _permissions(config: HostConfig) -> dict:
    if config.path is None:
        return _check("config permissions", "ok", Sentence("no file"))
    mode = f"{stat.S_IMODE(os.stat(config.path).st_mode):04o}"
    if int(mode, 8) & stat.S_IWOTH:
        return _check("config permissions", "fail", Sentence(
            "{path} is writable by every user (mode {mode}): anyone could make Fold run their program; chmod o-w",
            path=str(config.path), mode=mode))
    if int(mode, 8) & stat.S_IWGRP:
        return _check("config permissions", "warn", Sentence("{path} is writable by its group (mode {mode})",
                                                             path=str(config.path), mode=mode))
    return _check("config permissions", "ok", Sentence("mode {mode}", mode=mode))


def _store(store_dir: str, now: str | None) -> dict:
    where = describe(store_dir)
    if not is_url(store_dir) and not os.path.exists(os.path.join(store_dir, "meta.json")):
        return _check("store", "warn", Sentence("no store at {store} yet: the first `foldctl tick` creates it",
                                                store=store_dir))
    moment = now or datetime.now(timezone.utc).isoformat(timespec="seconds")
    try:
        document = open_store(store_dir).state_document(now=moment, depth=0, not_active=0).document
    except StoreMissing as error:
        return _check("store", "warn", f"{error}; the first `foldctl tick` creates it")
    except StoreError as error:
        return _check("store", "fail", f"{where}: {error}")
    root = document["root"]
    return _check("store", "ok", Sentence(
        "{store}: revision {revision}, event {event_seq}, root {used}/{budget} used by {count} item(s)",
        store=where, revision=document["revision"], event_seq=document["event_seq"], used=root["used"],
        budget=root["budget"], count=root["count"]))


def _open_db(store_dir: str):
    """``(HostDB or None, why it could not be opened or None)``; a missing host.db is neither."""
    try:
        if is_url(store_dir):  # its host tables, when a cycle made them
            return (open_host_db(store_dir) if host_db_exists(store_dir) else None), None
        if not os.path.exists(os.path.join(store_dir, FILE_NAME)):
            return None, None
        return open_host_db(store_dir, create=False), None
    except StoreError as error:
        return None, str(error)


def _host_db(db: HostDB | None, store_dir: str, problem: str | None = None) -> dict:
    """The host.db check: it opens, SQLite's quick_check passes, the daemon did not stop over it."""
    stopped = halted(store_dir) if not is_url(store_dir) else None
    if problem is not None:
        return _check("host database", "fail", problem)
    if db is None:
        if stopped:
            return _check("host database", "fail", stopped)
        if is_url(store_dir):
            return _check("host database", "warn", Sentence("no host tables in the database yet: the first cycle "
                                                            "creates them"))
        return _check("host database", "warn", Sentence("no host.db in {store} yet: the first cycle creates it",
                                                        store=store_dir))
    try:
        integrity = db.integrity()
        counts = db.status_counts() if integrity == "ok" else {}
    except StoreError as error:
        return _check("host database", "fail", str(error))
    if integrity != "ok":
        return _check("host database", "fail", Sentence("{path}: SQLite's integrity check failed ({found}); {hint}",
                                                        path=str(db.path), found=integrity[:300], hint=REBUILD_HINT))
    detail = Sentence("schema {schema}; inbox: {pending} pending, {processed} processed, {deferred} deferred",
                      schema=db.schema_version, pending=counts.get("pending", 0),
                      processed=counts.get("processed", 0), deferred=counts.get("deferred", 0))
    retention = db.meta(LAST_PASS_KEY)
    if isinstance(retention, dict):  # keep_observations: what the last pass dropped, and kept for live items
        detail = Sentence.joined(detail, Sentence(
            "; retention at {at}: {dropped} old text(s) dropped, {kept} kept because live items cite them",
            at=retention.get("at"), dropped=retention.get("dropped", 0), kept=retention.get("kept_cited", 0)))
    if stopped:
        return _check("host database", "fail", Sentence("{stopped} ({detail})", stopped=stopped, detail=detail))
    return _check("host database", "ok", detail)


def _daemon(db: HostDB | None, store_dir: str, moment) -> dict:
    holder = host_running(store_dir) if os.path.isdir(store_dir) else None
    record = db.daemon_record() if db is not None else None
    ok, detail = daemon_check(record, holder, moment)
    if ok and not detail.startswith("running"):  # stopped cleanly, or never run: say so before the why
        detail = Sentence("not running: {detail}", detail=detail)
    return _check("daemon", "ok" if ok else "fail", detail)


def daemon_polls(db: HostDB | None, store_dir: str, moment: datetime) -> bool:
    """Whether a daemon polls this store's sources now (doctor's reading; ``sources list`` shows next polls only then)."""
    return _daemon_runs(_hosts(db)[0] if is_url(store_dir) else _daemon(db, store_dir, moment))


def _daemon_runs(daemon: dict) -> bool:
    """A daemon polls the sources now (one store directory, or some host on a store in PostgreSQL)."""
    return daemon["status"] == "ok" and daemon["detail"].startswith("running")


def _hosts(db: HostDB | None) -> list[dict]:
    """Several hosts (PostgreSQL): the daemon check, then one per running host and the last few that stopped."""
    hosts = db.hosts() if db is not None else []
    running = [host for host in hosts if host["alive"]]
    checks = [_check("daemon", "ok", Sentence("running: {count} host(s)", count=len(running)) if running
                     else Sentence("not running"))]
    for host in running + [host for host in hosts if not host["alive"]][:GONE_SHOWN]:
        where = Sentence("{command} on {hostname}, pid {pid}, since {since}", command=host["command"],
                         hostname=host["hostname"], pid=host["pid"], since=host["started_at"])
        if host["alive"]:
            detail, status = Sentence("{where}; last heartbeat {age}s ago ({at}); {windows} window(s)", where=where,
                                      age=f"{host['silent_seconds']:g}", at=host["heartbeat_at"],
                                      windows=host["windows"]), "ok"
        elif host["stopped_at"] is not None:
            detail, status = Sentence("{where}; stopped at {at}", where=where, at=host["stopped_at"]), "ok"
        else:
            detail = Sentence("{where}; silent since {at} (stopped without saying so); {windows} window(s) still "
                              "held until their lease expires, then another host takes them over", where=where,
                              at=host["heartbeat_at"], windows=host["windows"])
            status = "warn" if host["windows"] else "ok"
        checks.append(_check(f"host {host['id']}", status, detail))
    return checks


def _sources(db: HostDB | None, config: HostConfig, moment: datetime, daemon: dict) -> list[dict]:
    listed: list[dict[str, Any]] = [
        {"source": i.name, "severity": "warn", "reason": "not polled yet", "overdue": False} for i in config.adapters]
    if db is not None:
        listed = db.source_health(config.adapters, detail=True, now=moment)
    types = {instance.name: instance for instance in config.adapters}
    polls = db.last_polls() if db is not None else {}
    checks = []
    for entry in listed:
        instance = types[entry["source"]]
        checks.append(_source_check(entry, instance, daemon, (polls.get(entry["source"]) or {}).get("message")))
    return checks


def _source_check(entry: dict, instance, daemon: dict, part_failed: str | None) -> dict:
    name = f"source {entry['source']}"
    runs = _daemon_runs(daemon)  # without a daemon the stored next poll is only a wish: not shown
    if entry["reason"] == "not polled yet":
        return _check(name, "warn", Sentence("type {type}: not polled yet", type=instance.type_name))
    error = entry.get("error")
    last_error = (Sentence("; last error at {at} ({error_class}): {error}", at=entry["error_at"],
                           error_class=entry["error_class"], error=error) if error and entry["failures"] else "")
    severity = entry["severity"]
    if entry["disabled"]:
        detail = Sentence("disabled: the source said it is gone{last_error}; change its settings in plugins.toml "
                          "to try again", last_error=last_error)
    elif entry["failures"]:
        count = Sentence("{failures} failed poll(s) in a row", failures=entry["failures"])
        reason = count if str(entry["reason"]) == count else Sentence("{reason}: {count}",
                                                                      reason=Sentence(entry["reason"]), count=count)
        last_ok = Sentence("; last ok at {at}", at=entry["last_ok_at"]) if entry["last_ok_at"] else ""
        detail = (Sentence("{reason}, next try at {next}{last_ok}{last_error}", reason=reason,
                           next=entry["next_poll_at"], last_ok=last_ok, last_error=last_error) if runs else
                  Sentence("{reason}{last_ok}{last_error}", reason=reason, last_ok=last_ok, last_error=last_error))
    else:
        detail = (Sentence("last ok at {last_ok}, next poll at {next}", last_ok=entry["last_ok_at"],
                           next=entry["next_poll_at"]) if runs else
                  Sentence("last ok at {last_ok}", last_ok=entry["last_ok_at"]))
        if part_failed:  # a part failing while the rest is read (a folder, a feed of many)
            severity, detail = "warn", Sentence("{detail}; {part}", detail=detail, part=part_failed)
    if entry["overdue"]:
        every = instance.settings.every
        why = (Sentence("the daemon runs but does not poll it") if runs else
               Sentence("no daemon runs: start `foldctl run`, or check the cron job that runs `foldctl tick`"))
        detail = Sentence("not polling: the next poll was due at {due}, more than two intervals ({span}) ago — "
                          "{why}; {detail}", due=entry["next_poll_at"], span=_span(2 * every), why=why,
                          detail=detail)
        if severity == "ok":
            severity = "warn"
    return _check(name, severity, detail)


def _span(delta) -> str:
    seconds = int(delta.total_seconds())
    return compact_duration(seconds) if seconds >= 60 else f"{seconds}s"


def _agent(db: HostDB | None, config: HostConfig) -> dict:
    if config.agent is None:
        return _check("agent", "fail", Sentence("no [agent] configured and no baseline editor installed"))
    try:
        described = config.agent.build().describe()
    except Exception as error:
        return _check("agent", "fail", Sentence("type {type} cannot be set up: {error}",
                                                type=config.agent.type_name, error=str(error)))
    status = "ok"
    if not config.agent_configured:
        described = Sentence.joined(described, Sentence(" — the default: no [agent] in plugins.toml"))
        status = "warn"
    failure = last_failure(db) if db is not None else None
    held = _held_back(db)
    if failure is not None:
        reasons = describe_error(failure["error"])
        pending = db.pending_count() if db is not None else 0  # a failure was read from it
        return _check("agent", "fail", Sentence(
            "{described}; the last window failed at {at} after {attempts} attempt(s): {reasons}; "
            "{pending} observation(s) wait, none lost{held}", described=described, at=failure["at"],
            attempts=failure["attempts"], reasons=reasons, pending=pending, held=held))
    calls = db.calls(limit=1) if db is not None else []
    if calls:
        described = Sentence.joined(described, Sentence("; last call at {at}: {outcome}", at=calls[0]["at"],
                                                        outcome=Sentence(calls[0]["outcome"])))
    standing_in = _standing_in(db, config)
    if standing_in:
        return _check("agent", "warn", Sentence.joined(described, standing_in, held))
    if held:
        return _check("agent", "warn", Sentence.joined(described, held))
    return _check("agent", status, described)


CACHE_CALLS, CACHE_PROMPT = 20, 2000  # a backend's last calls read, and the prompt size above which caching pays


def _caching(db: HostDB | None, config: HostConfig) -> list[dict]:
    """A warning when the LLM backend's last calls, all with long prompts, read nothing from its prompt cache."""
    if db is None or config.agent is None or not config.agent_configured or config.agent.type_name == "baseline":
        return []
    recent = db.recent_prompts(config.agent.type_name, limit=CACHE_CALLS)
    if len(recent) < CACHE_CALLS or any((row["input_tokens"] or 0) <= CACHE_PROMPT for row in recent):
        return []
    if any(row["cached_tokens"] for row in recent):
        return []
    return [_check("prompt cache", "warn", Sentence(
        "the last {calls} calls of {type}, each with a prompt over {tokens} tokens, read no token from a prompt "
        "cache: caching is expected but not happening (see `foldctl calls --summary`)", calls=CACHE_CALLS,
        type=config.agent.type_name, tokens=CACHE_PROMPT))]


def _standing_in(db: HostDB | None, config: HostConfig) -> str:
    """A sentence when the baseline editor stands in for an unreachable one ("" otherwise)."""
    status = editor_status(db, config) if db is not None else None
    if not status or not status["fallback"]:
        return ""
    return Sentence("; it could not be reached in {windows} window(s) in a row since {since} ({error}): "
                    "the baseline editor stands in until it answers", windows=status["windows"],
                    since=status["since"], error=status["error"])


def _held_back(db: HostDB | None) -> str:
    """A sentence on the pending observations whose windows failed ("" when there are none)."""
    if db is None:
        return ""
    count, worst = db.held_back()
    if not count or worst is None:  # one that failed most, whenever any did
        return ""
    return Sentence("; {count} observation(s) the editor could not settle wait apart and are retried ever more "
                    "rarely (most failures: {id}, {failures} window(s), last at {at}); see `foldctl inbox --status "
                    "pending`", count=count, id=worst["id"], failures=worst["failures"], at=worst["failed_at"])


def _consumers(db: HostDB | None, config: HostConfig) -> list[dict]:
    checks = []
    for instance in config.consumers:
        name = f"consumer {instance.name}"
        row = db.consumer_row(instance.name) if db is not None else None
        if row is None:
            checks.append(_check(name, "warn", Sentence("type {type}: nothing delivered yet",
                                                        type=instance.type_name)))
        elif row["failures"]:
            checks.append(_check(name, "warn", Sentence(
                "{failures} failed deliveries, next try at {next}; last error at {at}: {error}",
                failures=row["failures"], next=row["next_try_at"], at=row["last_error_at"], error=row["last_error"])))
        else:
            checks.append(_check(name, "ok", Sentence("delivered up to event {event_seq}",
                                                      event_seq=row["event_seq"])))
    return checks
