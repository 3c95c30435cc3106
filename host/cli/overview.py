"""``foldctl overview`` (contract §13): the visual overview as a PNG and render.json.

Capture once, under the store's shared lock: the state at the current
event_seq c, the baseline state at ``--diff-from`` b (a replay of the log up to
b), the revision, and ``now``. The lock is released before anything is drawn;
the picture is made from that immutable capture (``fold_host.overview.layout``),
so a commit during the screenshot cannot leak into it, and the picture says
which event it shows.

Exit codes: 0 written; 1 ``--item`` is not an active item (the §4.2 shape, as
``foldctl state --item``); 2 usage error; 3 store unavailable, or no image
could be made (Chromium or Playwright missing, the render failed); 4 store
corrupt. Every failure after the command line was understood leaves an
explanation (error.txt, error.json) in a new run directory under --out, and
no PNG.
Nothing of the layout, Jinja2 or Playwright is imported unless this command runs.
"""

from __future__ import annotations

import argparse
import os

from fold_core.cli.common import add_format, add_store, config_given, explain, non_negative, resolve_now, resolve_store
from fold_core.errors import StoreError, UsageError

__all__ = ["register"]

WEIGHTS = ("critical", "high", "normal", "low", "trace")


def register(commands) -> None:
    overview = commands.add_parser(
        "overview",
        help="the visual overview: budget rectangles as a PNG and render.json",
        description="Draw each layer as a budget rectangle (card area = share/budget) through headless"
        " Chromium into a new run directory under --out: overview.png and render.json.",
    )
    add_store(overview)
    overview.add_argument("--out", required=True, metavar="DIR", help="where run directories are created")
    overview.add_argument("--now", help="the instant to project durations to (default: the current clock)")
    overview.add_argument("--item", help="draw this active item's children layer instead of the root layer")
    overview.add_argument("--depth", type=_positive, help="layer levels to draw (1 = only the first rectangle)")
    overview.add_argument("--diff-from", dest="diff_from", type=non_negative, metavar="SEQ",
                          help="mark changes since event SEQ; withdrawn and merged items are drawn outside")
    overview.add_argument("--min-weight", dest="min_weight", choices=WEIGHTS,
                          help="draw items of this weight or above; the rest is one 'not shown' area")
    overview.add_argument("--kinds", nargs="+", metavar="KIND", help="draw only these kinds (space or comma separated)")
    overview.add_argument("--fields", nargs="+", metavar="FIELD",
                          help="card text: title summary weight kind share due stale age"
                          " (default: title summary weight kind share due; the id is always shown)")
    overview.add_argument("--html", action="store_true", help="also write the page as overview.html")
    overview.add_argument("--chromium", metavar="PATH", help="the Chromium executable (else $FOLD_CHROMIUM,"
                          " else /usr/bin/chromium)")
    add_format(overview)
    overview.set_defaults(run=run_overview, render_text=_text)


def _positive(text: str) -> int:
    value = non_negative(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number ≥ 1, got {text!r}")
    return value


def _words(values: list[str] | None) -> tuple[str, ...] | None:
    if values is None:
        return None
    return tuple(word for value in values for word in value.replace(",", " ").split())


def run_overview(args: argparse.Namespace) -> tuple[dict, int]:
    from fold_host.overview import layout

    now = resolve_now(args.now)
    path = resolve_store(args.store, url_ok=True)
    _check_out(args.out, path)
    fields = _words(args.fields)
    try:
        query = layout.Query(item=args.item, depth=args.depth, min_weight=args.min_weight,
                             kinds=_words(args.kinds), fields=fields if fields is not None else layout.DEFAULT_FIELDS)
    except ValueError as error:
        raise UsageError(f"foldctl overview: {error}") from None
    try:
        state, baseline = _capture(path, args.diff_from)
    except StoreError as error:
        _explain(args.out, error.to_error(), str(error))
        raise
    if args.item is not None:
        from fold_core.kernel.outcome import Rejected
        from fold_core.kernel.view import state_document

        check = state_document(state, now, item=args.item, depth=0, not_active=0)
        if isinstance(check, Rejected):
            _explain(args.out, check.document["errors"][0], check.document["errors"][0]["message"])
            return check.document, 1
    shot = layout.capture(state, now=now, baseline=baseline)
    drawn = layout.layout(shot, query)

    from fold_core.configfile import view_settings
    from fold_host.overview.render import render_overview

    language, zone = view_settings(config_given())  # the labels and the time in [host] language and timezone
    return render_overview(drawn, args.out, executable=args.chromium, html=args.html, language=language,
                           timezone=zone), 0


def _capture(path: str, diff_from: int | None):
    """The state at c and at b, read under one shared lock; nothing is drawn while it is held."""
    from itertools import takewhile

    from fold_core.state import replay
    from fold_core.store.locate import open_store

    with open_store(path).recorder.session(write=False) as session:
        state = session.state
        if diff_from is None:
            return state, None
        if diff_from > state.event_seq:
            raise UsageError(f"--diff-from {diff_from} is after the last event ({state.event_seq})")
        records = takewhile(lambda record: record["event_seq"] <= diff_from, session.records(0))
        return state, replay(records, budget=state.budget)


def _explain(out: str, error: dict, message: str) -> None:
    """A failure before any rendering still leaves its explanation under --out (never an old image)."""
    from fold_host.overview.render import explain_failure

    try:
        where = explain_failure(out, error, message)
    except UsageError:  # --out itself cannot be written: the answer on stdout/stderr is all there is
        return
    explain(f"foldctl overview: no image was written (explained in {where})")


def _check_out(out: str, store: str) -> None:
    """Images go to their own directory, never into the store."""
    from fold_core.store.location import is_url

    if is_url(store):
        return
    target, store = os.path.realpath(out), os.path.realpath(store)
    if target == store or target.startswith(store + os.sep):
        raise UsageError(f"--out {out} is inside the store {store}: choose a directory of its own")


def _text(document: dict) -> str:
    if document.get("ok") is False:
        from fold_core.cli.textview import render_answer

        return render_answer("overview", document)
    lines = [f"overview of event {document['source_event_seq']} (revision {document['revision']}) written to"
             f" {document['dir']}", f"    {document['png']}", f"    {document['render']}"]
    if document["overflow"]:
        lines.append(f"    text that does not fit (listed under details): {', '.join(document['overflow'])}")
    for finding in document["findings"]:
        lines.append(f"    finding: {finding}")
    return "\n".join(lines) + "\n"
