"""What several host command modules share: the store a reading command needs, a command's text view.

Light to import like every command module: what a helper needs is imported
when it runs.
"""

from __future__ import annotations

from collections.abc import Callable

from fold_core.cli.common import resolve_store

__all__ = ["existing_store", "text_view"]


def existing_store(given: str | None) -> str:
    """The store named (a directory or a URL); ``StoreMissing`` (exit 3) when there is none yet."""
    import os

    from fold_core.store.location import is_url
    from fold_core.store.meta import StoreMissing

    location = resolve_store(given, url_ok=True)
    if is_url(location):
        from fold_core.store.locate import open_store

        with open_store(location).recorder.session(write=False):  # StoreMissing when the database has none
            return location
    if not os.path.exists(os.path.join(location, "meta.json")):
        raise StoreMissing(f"no store at {location} (no meta.json): `foldctl tick` or `foldctl init` creates one")
    return location


def text_view(render: Callable[[dict], str]) -> Callable[[dict], str]:
    """A command's text view; a refusal (``ok: false``) reads like every other command's."""
    def text(document: dict) -> str:
        if document.get("ok") is False:
            from fold_core.cli.textview import render_answer

            return render_answer("", document)
        return render(document)
    return text
