"""The Pinboard web app: the state as a live page, and the user's answers (contract §12).

``create_app(store_dir, ...)`` is an ASGI app (Starlette, wrapped in the
``security.Guard``; the handlers are ``routes.Pages``); ``from_config`` builds
it and its bind (``fold_host.web.server``) from plugins.toml. Pages, all server-rendered from the tool's own Jinja2
templates, none needing JavaScript (there is none):

    GET  /                     the board (filters: ?min_weight=&kind=&item=)
    GET  /item/{id}            an item: fields, sources, annotations, history, the input forms
                               (?history=all: its records from the whole log, not the last 2,000 events)
    POST /item/{id}/annotate   Store.annotate — the path of `foldctl annotate`
    POST /item/{id}/feedback   save_feedback — the path of `foldctl feedback`
    POST /item/{id}/decide     save_decision — the path of `foldctl decide` (one button per option, bound to
                               the frame's digest: a changed frame stores nothing and shows what changed)
    GET  /decisions            the open decision frames, soonest decide_by first (`foldctl decisions`)
    GET  /observation/{id}     one observation as it came in (an item's event:<id> source links here),
                               with every disposition the editor gave it (read from host.db)
    GET  /changes              what the records say happened since the last visit (cookie fold_seen)
    GET  /login, POST /login   the token form (only when a token is configured)
    GET  /static/pinboard.css  the only stylesheet
    GET  /healthz, /metrics    health (200 / 503) and Prometheus metrics (``watch``)

One long-lived ``Store`` reads the store (it keeps the recovered state and
reads only what other processes appended since), under the store's own lock
and a process lock (the recorder is not shared between threads); the daemon
writing beside it is kept apart by the store lock and host.db's WAL. The
server writes nothing but annotations and feedback, through their commands'
own functions. A POST answers with a redirect to the item page, which says
what happens next (post/redirect/get: a reload never sends twice).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.responses import Response
from starlette.routing import Route

from fold_core.kernel.decision import frame_digest
from fold_core.store.locate import open_store
from fold_core.words import Words
from fold_host.cycle.decide import list_decisions, save_decision
from fold_host.cycle.feedback import FEEDBACK_SOURCE, save_feedback
from fold_host.localtime import HumanTime
from fold_host.hostdb import host_db_exists, open_host_db
from fold_host.overview.page import TEMPLATES, px, stylesheet
from fold_host.overview.words import card_line
from fold_host.pinboard.board import BoardQuery, board, first_sources
from fold_host.pinboard.routes import Pages
from fold_host.pinboard.watch import Watch
from fold_host.pinboard.words import CATALOG
from fold_host.settings import HostConfig
from fold_host.web.security import Guard, LoginThrottle
from fold_host.web.server import Bind, resolve_bind

__all__ = ["Pinboard", "PinboardApp", "create_app", "from_config"]

HERE = Path(__file__).parent


class Pinboard:
    """The store behind the pages: reads, and the two inputs, one at a time per process."""

    def __init__(self, store_dir: str, *, timezone: str = "UTC", language: str = "en",
                 clock: Callable[[], datetime] | None = None, board_cache: int = 32) -> None:
        self.store_dir, self.timezone = store_dir, timezone
        self.words = Words(language, timezone).extend(CATALOG)
        self.store = open_store(store_dir)
        self._lock = threading.Lock()
        self._clock = clock or (lambda: datetime.now(ZoneInfo(timezone)))
        self._boards: OrderedDict = OrderedDict()
        self._board_cache = board_cache

    def now(self) -> datetime:
        return self._clock().astimezone(ZoneInfo(self.timezone)).replace(microsecond=0)

    def state(self):
        with self._lock:
            return self.store.state()

    def history(self, *, item: str | None = None, since: int | None = None) -> list[dict]:
        with self._lock:
            return self.store.history(item=item, since=since).document["records"]

    def annotate(self, item: str, text: str, now: str):
        with self._lock:
            return self.store.annotate(item=item, text=text, author="user", now=now)

    def feedback(self, item: str, meaning: str, value: str | None, until: str | None, now: str):
        with self._lock:  # save_feedback reads the store through its own lock: not beside ours
            return save_feedback(self.store_dir, item, meaning, value, until, now, via="button",
                                 timezone_name=self.timezone)

    def decide(self, item: str, option: str, digest: str | None, note: str | None, now: str) -> tuple[dict, int]:
        with self._lock:  # save_decision reads the store through its own lock, as save_feedback does
            return save_decision(self.store_dir, item, option, digest, note, now, via="button")

    def state_frame(self, item: str) -> dict | None:
        """The current frame of an active item as the state document shows it (with its digest), or None."""
        record = self.state().items.get(item) or {}
        frame = record.get("decision") if record.get("status") == "active" else None
        return {**frame, "digest": frame_digest(frame)} if frame else None

    def answer_of(self, item: str, digest: str, recent: int = 500) -> dict | None:
        """The latest answer to ``item``'s frame ``digest`` among the ``recent`` newest feedback observations.

        Bounded on purpose: the item page reads host.db's newest feedback only (``foldctl decisions``, which
        reads it all, stays the full view); an answer to an earlier frame does not count.
        """
        if not host_db_exists(self.store_dir):
            return None
        with open_host_db(self.store_dir) as db:
            rows = db.observations(source=FEEDBACK_SOURCE, limit=recent)  # newest first
            found = {o.id: o for o in db.observations_by_id([row["id"] for row in rows])}
        for row in rows:
            feedback = getattr(found.get(row["id"]), "feedback", None) or {}
            if feedback.get("meaning") == "decide" and feedback.get("target") == item and "option" in feedback:
                if feedback.get("digest") != digest:
                    return None
                return {"option": feedback["option"], "at": row["at"], "via": feedback.get("via"),
                        "digest": digest, "note": feedback.get("note")}
        return None

    def decisions(self, now: str, status: str | None = "open") -> list[dict]:
        with self._lock:
            document, _ = list_decisions(self.store_dir, now, status=status)
        return document["decisions"]

    def cited(self, observation_ids: list[str]) -> dict[str, dict]:
        """``{id: {"title", "from", "at"}}`` of these observations in host.db (subjects and senders)."""
        wanted = sorted({ref for ref in observation_ids if 0 < len(ref) <= 512})[:500]
        if not wanted or not host_db_exists(self.store_dir):
            return {}
        with open_host_db(self.store_dir) as db:
            found = db.observations_by_id(wanted)
        return {o.id: {"title": o.title, "from": o.sender, "at": o.at} for o in found}

    def human_time(self) -> HumanTime:
        """Instants in words, relative to now, in the page's language and zone."""
        return HumanTime(self.words.language, self.timezone, self.now())

    def observation(self, observation_id: str) -> dict | None:
        """One observation with its status and dispositions (host.db), or None; never creates host.db."""
        if not host_db_exists(self.store_dir):
            return None
        with open_host_db(self.store_dir) as db:
            return db.observation_detail(observation_id)

    def board_html(self, state, query: BoardQuery, render: Callable) -> str:
        """The board's rectangles and list; kept per (event, minute, filters): positions never move on reload."""
        now = self.now().replace(second=0).isoformat()
        key = (state.event_seq, now, query.key())
        with self._lock:
            html = self._boards.get(key)
        if html is None:
            def subjects(items) -> dict[str, str]:
                firsts = first_sources(state, items)
                cited = self.cited(list(firsts.values()))
                return {item: cited[ref]["title"] for item, ref in firsts.items()
                        if (cited.get(ref) or {}).get("title")}

            html = render(board(state, now, query, subjects))
            with self._lock:
                self._boards[key] = html
                while len(self._boards) > self._board_cache:
                    self._boards.popitem(last=False)
        return html


class PinboardApp(Guard):
    """The Pinboard as an ASGI app: its routes behind the ``Guard``, with its store and pages at hand."""

    def __init__(self, app: Starlette, pinboard: Pinboard, pages: Pages, *, token: str | None, loopback: bool,
                 throttle: LoginThrottle | None) -> None:
        super().__init__(app, token=token, loopback=loopback, denied=pages.denied, throttle=throttle)
        self.pinboard, self.pages = pinboard, pages


def from_config(config: HostConfig, store_dir: str, *, host: str | None = None,
                port: int | None = None) -> tuple[PinboardApp, Bind]:
    """``(app, bind)`` for a loaded configuration, the flags first.

    ``[pinboard]`` gives the bind, ``[host] timezone`` and ``language`` the page's times and words (English when
    plugins.toml names no language).
    """
    section = config.pinboard
    bind = resolve_bind(host or section.host, section.port if port is None else port, section.token_env)
    app = create_app(store_dir, token=bind.token, loopback=bind.loopback, timezone=config.host.timezone,
                     language=config.host.reader_language)
    return app, bind


def create_app(store_dir: str, *, token: str | None = None, loopback: bool = True, timezone: str = "UTC",
               language: str = "en", clock: Callable[[], datetime] | None = None, board_cache: int = 32,
               login_throttle: LoginThrottle | None = None) -> PinboardApp:
    """The Pinboard as an ASGI app (``board_cache``: rendered boards kept; 0 renders every request).

    Its words are in ``language`` (en | zh) and its times in ``timezone``. ``login_throttle``: the
    ``LoginThrottle`` of wrong tokens (a fresh one by default).
    """
    pinboard = Pinboard(store_dir, timezone=timezone, language=language, clock=clock, board_cache=board_cache)
    pinboard.state()  # a missing or unreadable store stops the start, not the first page
    pages = Pages(pinboard, _environment(pinboard), _stylesheet(), token=token)
    watch = Watch(pinboard)
    routes = [
        Route("/", pages.guarded(pages.board_page)),
        Route("/item/{item}", pages.guarded(pages.item_view)),
        Route("/item/{item}/annotate", pages.posted(pages.annotate), methods=["POST"]),
        Route("/item/{item}/feedback", pages.posted(pages.feedback), methods=["POST"]),
        Route("/item/{item}/decide", pages.posted(pages.decide), methods=["POST"]),
        Route("/decisions", pages.guarded(pages.decisions_page)),
        Route("/observation/{observation:path}", pages.guarded(pages.observation_view)),
        Route("/changes", pages.guarded(pages.changes_page)),
        Route("/login", pages.login_form, methods=["GET"]),
        Route("/login", pages.login, methods=["POST"]),
        Route("/static/pinboard.css", pages.stylesheet),
        Route("/favicon.ico", lambda request: Response(status_code=204)),
        Route("/healthz", watch.healthz),
        Route("/metrics", watch.metrics),
    ]
    app = Starlette(routes=routes, exception_handlers={HTTPException: pages.not_found})
    guard = PinboardApp(app, pinboard, pages, token=token, loopback=loopback, throttle=login_throttle)
    pages.throttle = guard.throttle  # the login form's wrong tokens count with the Bearer ones
    return guard


def _environment(pinboard: Pinboard):
    import jinja2

    words = pinboard.words
    environment = jinja2.Environment(loader=jinja2.FileSystemLoader([HERE / "templates", TEMPLATES]),
                                     autoescape=True, undefined=jinja2.StrictUndefined)
    environment.filters["px"] = px
    # instants in [host] timezone and in words ("today 09:00"), also inside a reason or a summary
    environment.filters["when"] = lambda instant: pinboard.human_time()(instant)
    environment.filters["local"] = lambda text: pinboard.human_time().in_text(text)
    environment.globals.update(t=words, lang=words.language, line=card_line(words))  # every word in [host] language
    return environment


def _stylesheet() -> str:
    return stylesheet(960) + "\n" + (HERE / "static" / "pinboard.css").read_text(encoding="utf-8")

