"""Many feeds in one rss instance: the feed list, per-feed schedule and health, one poll over all (contract §10).

``poll_many(source, settings, cursor, now)`` reads the feed list (``feeds``
or the OPML file, again at each poll), polls every feed that is due — at
most ``max_connections`` at once, ``max_per_host`` per host
(``fold_adapters.feeds.crowd``), all within a little less than
``poll_timeout`` — and folds the feeds' results into one ``Poll``. The
cursor layout and the health rules are in ``fold_adapters.feeds.rss``.

A feed's schedule lives in its state: ``failures`` in a row, ``next_at``
(the feed's own backoff: ``every`` doubled per failure, at most
``max(every, 1 h)``; longer when the feed asked for it by Retry-After,
Cache-Control or ``<ttl>``), ``last_ok_at``, ``polled_at`` and ``error``. A
feed is due when ``next_at`` is unset or within a tenth of ``every`` (the
host's poll jobs fire a moment early). Feeds never polled come first, then
those polled longest ago, so a poll cut short by its deadline does not
starve the same feeds twice.
"""

from __future__ import annotations

import hashlib
import time
from datetime import datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any

from fold_adapters.feeds.crowd import Task, host_of, run_polite
from fold_adapters.feeds.feed import FeedPoller, FeedResult, load_state
from fold_adapters.feeds.opml import FeedRef, OpmlError, read_opml_file
from fold_adapters.feeds.settings import RssSettings
from fold_core.bounded_http import bounded_client
from fold_core.netpolicy import mask_credentials, without_credentials
from fold_core.observation import Health, Observation, Poll
from fold_core.timefmt import parse_instant

__all__ = ["CURSOR_VERSION", "feed_health", "feed_key", "feed_refs", "poll_many"]

CURSOR_VERSION = 2
SEEN_LIMIT_MANY = 500
BACKOFF_CAP = timedelta(hours=1)
MAX_NOTES = 50
DEADLINE_SHARE = 0.85  # of poll_timeout: the adapter answers before the host gives up on it


def feed_key(url: str) -> str:
    """A feed's key in ids and in the cursor: the first 10 hex digits of the SHA-256 of its configured URL."""
    return hashlib.sha256(url.encode()).hexdigest()[:10]


def feed_refs(settings: RssSettings) -> tuple[list[FeedRef], list[str]]:
    """The feeds an rss instance reads now (``FeedRef``) and notes on what was skipped; ``OpmlError`` for a bad list."""
    if settings.url is not None:
        return [FeedRef(settings.url)], []
    if settings.opml is not None:
        return read_opml_file(Path(settings.opml))
    seen: set[str] = set()
    refs: list[FeedRef] = []
    for item in settings.feeds or ():  # the settings name exactly one of url, opml and feeds
        if item.url not in seen:
            seen.add(item.url)
            refs.append(FeedRef(item.url, item.title, item.folder))
    return refs, []


def _states(cursor: Any) -> dict[str, dict]:
    if isinstance(cursor, dict) and cursor.get("v") == CURSOR_VERSION and isinstance(cursor.get("feeds"), dict):
        return {k: v for k, v in cursor["feeds"].items() if isinstance(v, dict)}
    if isinstance(cursor, dict) and isinstance(cursor.get("configured"), str):
        # The cursor of the same instance when it named one feed by ``url``: that feed keeps what it has seen.
        return {feed_key(cursor["configured"]): cursor}
    return {}


def _due(state: dict, now: datetime, slack: float) -> bool:
    if state.get("gone"):
        return False
    moment = parse_instant(state["next_at"]) if isinstance(state.get("next_at"), str) else None
    return moment is None or moment <= now + timedelta(seconds=slack)


def poll_many(source: str, settings: RssSettings, cursor: Any, now: datetime) -> Poll:
    """One poll over every due feed of a many-feed instance (see the module docstring)."""
    deadline_at = time.monotonic() + settings.poll_timeout.total_seconds() * DEADLINE_SHARE
    try:
        refs, notes = feed_refs(settings)
    except OpmlError as error:
        return Poll(cursor=cursor, health=Health.failed("config", str(error)))
    states = _states(cursor)
    feeds = [(feed_key(ref.url), ref, load_state(states.get(feed_key(ref.url)), ref.url)) for ref in refs]
    slack = max(2.0, settings.every.total_seconds() * 0.1)
    due = [(key, ref, state) for key, ref, state in feeds if _due(state, now, slack)]
    due.sort(key=lambda item: item[2].get("polled_at") or "")
    answers = _fetch_all(source, settings, due, now, deadline_at)
    observations: list[Observation] = []
    kept: dict[str, dict] = {}
    failing: list[dict] = []
    first_runs = 0
    late = len({item[0] for item in due} - set(answers))
    for key, ref, state in feeds:
        answer = answers.get(key)
        if answer is not None:
            state = _after(settings, state, answer, now)
            observations += answer.observations if not isinstance(answer, Exception) else []
            for note in _notes_of(answer):
                if note.startswith("first run ("):
                    first_runs += 1
                else:
                    notes.append(f"{state.get('url', ref.url)}: {note}")
        kept[key] = state
        if state.get("status") in ("failed", "gone"):
            failing.append(state)
    if first_runs:
        notes.append(f"first run of {first_runs} feed(s) (first_run = {settings.first_run}): older entries are "
                     f"marked as seen")
    if late:
        notes.append(f"{late} feed(s) were not reached before the poll's deadline (poll_timeout); they come first "
                     f"next time")
    if not refs:
        notes.append("the list names no feed")
    return Poll(observations=observations, cursor={"v": CURSOR_VERSION, "feeds": kept},
                health=_health(len(feeds), failing, notes))


def _fetch_all(source: str, settings: RssSettings, due: list, now: datetime, deadline_at: float) -> dict:
    import httpx

    if not due:
        return {}
    limit = settings.seen_limit or SEEN_LIMIT_MANY
    limits = httpx.Limits(max_connections=settings.max_connections)
    # Bounded: each fetch keeps its own deadline and cap, however its server trickles (fold_core.bounded_http).
    with bounded_client(seconds=settings.poll_timeout.total_seconds(), max_bytes=settings.max_bytes,
                        limits=limits, follow_redirects=False) as client:
        tasks = []
        for key, ref, state in due:
            meta = {"feed": without_credentials(ref.url), **({"folder": ref.folder} if ref.folder else {})}
            poller = FeedPoller(source, settings, prefix=f"{key}:", seen_limit=limit, client=client, meta=meta,
                                fallback_title=ref.title, configured=ref.url)
            tasks.append(Task(key, host_of(state["url"]), partial(_one, poller, state, now)))
        return run_polite(tasks, workers=settings.max_connections, per_host=settings.max_per_host,
                          deadline_at=deadline_at)


def _one(poller, state: dict, now: datetime, seconds_left: float):
    return poller.poll(state, now=now, deadline=seconds_left)


def _notes_of(answer) -> tuple[str, ...]:
    return () if isinstance(answer, Exception) else answer.health.notes


def _after(settings: RssSettings, state: dict, answer: FeedResult | Exception, now: datetime) -> dict:
    """The feed's state after this poll's answer, with its schedule and health line."""
    every = settings.every
    if isinstance(answer, Exception):  # a bug in the feed's poll: that feed's failure only
        health = Health.failed("adapter", mask_credentials(f"{type(answer).__name__}: {answer}"))
    else:
        health, state = answer.health, answer.state
        if answer.title:
            state = {**state, "title": answer.title}
    stamp = now.isoformat()
    state = {**state, "polled_at": stamp}
    if health.status == "ok":
        wait = health.min_interval if health.min_interval and health.min_interval > every.total_seconds() else None
        return {**state, "status": "ok", "failures": 0, "error": None, "last_ok_at": stamp,
                "next_at": (now + timedelta(seconds=wait)).isoformat() if wait else None}
    failures = int(state.get("failures") or 0) + 1
    delay = min(every * 2 ** min(failures - 1, 30), max(every, BACKOFF_CAP))
    for asked in (health.retry_after, health.min_interval):
        if asked:
            delay = max(delay, timedelta(seconds=asked))
    return {**state, "status": "gone" if health.disabled else "failed", "failures": failures,
            "error": {"class": health.error_class, "message": health.message, "at": stamp},
            "next_at": None if health.disabled else (now + delay).isoformat()}


def _health(total: int, failing: list[dict], notes: list[str]) -> Health:
    notes = [mask_credentials(note) for note in notes]  # an OPML list's own URLs may hold credentials too
    if len(notes) > MAX_NOTES:
        notes = notes[:MAX_NOTES] + [f"… and {len(notes) - MAX_NOTES} more notes"]
    if not failing:
        return Health(status="ok", notes=tuple(notes))
    named = "; ".join(f"{state.get('url')} ({(state.get('error') or {}).get('class')}: "
                      f"{(state.get('error') or {}).get('message')})" for state in failing[:5])
    more = f"; and {len(failing) - 5} more" if len(failing) > 5 else ""
    if len(failing) == total:
        first = failing[0].get("error") or {}
        return Health(status="failed", error_class=first.get("class") or "network", notes=tuple(notes),
                      message=f"all {total} feed(s) are failing: {named}{more}"[:2000])
    return Health(status="ok", notes=tuple(notes),
                  message=f"{len(failing)} of {total} feeds failing: {named}{more}"[:2000])


def feed_health(settings: RssSettings, cursor: Any) -> list[dict]:
    """Each feed's health line from a saved cursor: what ``foldctl sources list`` shows."""
    refs, _ = feed_refs(settings)
    states = {feed_key(settings.url): cursor} if settings.url is not None else _states(cursor)
    lines = []
    for ref in refs:
        key = feed_key(ref.url)
        state = load_state(states.get(key), ref.url)
        lines.append({"key": key, "url": mask_credentials(ref.url), "polled_url": state.get("url"), "title": state.get("title")
                      or ref.title, "folder": ref.folder, "status": state.get("status") or "unknown",
                      "failures": state.get("failures") or 0, "last_ok_at": state.get("last_ok_at"),
                      "last_poll_at": state.get("polled_at"), "next_at": state.get("next_at"), "error": state.get("error"),
                      "discovered_from": state.get("discovered_from"), "entries_seen": len(state.get("seen") or {})})
    return lines
