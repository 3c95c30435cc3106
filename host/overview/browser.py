"""Headless Chromium through Playwright, for pages that must reach nothing (contract §13 "Safety").

Debian's Chromium (``/usr/bin/chromium``, or ``FOLD_CHROMIUM``, or the caller's
path) — never a browser download. Playwright is imported only here, when a
``Browser`` is entered, so no other command pays for it.

Every page is opened in its own context with JavaScript disabled (the page
is the tool's own and needs none; item text could never run even if escaping
failed), a route that aborts every request, and a log of every request the
page tried to make: the page itself is given as content, so any request at all
is a finding. Pages are measured (``MEASURE``) after ``document.fonts.ready``.

A missing Chromium or Playwright, or a browser that does not start, is
``RendererUnavailable`` (exit 3, and no image).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from fold_core.errors import FoldError

if TYPE_CHECKING:  # the names only: Playwright loads when a browser starts
    from playwright.sync_api import Browser as Chromium, Playwright

__all__ = ["DEFAULT_CHROMIUM", "Browser", "PageRun", "RenderFailed", "RendererUnavailable", "chromium_path",
           "first_line"]

DEFAULT_CHROMIUM = "/usr/bin/chromium"
LAUNCH_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking",
    "--disable-component-update", "--disable-default-apps", "--disable-sync", "--no-first-run",
    "--disable-extensions", "--hide-scrollbars", "--font-render-hinting=none",
]
FONT_FAMILY = "FoldSans"
TIMEOUT_MS = 30_000

# Runs in the page through Playwright (JavaScript is off for the page's own
# content): the box of every element with a data-role, and the text boxes whose
# content is taller or wider than the box, with the lines that are cut.
MEASURE = """() => {
  const sx = window.scrollX, sy = window.scrollY;
  const boxes = [...document.querySelectorAll('[data-role]')].map(el => {
    const r = el.getBoundingClientRect();
    return {box: el.dataset.box, role: el.dataset.role, id: el.dataset.id || null,
            x: r.x + sx, y: r.y + sy, w: r.width, h: r.height};
  });
  const overflow = [];
  for (const el of document.querySelectorAll('[data-text]')) {
    const outer = el.getBoundingClientRect();
    const cut = [...el.querySelectorAll('[data-field]')].filter(line => {
      const r = line.getBoundingClientRect();
      return r.bottom > outer.bottom + 0.5 || r.right > outer.right + 0.5 || line.scrollWidth > line.clientWidth + 1;
    }).map(line => line.dataset.field);
    if (cut.length || el.scrollHeight > el.clientHeight + 1 || el.scrollWidth > el.clientWidth + 1) {
      overflow.push({box: el.dataset.text, id: el.dataset.id || null, fields_cut: cut,
                     content: [el.scrollWidth, el.scrollHeight], visible: [el.clientWidth, el.clientHeight]});
    }
  }
  return {boxes, overflow, page: [document.documentElement.scrollWidth, document.documentElement.scrollHeight]};
}"""

FONTS = """async (family) => {
  await document.fonts.ready;
  for (const weight of ['400', '700']) {
    try { await document.fonts.load(`${weight} 14px ${family}`, '签A'); } catch (e) {}
  }
  return [...document.fonts].filter(f => f.family.replace(/"/g, '') === family)
    .map(f => ({family: f.family.replace(/"/g, ''), weight: String(f.weight), status: f.status}));
}"""


class RendererUnavailable(FoldError):
    """No image can be made here: Chromium or Playwright is missing, or the browser does not start."""

    exit_code = 3

    def to_error(self) -> dict:
        return {"code": "renderer_unavailable", "message": str(self)}


class RenderFailed(FoldError):
    """The browser started but the page could not be rendered or measured."""

    exit_code = 3

    def to_error(self) -> dict:
        return {"code": "render_failed", "message": str(self)}


def chromium_path(given: str | None = None) -> str:
    """The Chromium executable: ``given`` > ``FOLD_CHROMIUM`` > /usr/bin/chromium."""
    path = given or os.environ.get("FOLD_CHROMIUM") or DEFAULT_CHROMIUM
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):
        source = "--chromium" if given else ("FOLD_CHROMIUM" if os.environ.get("FOLD_CHROMIUM") else "the default")
        raise RendererUnavailable(
            f"Chromium not found at {path} ({source}): install the Debian package chromium"
            " (apt-get install chromium fonts-noto-cjk) or point FOLD_CHROMIUM at a Chromium executable"
        )
    return path


class Browser:
    """One headless Chromium, launched on ``__enter__`` and closed on ``__exit__``."""

    def __init__(self, executable: str | None = None) -> None:
        self.executable = chromium_path(executable)
        self._playwright: Playwright | None = None
        self._browser: Chromium | None = None

    def __enter__(self) -> "Browser":
        try:
            from playwright.sync_api import Error, sync_playwright
        except ImportError as error:
            raise RendererUnavailable(f"Playwright is not installed ({error}): pip install playwright") from None
        try:
            self._playwright = sync_playwright().start()
            self._browser = self._playwright.chromium.launch(
                executable_path=self.executable, headless=True, args=LAUNCH_ARGS, timeout=TIMEOUT_MS)
        except Error as error:
            self.close()
            raise RendererUnavailable(f"Chromium at {self.executable} did not start: {first_line(error)}") from None
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def close(self) -> None:
        if self._browser is not None:
            try:
                self._browser.close()
            except Exception:  # the browser may already be gone; nothing to report
                pass
            self._browser = None
        if self._playwright is not None:
            self._playwright.stop()
            self._playwright = None

    @property
    def version(self) -> str:
        if self._browser is None:
            raise RendererUnavailable("Chromium is not running (use the Browser in a with block)")
        return self._browser.version

    def page(self, width: int, height: int = 800, *, javascript: bool = False) -> "PageRun":
        """A fresh page (own context, every request blocked and logged; JavaScript off unless asked)."""
        return PageRun(self._browser, width, height, javascript)


class PageRun:
    """One page in its own context; ``requests`` lists every request it tried to make."""

    def __init__(self, browser, width: int, height: int, javascript: bool = False) -> None:
        self.requests: list[dict] = []
        self._context = browser.new_context(
            viewport={"width": width, "height": height}, device_scale_factor=1, java_script_enabled=javascript,
            offline=True, service_workers="block", accept_downloads=False,
        )
        self._context.route("**/*", self._block)
        self.page = self._context.new_page()
        self.page.set_default_timeout(TIMEOUT_MS)
        self.page.on("request", lambda request: self._log("request", request))

    def _log(self, event: str, request) -> None:
        self.requests.append({"event": event, "url": request.url[:300], "type": request.resource_type})

    def _block(self, route) -> None:
        self._log("blocked", route.request)
        route.abort("blockedbyclient")

    def load(self, html: str) -> list[dict]:
        """Show ``html`` and wait for fonts; returns the state of the tool's font faces."""
        self.page.set_content(html, wait_until="load")
        return self.page.evaluate(FONTS, FONT_FAMILY)

    def measure(self) -> dict:
        return self.page.evaluate(MEASURE)

    def screenshot(self) -> bytes:
        return self.page.screenshot(full_page=True, type="png", animations="disabled", caret="hide")

    def close(self) -> None:
        try:
            self._context.close()
        except Exception:  # closing a context of a crashed browser: nothing to report
            pass

    def __enter__(self) -> "PageRun":
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()


def first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__
