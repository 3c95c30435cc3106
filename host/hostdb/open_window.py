"""The open window and its commit intent in a store directory's host.db (``HostDB`` part).

One host works on a store directory (``hostlock``), so there is at most one
open window: it and its commit intent are two ``host_meta`` facts. The
PostgreSQL host database keeps one row per window instead, claimed by the
host working on it (``pg_windows``); ``fold_host.windows`` uses the same
methods on both.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["INTENT_KEY", "OneOpenWindow", "WINDOW_KEY"]

WINDOW_KEY, INTENT_KEY = "open_window", "commit_intent"


class OneOpenWindow:
    """``open_window`` and ``commit_intent`` in ``host_meta``."""

    def window_row(self) -> dict | None:
        """The window left open (by a cycle that died or failed before settling), or None."""
        return self.meta(WINDOW_KEY)

    def open_window_row(self, data: dict, event_ids: Sequence[str], *, replaces: str | None = None,
                        review: bool = False) -> bool:
        """Keep a new window (``replaces``: the batch_id of the window it takes the place of); True: it is ours."""
        self.set_meta(WINDOW_KEY, data)
        return True

    def window_intent(self, batch_id: str) -> dict | None:
        """The commit intent kept with the open window (None: no answer was kept); its ``batch_id`` says whose."""
        return self.meta(INTENT_KEY)

    def save_window_intent(self, batch_id: str, intent: dict) -> None:
        """Keep the accepted-by-the-host answer before it goes to the store."""
        self.set_meta(INTENT_KEY, intent)

    def drop_window_intent(self, batch_id: str) -> None:
        self.drop_meta(INTENT_KEY)

    def drop_window_row(self, batch_id: str) -> None:
        """Forget the window and its intent (its observations stay as they are)."""
        self.drop_meta(WINDOW_KEY, INTENT_KEY)
