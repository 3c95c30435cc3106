"""The visual overview: boxes → HTML → Chromium → PNG + render.json (contract §13).

``render_overview(overview, out)`` draws an ``Overview`` (``layout``) into a
*new* run directory under ``out`` — never over an earlier image:

    out/overview-e<event_seq>-<UTC time>-<random>/
        overview.png    the full page, from Chromium's screenshot
        render.json     scope, omitted ids, source_event_seq, revision, now, every
                        box's geometry and its measured DOM box, overflow findings
        overview.html   the page itself (``html=True``)
        error.txt, error.json   instead of the three above when rendering failed

A run that fails before rendering (the store cannot be read, ``--item`` is not
active) leaves ``out/overview-failed-<UTC time>-<random>/`` with the two
explanation files (``explain_failure``).

The page is rendered once; when the browser finds card text that does not fit
(the card keeps its area: text never enlarges it), the page is rendered again
with those cards marked and listed by id in a detail list below the
rectangles, and measured again. ``render.json`` holds what the final page
measured. Any request the page tries to make fails the render: the page is the
tool's own and loads nothing.
"""

from __future__ import annotations

import json
import os
import secrets
import time
from datetime import datetime, timezone
from pathlib import Path

from fold_host.overview.browser import Browser, RenderFailed, first_line
from fold_host.overview.layout import Overview
from fold_host.overview.page import PAGE_MARGIN, page_html, page_width
from fold_core.errors import FoldError, UsageError

__all__ = ["AREA_TOLERANCE", "SCHEMA", "explain_failure", "new_run_dir", "render_document", "render_overview"]

SCHEMA = "fold.overview/1"
AREA_TOLERANCE = 0.02


def new_run_dir(out: str | os.PathLike, event_seq: int | None) -> Path:
    """A directory for this run's files that did not exist before (``overview-failed-…`` without a capture)."""
    root = Path(out)
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise UsageError(f"--out {root}: cannot create the directory ({error.strerror or error})") from None
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    for _ in range(8):
        label = "failed" if event_seq is None else f"e{event_seq}"
        path = root / f"overview-{label}-{stamp}-{secrets.token_hex(3)}"
        try:
            path.mkdir()
            return path
        except FileExistsError:
            continue
        except OSError as error:
            raise UsageError(f"--out {root}: cannot create a run directory ({error.strerror or error})") from None
    raise UsageError(f"--out {root}: could not find a new run directory name")


def render_overview(overview: Overview, out: str | os.PathLike, *, browser: Browser | None = None,
                    executable: str | None = None, html: bool = False, language: str = "en",
                    timezone: str | None = None) -> dict:
    """Render into a new run directory; returns the command's answer. Failures write error files and raise."""
    run_dir = new_run_dir(out, overview.source_event_seq)
    try:
        if browser is not None:
            return _render(overview, run_dir, browser, html, (language, timezone))
        with Browser(executable) as own:
            return _render(overview, run_dir, own, html, (language, timezone))
    except FoldError as error:
        failure = error
    except Exception as error:  # Playwright errors, timeouts, a crashed browser
        failure = RenderFailed(f"rendering failed: {type(error).__name__}: {first_line(error)}")
    explanation = _write_failure(run_dir, failure.to_error(), str(failure))
    raise type(failure)(f"{failure}; no image was written (explained in {explanation})") from None


def explain_failure(out: str | os.PathLike, error: dict, message: str) -> Path:
    """A new run directory holding only the explanation of a run that failed before rendering."""
    return _write_failure(new_run_dir(out, None), error, message)


def _render(overview: Overview, run_dir: Path, browser: Browser, want_html: bool,
            reader: tuple[str, str | None] = ("en", None)) -> dict:
    started = time.perf_counter()
    width = page_width(overview) + 2 * PAGE_MARGIN
    # One nonce for both passes: the second set_content keeps the first page's CSP.
    nonce = secrets.token_hex(16)
    with browser.page(width) as run:
        page = page_html(overview, nonce=nonce, language=reader[0], timezone=reader[1])
        fonts = run.load(page)
        measured = run.measure()
        details = {entry["id"] for entry in measured["overflow"] if entry["id"]}
        if details:
            page = page_html(overview, details=details, nonce=nonce, language=reader[0], timezone=reader[1])
            fonts = run.load(page)
            measured = run.measure()
        png = run.screenshot()
        requests = list(run.requests)
    if requests:
        raise RenderFailed(f"the page tried to make {len(requests)} request(s), e.g. {requests[0]['url']!r};"
                           " nothing was written as an image")
    document = render_document(overview, measured, details)
    document["fonts"] = fonts
    document["requests"] = requests
    document["browser"] = {"executable": browser.executable, "version": browser.version}
    document["timing"] = {"render_ms": round((time.perf_counter() - started) * 1000, 1)}
    document["files"] = {"png": "overview.png", "html": "overview.html" if want_html else None}
    missing_fonts = [face for face in fonts if face["status"] != "loaded"]
    if missing_fonts or not fonts:
        document["findings"].append({"code": "font_missing", "message":
                                     "the Noto Sans CJK faces did not load (install fonts-noto-cjk);"
                                     " the text fell back to another font"})
    _write(run_dir / "overview.png", png)
    if want_html:
        _write(run_dir / "overview.html", page.encode("utf-8"))
    _write(run_dir / "render.json", (json.dumps(document, ensure_ascii=False, indent=1) + "\n").encode("utf-8"))
    return {
        "ok": True, "dir": str(run_dir), "png": str(run_dir / "overview.png"),
        "render": str(run_dir / "render.json"), "html": str(run_dir / "overview.html") if want_html else None,
        "source_event_seq": overview.source_event_seq, "revision": overview.revision, "now": overview.now,
        "layers": len(overview.layers), "omitted": len(overview.omitted),
        "overflow": [entry["id"] for entry in document["overflow"]],
        "findings": [finding["code"] for finding in document["findings"]],
    }


def render_document(overview: Overview, measured: dict, details: set[str]) -> dict:
    """render.json: the overview's geometry joined with the boxes measured in the page."""
    document = {"schema": SCHEMA, "ok": True, **overview.to_json()}
    found = {entry["box"]: entry for entry in measured["boxes"]}
    worst = 0.0
    for layer, data in zip(overview.layers, document["layers"]):
        frame = found.get(layer.key)
        data["measured"] = _box(frame)
        layer_area = frame["w"] * frame["h"] if frame else 0.0
        for prefix, entries in (("", data["boxes"]), ("g", data["gone"])):
            for index, entry in enumerate(entries):
                seen = found.get(f"{layer.key}-{prefix}{index}")
                entry["measured"] = _box(seen)
                if seen is None or layer_area <= 0:
                    worst = float("inf")
                    continue
                expected = entry["share"] / overview.budget
                error = abs(seen["w"] * seen["h"] / layer_area - expected) / expected
                entry["measured"]["area_error"] = round(error, 6)
                worst = max(worst, error)
        if layer.gone:
            data["gone_measured"] = _box(found.get(f"{layer.key}-gone"))
    where = {box_id: layer.parent for layer in overview.layers for box_id in
             (box.id for box in (*layer.boxes, *layer.gone)) if box_id}
    document["overflow"] = [
        {"id": entry["id"], "layer": where.get(entry["id"]), "fields_cut": entry["fields_cut"],
         "content": entry["content"], "visible": entry["visible"],
         "detail": f"detail-{entry['id']}" if entry["id"] in details else None}
        for entry in measured["overflow"]]
    document["areas"] = {"tolerance": AREA_TOLERANCE, "max_error": None if worst == float("inf") else round(worst, 6),
                         "ok": worst <= AREA_TOLERANCE}
    document["page"] = {"width": measured["page"][0], "height": measured["page"][1]}
    document["findings"] = []
    if not document["areas"]["ok"]:
        document["findings"].append({"code": "area_mismatch", "message":
                                     f"a measured area is off its share by more than {AREA_TOLERANCE:.0%}"})
    unlinked = [entry["id"] for entry in document["overflow"] if entry["detail"] is None]
    if unlinked:
        document["findings"].append({"code": "overflow_unlinked", "ids": unlinked, "message":
                                     "text does not fit and is not in the detail list"})
    return document


def _box(entry: dict | None) -> dict | None:
    if entry is None:
        return None
    return {"x": entry["x"], "y": entry["y"], "w": entry["w"], "h": entry["h"], "area": entry["w"] * entry["h"]}


def _write(path: Path, data: bytes) -> None:
    temporary = path.with_name(path.name + ".part")
    with open(temporary, "wb") as file:
        file.write(data)
        file.flush()
        os.fsync(file.fileno())
    os.replace(temporary, path)


def _write_failure(run_dir: Path, error: dict, message: str) -> Path:
    """The explanation of a failed run, in place of the image (best effort: the error is raised anyway)."""
    record = {"schema": SCHEMA, "ok": False, "error": error,
              "at": datetime.now(timezone.utc).isoformat(timespec="seconds")}
    try:
        _write(run_dir / "error.json", (json.dumps(record, ensure_ascii=False, indent=1) + "\n").encode("utf-8"))
        _write(run_dir / "error.txt", (f"foldctl overview failed: no image was written.\n{message}\n").encode("utf-8"))
    except OSError:
        pass
    return run_dir / "error.txt"
