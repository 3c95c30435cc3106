"""One host per store directory: the open window and its commit intent, and leases (``HostDB`` part).

One host works on a store directory (``hostlock``), so there is at most one
open window: it and its commit intent are two ``host_meta`` facts, and every
lease is granted at once, every consumer's turn is this host's, no table of
hosts is kept. The PostgreSQL host database, shared by several
hosts, keeps one claimed row per window and real leases instead
(``pg.shared``); ``fold_host.cycle.windows``, the poller and the delivery use the
same methods on both.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from fold_host.hostdb.part import TablePart
from fold_host.hostdb.protocol import Link

__all__ = ["INTENT_KEY", "OneHost", "WINDOW_KEY"]

WINDOW_KEY, INTENT_KEY = "open_window", "commit_intent"


class OneHost(TablePart):
    """``open_window`` and ``commit_intent`` in ``host_meta``; leases always granted."""

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

    def open_windows(self) -> list[tuple[dict, dict | None]]:
        """Every open window with its kept answer (here at most one): what a move carries over."""
        window = self.meta(WINDOW_KEY)
        return [(window, self.meta(INTENT_KEY))] if window else []

    def adopt_window(self, db: Link, window: dict, intent: dict | None) -> None:
        """Keep a window moved here from another store (inside the move's transaction)."""
        self._set_meta_in(db, WINDOW_KEY, window)
        if intent is not None:
            self._set_meta_in(db, INTENT_KEY, intent)

    # -- leases: one host holds them all ------------------------------------------------

    def take_lease(self, name: str) -> bool:
        """Whether this host may do the work ``name`` (a source's poll) now: always, alone on a directory."""
        return True

    def release_lease(self, name: str) -> None:
        """Nothing to release."""

    @contextmanager
    def consumer_turn(self, name: str) -> Iterator[dict | None]:
        """The consumer's row for one delivery (alone on a directory: nothing to lock)."""
        yield self.consumer_row(name)

    def hosts(self) -> list[dict]:
        """No rows: the host lock (``hostlock``), not a table, says which host runs on a directory."""
        return []
