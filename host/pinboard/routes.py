"""The Pinboard's pages and forms: one method per route (the app is built in ``app.create_app``).

Every page is rendered from the tool's own templates; a store failure
becomes a page saying the outcome is unknown, never a traceback; a form
counts only with its CSRF token and from this origin, and its POST answers
with a redirect (post/redirect/get: a reload never sends twice).
"""

from __future__ import annotations

import hmac
import json
from urllib.parse import urlsplit

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from fold_host.overview.layout import KINDS, WEIGHTS
from fold_core.errors import StoreError, UsageError
from fold_core.timefmt import parse_instant
from fold_host.pinboard import inputs
from fold_host.pinboard.board import CANVASES, ITEM_ID, BoardQuery
from fold_host.pinboard.decisions import frame_changes, frame_page, frame_seen
from fold_host.pinboard.fragments import Fragments
from fold_host.pinboard.pages import changes, item_history, item_page, source_link
from fold_host.web.security import (AUTH_COOKIE, CSRF_COOKIE, Csrf, LoginThrottle, client_address, cookies_of,
                                    login_value)

__all__ = ["Pages"]

SEEN_COOKIE = "fold_seen"
FIRST_VISIT_RECORDS = 20  # no cookie yet: the changes page shows the latest records
HISTORY_WINDOW = 2000  # events whose records the item page reads unless asked for the whole history
YEAR = 365 * 24 * 3600
# The changes page in words: what happened to an item, and who did it.
OP_WORDS = {"created": "added", "updated": "changed", "restored": "brought back", "withdrawn": "took down",
            "merged": "merged away", "annotation": "notes left", "acknowledged": "notes read"}
ACTOR_WORDS = {"agent": "The editor", "user": "You", "host": "Fold"}


class Pages:
    """The handlers over one ``Pinboard`` (the store), its templates and stylesheet."""

    def __init__(self, pinboard, templates, css: str, *, token: str | None) -> None:
        self.pinboard, self.templates, self.css, self.token = pinboard, templates, css, token
        self.t = pinboard.words
        self.csrf = Csrf()
        self.fragments = Fragments(templates, card_href="/item/")
        self.throttle: LoginThrottle | None = None  # the Guard's: the login form's wrong tokens count with its own

    # -- rendering ------------------------------------------------------------

    def page(self, request, name: str, status: int = 200, **context) -> Response:
        kept = cookies_of(request.scope).get(CSRF_COOKIE)
        nonce = kept if kept is not None and 16 <= len(kept) <= 64 else None
        fresh = nonce is None
        if nonce is None:
            nonce = self.csrf.new_nonce()
        html = self.templates.get_template(name).render(csrf=self.csrf.token(nonce), path=request.url.path,
                                                        **context)
        response = HTMLResponse(html, status_code=status)
        if fresh:
            response.set_cookie(CSRF_COOKIE, nonce, httponly=True, samesite="strict", path="/")
        return response

    def board_body(self, drawn, query: BoardQuery, budget: int) -> str:
        """The board's rectangles and lists (box and entry markup kept by ``self.fragments``)."""
        return self.templates.get_template("board_body.html.j2").render(
            board=drawn, query=query, budget=budget, details=frozenset(), card_href="/item/",
            fragments=self.fragments)

    def trouble(self, request, status: int, title: str, text: str, **values) -> Response:
        """A page saying what went wrong (``title`` and the ``text`` template in the Pinboard's language)."""
        return self.page(request, "message.html.j2", status, title=self.t(title), text=self.t(text, **values))

    def guarded(self, handler):
        """Store failures become a page that says the outcome is unknown, never a traceback."""
        def run(request):
            try:
                return handler(request)
            except StoreError as error:
                return self.trouble(request, 503, "The store could not be read",
                                    "{error} — nothing is known about the last action: reload to see its outcome.",
                                    error=error)
        return run

    # -- pages ------------------------------------------------------------------

    def board_page(self, request):
        try:
            query = BoardQuery.parse(request.query_params)
        except ValueError as error:
            return self.trouble(request, 400, "Not a filter the board knows", str(error))
        pinboard = self.pinboard
        state = pinboard.state()
        if query.item is not None and state.items.get(query.item, {}).get("status") != "active":
            return self.trouble(request, 404, "No such active item", "{item} is not an active item.", item=query.item)
        html = pinboard.board_html(state, query, lambda drawn: self.board_body(drawn, query, state.budget))
        return self.page(request, "board.html.j2", body=html, query=query, state=state, seen=_seen(request),
                         weights=WEIGHTS, kinds=KINDS, now=pinboard.now().isoformat())

    def item_view(self, request, status: int = 200, **extra) -> Response:
        item_id = request.path_params["item"]
        if not ITEM_ID.match(item_id):
            return self.trouble(request, 404, "No such item", "Item ids are [a-z0-9-], 1–64 characters.")
        pinboard = self.pinboard
        state = pinboard.state()
        now = pinboard.now()
        data = item_page(state, now.isoformat(), item_id, CANVASES)
        if data is None:
            return self.trouble(request, 404, "No such item", "No item was ever called {item}.", item=item_id)
        # The item's records in the last HISTORY_WINDOW events (found by bisection, read in
        # bounded time); ?history=all reads the whole log.
        since = 0 if request.query_params.get("history") == "all" else max(0, state.event_seq - HISTORY_WINDOW)
        history, mentions = item_history(pinboard.history(item=item_id, since=since), item_id)
        frame = data["view"].get("decision") if data["status"] == "active" else None
        answer = pinboard.answer_of(item_id, frame["digest"]) if frame else None
        cited = pinboard.cited([source["ref"][len("event:"):] for source in data["sources"]
                                if source["observation"] is not None])
        for source in data["sources"]:
            source["cited"] = cited.get(source["ref"][len("event:"):]) if source["observation"] else None
        notice = extra.pop("notice", None) or _notice(request, data, self.t, pinboard.human_time())
        return self.page(request, "item.html.j2", status, item=data, history=history, mentions=mentions,
                         frame=frame_page(frame) if frame else None, answer=answer, op_words=OP_WORDS,
                         actor_words=ACTOR_WORDS,
                         stale=extra.pop("stale", None),
                         history_since=since, budget=state.budget, details=frozenset(), card_href="/item/",
                         notice=notice, quick=inputs.QUICK_UNTIL, meanings=inputs.FEEDBACK_MEANINGS,
                         timezone=pinboard.timezone, picker_min=now.strftime("%Y-%m-%dT%H:%M"),
                         form=extra.pop("form", {}), **extra)

    def observation_view(self, request):
        wanted = request.path_params["observation"]
        detail = self.pinboard.observation(wanted) if 0 < len(wanted) <= 512 else None
        if detail is None:
            return self.trouble(request, 404, "No such observation",
                                "This host's inbox holds no observation with that id.")
        meta = detail["observation"].get("meta")
        back = request.query_params.get("item")
        return self.page(request, "observation.html.j2", detail=detail,
                         url_href=source_link(detail["observation"].get("url")),
                         meta=json.dumps(meta, ensure_ascii=False, indent=1) if meta else "",
                         linkable={item for entry in detail["dispositions"] for item in entry.get("related") or ()
                                   if isinstance(item, str) and ITEM_ID.match(item)},
                         back=back if back is not None and ITEM_ID.match(back) else None)

    def decisions_page(self, request):
        """The open decision frames, soonest ``decide_by`` first (``foldctl decisions --status open``)."""
        pinboard = self.pinboard
        state = pinboard.state()
        listed = pinboard.decisions(pinboard.now().isoformat(), status="open")
        return self.page(request, "decisions.html.j2", decisions=[
            {**entry, "frame": frame_page(pinboard.state_frame(entry["item"]) or entry)} for entry in listed],
            state=state)

    def changes_page(self, request):
        state = self.pinboard.state()
        given = request.query_params.get("since")
        seen = _seen(request)
        if given is not None:
            if not given.isdigit() or len(given) > 12:
                return self.trouble(request, 400, "Not an event number", "since must be a whole number ≥ 0.")
            since = min(int(given), state.event_seq)
        elif seen is not None:
            since = min(seen, state.event_seq)
        else:
            since = max(0, state.event_seq - FIRST_VISIT_RECORDS)
        listed = changes(self.pinboard.history(since=since))
        response = self.page(request, "changes.html.j2", changes=listed, since=since, op_words=OP_WORDS,
                             actor_words=ACTOR_WORDS,
                             first=seen is None and given is None, state=state, budget=state.budget)
        response.set_cookie(SEEN_COOKIE, str(state.event_seq), max_age=YEAR, httponly=True, samesite="strict",
                            path="/")
        return response

    def stylesheet(self, request):
        return Response(self.css, media_type="text/css; charset=utf-8", headers={"cache-control": "max-age=300"})

    async def not_found(self, request, exc):
        if exc.status_code == 405:
            return self.trouble(request, 405, "Not allowed", "This address does not take that method.")
        return self.trouble(request, exc.status_code, "Not found", "There is no page at this address.")

    # -- forms ------------------------------------------------------------------

    async def form_of(self, request) -> dict | None:
        """The form's fields when its CSRF token matches its cookie (and it comes from this origin)."""
        origin = request.headers.get("origin")
        if origin not in (None, "null") and urlsplit(origin).netloc != request.headers.get("host"):
            return None  # another site's page (the scheme may differ behind a TLS proxy; the host may not)
        try:
            fields = inputs.parse_form(await request.body())
        except ValueError:
            return None
        nonce = cookies_of(request.scope).get(CSRF_COOKIE)
        return fields if self.csrf.valid(nonce, fields.get("csrf")) else None

    def refused_form(self, request) -> Response:
        return self.trouble(request, 403, "This form was refused",
                            "The form's security token is missing or does not match (a form from another page,"
                            " or an old one). Reload the page and send it again; nothing was saved.")

    def posted(self, handler):
        """A form's POST: refused without its CSRF token; the handler runs in a worker thread."""
        async def run(request):
            fields = await self.form_of(request)
            if fields is None:
                return self.refused_form(request)
            return await run_in_threadpool(self.guarded(lambda req: handler(req, fields)), request)
        return run

    def annotate(self, request, fields: dict) -> Response:
        item_id = request.path_params["item"]
        try:
            text = inputs.text_field(fields, "text")
        except ValueError as error:
            return self.item_view(request, 400, error=("annotate", self.t(str(error))), form=fields)
        if text is None:
            return self.item_view(request, 400, error=("annotate", self.t("write something to save")), form=fields)
        answer = self.pinboard.annotate(item_id, text, self.pinboard.now().isoformat())
        if answer.exit_code != 0:
            return self.item_view(request, 422, error=("annotate", inputs.refusal(answer.document)), form=fields)
        note = answer.document["annotation"]  # the receipt of `foldctl annotate`: {ok, annotation: id, event_seq}
        return RedirectResponse(f"/item/{item_id}?done=annotated&note={note}#annotations", status_code=303)

    def feedback(self, request, fields: dict) -> Response:
        item_id = request.path_params["item"]
        meaning = fields.get("meaning", "")
        pinboard = self.pinboard
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
            return self.item_view(request, 400, error=("feedback", self.t(str(error))), form=fields)
        if code != 0:
            return self.item_view(request, 422, error=("feedback", inputs.refusal(document)), form=fields)
        target = f"/item/{item_id}?done=feedback&meaning={meaning}"
        if until is not None:
            target += "&until=" + until.replace("+", "%2B")
        return RedirectResponse(target + "#feedback", status_code=303)

    def decide(self, request, fields: dict) -> Response:
        """One click on an option: ``save_decision`` bound to the digest the page showed."""
        item_id = request.path_params["item"]
        pinboard = self.pinboard
        option, digest = fields.get("option", ""), fields.get("digest") or None
        try:
            note = inputs.text_field(fields, "note")
            if not option or len(option) > inputs.FIELD_LIMIT or (digest is not None and len(digest) > 64):
                raise ValueError("choose one of the options")
        except ValueError as error:
            return self.item_view(request, 400, error=("decide", self.t(str(error))))
        document, code = pinboard.decide(item_id, option, digest, note, pinboard.now().isoformat())
        if code == 0:
            return RedirectResponse(f"/item/{item_id}?done=decided&option={option}#decision", status_code=303)
        first = (document.get("errors") or [{}])[0]
        if first.get("code") == "stale_decision":
            # Nothing was stored: say what changed since the page was drawn, beside the new frame.
            seen = frame_seen(pinboard.history(item=item_id), item_id, digest or "")
            current = pinboard.state_frame(item_id)
            when = pinboard.human_time()
            changed = [self.t(template, **values) for template, values in frame_changes(seen, current or {}, when)]
            return self.item_view(request, 409, stale=changed)
        return self.item_view(request, 422, error=("decide", inputs.refusal(document)))

    # -- the token --------------------------------------------------------------

    def login_form(self, request):
        if self.token is None:
            return RedirectResponse("/", status_code=303)
        return self.page(request, "login.html.j2", 401 if request.method == "GET" else 200)

    async def login(self, request):
        if self.token is None:
            return RedirectResponse("/", status_code=303)
        fields = await self.form_of(request)
        if fields is None:
            return self.refused_form(request)
        if hmac.compare_digest(fields.get("token", "").encode("utf-8"), self.token.encode("utf-8")):
            response = RedirectResponse("/", status_code=303)
            response.set_cookie(AUTH_COOKIE, login_value(self.token), httponly=True, samesite="strict", path="/")
            return response
        if self.throttle is not None:
            self.throttle.wrong(client_address(request.scope))
        return self.page(request, "login.html.j2", 401, error=self.t("That is not the token."))

    async def denied(self, scope, receive, send) -> None:
        """The answer to a request without the token (the ``Guard`` calls it)."""
        response = self.page(Request(scope, receive), "login.html.j2", 401)
        response.headers["www-authenticate"] = 'Bearer realm="fold-pinboard"'
        await response(scope, receive, send)


def _seen(request) -> int | None:
    value = cookies_of(request.scope).get(SEEN_COOKIE)
    return int(value) if value is not None and value.isdigit() and len(value) <= 12 else None


def _notice(request, data: dict, t, when) -> str | None:
    """What the page after a POST says happened and what happens next (checked against the state)."""
    params = request.query_params
    done = params.get("done")
    if done == "annotated":
        note = params.get("note", "")
        if any(entry["id"] == note for entry in data["view"]["annotations"]):
            return inputs.annotation_notice(note, t)
    elif done == "decided":
        frame = data["view"].get("decision") or {}
        label = next((o["label"] for o in frame.get("options") or () if o["id"] == params.get("option")), None)
        if label is not None:
            return t("You chose “{label}”. Your answer is saved for the editor, who moves the item on in its next "
                     "cycle; whoever asked hears it too. You can still change your mind here.", label=label)
    elif done == "feedback" and params.get("meaning") in inputs.FEEDBACK_MEANINGS:
        until = params.get("until")
        if params["meaning"] == "snooze" and (until is None or parse_instant(until) is None):
            return None
        return inputs.feedback_notice(params["meaning"], until and when(until), t)
    return None
