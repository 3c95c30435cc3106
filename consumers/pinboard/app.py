"""The Pinboard web app: the state as a live page, and the user's answers (contract §12; issue 10).

``create_app(store_dir, ...)`` is an ASGI app (Starlette, wrapped in the
``security.Guard``). Pages, all server-rendered from the tool's own Jinja2
templates, none needing JavaScript (there is none):

    GET  /                     the board (filters: ?min_weight=&kind=&item=)
    GET  /item/{id}            an item: fields, sources, annotations, history, the input forms
                               (?history=all: its records from the whole log, not the last 2,000 events)
    POST /item/{id}/annotate   Store.annotate — the path of `foldctl annotate`
    POST /item/{id}/feedback   save_feedback — the path of `foldctl feedback`
    GET  /changes              what the records say happened since the last visit (cookie fold_seen)
    GET  /login, POST /login   the token form (only when a token is configured)
    GET  /static/pinboard.css  the only stylesheet

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
from urllib.parse import urlsplit
from zoneinfo import ZoneInfo

from fold_consumers.layout import KINDS, WEIGHTS
from fold_consumers.pinboard import inputs
from fold_consumers.pinboard.board import CANVASES, ITEM_ID, BoardQuery, board
from fold_consumers.pinboard.pages import changes, item_history, item_page
from fold_consumers.pinboard.security import AUTH_COOKIE, CSRF_COOKIE, Csrf, Guard, cookies_of, login_value
from fold_core.errors import StoreError, UsageError

__all__ = ["Pinboard", "create_app"]

HERE = Path(__file__).parent
SEEN_COOKIE = "fold_seen"
FIRST_VISIT_RECORDS = 20  # no cookie yet: the changes page shows the latest records
HISTORY_WINDOW = 2000  # events whose records the item page reads unless asked for the whole history
YEAR = 365 * 24 * 3600


class Pinboard:
    """The store behind the pages: reads, and the two inputs, one at a time per process."""

    def __init__(self, store_dir: str, *, timezone: str = "UTC",
                 clock: Callable[[], datetime] | None = None, board_cache: int = 32) -> None:
        from fold_core.store.file import file_store

        self.store_dir, self.timezone = store_dir, timezone
        self.store = file_store(store_dir)
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
        from fold_host.feedback import save_feedback

        with self._lock:  # save_feedback reads the store through its own lock: not beside ours
            return save_feedback(self.store_dir, item, meaning, value, until, now, via="button")

    def board_html(self, state, query: BoardQuery, render: Callable) -> str:
        """The board's rectangles and list; kept per (event, minute, filters): positions never move on reload."""
        now = self.now().replace(second=0).isoformat()
        key = (state.event_seq, now, query.key())
        with self._lock:
            html = self._boards.get(key)
        if html is None:
            html = render(board(state, now, query))
            with self._lock:
                self._boards[key] = html
                while len(self._boards) > self._board_cache:
                    self._boards.popitem(last=False)
        return html


def create_app(store_dir: str, *, token: str | None = None, loopback: bool = True, timezone: str = "UTC",
               clock: Callable[[], datetime] | None = None, board_cache: int = 32):
    """The Pinboard as an ASGI app (``board_cache``: rendered boards kept; 0 renders every request)."""
    from starlette.applications import Starlette
    from starlette.concurrency import run_in_threadpool
    from starlette.exceptions import HTTPException
    from starlette.responses import HTMLResponse, RedirectResponse, Response
    from starlette.routing import Route

    pinboard = Pinboard(store_dir, timezone=timezone, clock=clock, board_cache=board_cache)
    pinboard.state()  # a missing or unreadable store stops the start, not the first page
    csrf = Csrf()
    templates = _environment()
    css = _stylesheet()

    def page(request, name: str, status: int = 200, **context) -> Response:
        nonce = cookies_of(request.scope).get(CSRF_COOKIE)
        fresh = nonce is None or not 16 <= len(nonce) <= 64
        if fresh:
            nonce = csrf.new_nonce()
        html = templates.get_template(name).render(csrf=csrf.token(nonce), path=request.url.path, **context)
        response = HTMLResponse(html, status_code=status)
        if fresh:
            response.set_cookie(CSRF_COOKIE, nonce, httponly=True, samesite="strict", path="/")
        return response

    def trouble(request, status: int, title: str, text: str) -> Response:
        return page(request, "message.html.j2", status, title=title, text=text)

    def guarded(handler):
        """Store failures become a page that says the outcome is unknown, never a traceback."""
        def run(request):
            try:
                return handler(request)
            except StoreError as error:
                return trouble(request, 503, "The store could not be read",
                               f"{error} — nothing is known about the last action: reload to see its outcome.")
        return run

    def board_page(request):
        try:
            query = BoardQuery.parse(request.query_params)
        except ValueError as error:
            return trouble(request, 400, "Not a filter the board knows", str(error))
        state = pinboard.state()
        if query.item is not None and state.items.get(query.item, {}).get("status") != "active":
            return trouble(request, 404, "No such active item", f"{query.item} is not an active item.")
        html = pinboard.board_html(state, query, lambda drawn: templates.get_template("board_body.html.j2").render(
            board=drawn, query=query, budget=state.budget, details=frozenset(), card_href="/item/"))
        seen = _seen(request)
        return page(request, "board.html.j2", body=html, query=query, state=state, seen=seen,
                    weights=WEIGHTS, kinds=KINDS, now=pinboard.now().isoformat())

    def item_view(request, status: int = 200, **extra) -> Response:
        item_id = request.path_params["item"]
        if not ITEM_ID.match(item_id):
            return trouble(request, 404, "No such item", "Item ids are [a-z0-9-], 1–64 characters.")
        state = pinboard.state()
        now = pinboard.now()
        data = item_page(state, now.isoformat(), item_id, CANVASES)
        if data is None:
            return trouble(request, 404, "No such item", f"No item was ever called {item_id}.")
        # The item's records in the last HISTORY_WINDOW events (found by bisection, read in
        # bounded time); ?history=all reads the whole log.
        since = 0 if request.query_params.get("history") == "all" else max(0, state.event_seq - HISTORY_WINDOW)
        history, mentions = item_history(pinboard.history(item=item_id, since=since), item_id)
        notice = extra.pop("notice", None) or _notice(request, data)
        return page(request, "item.html.j2", status, item=data, history=history, mentions=mentions, history_since=since,
                    budget=state.budget, details=frozenset(), card_href="/item/", notice=notice,
                    quick=inputs.QUICK_UNTIL, meanings=inputs.FEEDBACK_MEANINGS, timezone=pinboard.timezone,
                    picker_min=now.strftime("%Y-%m-%dT%H:%M"), form=extra.pop("form", {}), **extra)

    async def form_of(request) -> dict | None:
        """The form's fields when its CSRF token matches its cookie (and it comes from this origin)."""
        origin = request.headers.get("origin")
        if origin not in (None, "null") and urlsplit(origin).netloc != request.headers.get("host"):
            return None  # another site's page (the scheme may differ behind a TLS proxy; the host may not)
        try:
            fields = inputs.parse_form(await request.body())
        except ValueError:
            return None
        nonce = cookies_of(request.scope).get(CSRF_COOKIE)
        return fields if csrf.valid(nonce, fields.get("csrf")) else None

    def refused_form(request) -> Response:
        return trouble(request, 403, "This form was refused",
                       "The form's security token is missing or does not match (a form from another page,"
                       " or an old one). Reload the page and send it again; nothing was saved.")

    def posted(handler):
        """A form's POST: refused without its CSRF token; the handler runs in a worker thread."""
        async def run(request):
            fields = await form_of(request)
            if fields is None:
                return refused_form(request)
            return await run_in_threadpool(guarded(lambda req: handler(req, fields)), request)
        return run

    def _annotate(request, fields: dict) -> Response:
        item_id = request.path_params["item"]
        try:
            text = inputs.text_field(fields, "text")
        except ValueError as error:
            return item_view(request, 400, error=("annotate", str(error)), form=fields)
        if text is None:
            return item_view(request, 400, error=("annotate", "write something to save"), form=fields)
        answer = pinboard.annotate(item_id, text, pinboard.now().isoformat())
        if answer.exit_code != 0:
            return item_view(request, 422, error=("annotate", inputs.refusal(answer.document)), form=fields)
        note = answer.document["annotation"]  # the receipt of `foldctl annotate`: {ok, annotation: id, event_seq}
        return RedirectResponse(f"/item/{item_id}?done=annotated&note={note}#annotations", status_code=303)

    def _feedback(request, fields: dict) -> Response:
        item_id = request.path_params["item"]
        meaning = fields.get("meaning", "")
        now = pinboard.now()
        try:
            if meaning not in inputs.FEEDBACK_MEANINGS:
                raise ValueError("choose what the feedback means: " + ", ".join(inputs.FEEDBACK_MEANINGS))
            value = inputs.text_field(fields, "value")
            until = None
            if meaning == "snooze":
                picked = fields.get("until_at", "")
                choice = "custom" if picked else fields.get("until_choice", "")  # a picked time wins
                until = inputs.resolve_until(choice, picked, now, pinboard.timezone)
            document, code = pinboard.feedback(item_id, meaning, value, until, now.isoformat())
        except (ValueError, UsageError) as error:
            return item_view(request, 400, error=("feedback", str(error)), form=fields)
        if code != 0:
            return item_view(request, 422, error=("feedback", inputs.refusal(document)), form=fields)
        target = f"/item/{item_id}?done=feedback&meaning={meaning}"
        if until is not None:
            target += "&until=" + until.replace("+", "%2B")
        return RedirectResponse(target + "#feedback", status_code=303)

    def changes_page(request):
        state = pinboard.state()
        given = request.query_params.get("since")
        seen = _seen(request)
        if given is not None:
            if not given.isdigit() or len(given) > 12:
                return trouble(request, 400, "Not an event number", "since must be a whole number ≥ 0.")
            since = min(int(given), state.event_seq)
        elif seen is not None:
            since = min(seen, state.event_seq)
        else:
            since = max(0, state.event_seq - FIRST_VISIT_RECORDS)
        listed = changes(pinboard.history(since=since))
        response = page(request, "changes.html.j2", changes=listed, since=since, first=seen is None and given is None,
                        state=state, budget=state.budget)
        response.set_cookie(SEEN_COOKIE, str(state.event_seq), max_age=YEAR, httponly=True, samesite="strict",
                            path="/")
        return response

    def login_form(request):
        if token is None:
            return RedirectResponse("/", status_code=303)
        return page(request, "login.html.j2", 401 if request.method == "GET" else 200)

    async def login(request):
        if token is None:
            return RedirectResponse("/", status_code=303)
        fields = await form_of(request)
        if fields is None:
            return refused_form(request)
        import hmac

        if hmac.compare_digest(fields.get("token", "").encode("utf-8"), token.encode("utf-8")):
            response = RedirectResponse("/", status_code=303)
            response.set_cookie(AUTH_COOKIE, login_value(token), httponly=True, samesite="strict", path="/")
            return response
        return page(request, "login.html.j2", 401, error="That is not the token.")

    def stylesheet(request):
        return Response(css, media_type="text/css; charset=utf-8", headers={"cache-control": "max-age=300"})

    async def not_found(request, exc):
        if exc.status_code == 405:
            return trouble(request, 405, "Not allowed", "This address does not take that method.")
        return trouble(request, exc.status_code, "Not found", "There is no page at this address.")

    routes = [
        Route("/", guarded(board_page)),
        Route("/item/{item}", guarded(item_view)),
        Route("/item/{item}/annotate", posted(_annotate), methods=["POST"]),
        Route("/item/{item}/feedback", posted(_feedback), methods=["POST"]),
        Route("/changes", guarded(changes_page)),
        Route("/login", login_form, methods=["GET"]),
        Route("/login", login, methods=["POST"]),
        Route("/static/pinboard.css", stylesheet),
        Route("/favicon.ico", lambda request: Response(status_code=204)),
    ]
    app = Starlette(routes=routes, exception_handlers={HTTPException: not_found})

    async def denied(scope, receive, send) -> None:
        from starlette.requests import Request

        response = page(Request(scope, receive), "login.html.j2", 401)
        response.headers["www-authenticate"] = 'Bearer realm="fold-pinboard"'
        await response(scope, receive, send)

    guard = Guard(app, token=token, loopback=loopback, denied=denied)
    guard.pinboard = pinboard
    return guard


def _seen(request) -> int | None:
    value = cookies_of(request.scope).get(SEEN_COOKIE)
    return int(value) if value is not None and value.isdigit() and len(value) <= 12 else None


def _notice(request, data: dict) -> str | None:
    """What the page after a POST says happened and what happens next (checked against the state)."""
    params = request.query_params
    done = params.get("done")
    if done == "annotated":
        note = params.get("note", "")
        if any(entry["id"] == note for entry in data["view"]["annotations"]):
            return inputs.annotation_notice(note)
    elif done == "feedback" and params.get("meaning") in inputs.FEEDBACK_MEANINGS:
        until = params.get("until")
        from fold_core.timefmt import parse_instant

        if params["meaning"] == "snooze" and (until is None or parse_instant(until) is None):
            return None
        return inputs.feedback_notice(params["meaning"], until)
    return None


def _environment():
    import jinja2

    from fold_consumers.overview_page import TEMPLATES, _px

    environment = jinja2.Environment(loader=jinja2.FileSystemLoader([HERE / "templates", TEMPLATES]),
                                     autoescape=True, undefined=jinja2.StrictUndefined)
    environment.filters["px"] = _px
    return environment


def _stylesheet() -> str:
    from fold_consumers.overview_page import stylesheet

    return stylesheet(960) + "\n" + (HERE / "static" / "pinboard.css").read_text(encoding="utf-8")

