"""Sources that say when they have news (IMAP IDLE): one thread per watched source under ``foldctl run``.

``Watcher(instance, adapter, on_news, log, stopping)`` calls the adapter's
``watch(notify, stopping)`` (``fold_core.plugin_api.Adapter``) on a daemon
thread of its own, for as long as the host runs:

* ``notify(why)`` is handed to ``on_news`` — the daemon polls the source
  ``watch_delay`` later, gathering mail that arrives together into one poll;
* a watch that raises (a dropped connection, a refused login, a server that
  went away) is called again after ``backoff(failures, 1 s, 5 min)``
  (``fold_core.bounded``); the count starts again once a watch has stayed
  connected for ``STABLE`` (a minute), so a connection that drops now and
  then reconnects at once, while one dropped soon after each connection (a
  server flooding it, or closing it at once) is retried ever more slowly;
* ``WatchUnsupported`` ends the thread: that source is only polled, and the
  log says why.

The watch never reads or stores anything: the poll does, with its cursor in
host.db, so a message is neither lost nor observed twice whatever happens to
the watching connection; ``every`` stays the safety poll.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from fold_core.bounded import backoff
from fold_core.plugin_api import WatchUnsupported

__all__ = ["RETRY_CAP", "RETRY_FIRST", "STABLE", "Watcher"]

RETRY_FIRST, RETRY_CAP = timedelta(seconds=1), timedelta(minutes=5)
STABLE = 60.0  # seconds a watch stays connected before its failures are forgotten


class Watcher:
    """The thread watching one source (see the module docstring)."""

    def __init__(self, instance: Any, adapter: Any, on_news: Callable[[Any, Any, str], None],
                 log: Callable[..., None], stopping: threading.Event) -> None:
        self.instance, self.adapter = instance, adapter
        self.on_news, self.log, self.stopping = on_news, log, stopping
        self.thread = threading.Thread(target=self._run, name=f"watch-{instance.name}", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def join(self, seconds: float) -> None:
        self.thread.join(seconds)

    def _run(self) -> None:
        name, failures = self.instance.name, 0
        while not self.stopping.is_set():
            connected = threading.Event()
            connected_at = [0.0]

            def notify(why: str) -> None:
                if why == "connected":
                    connected_at[0] = time.monotonic()
                    connected.set()
                    self.log("watch", source=name, status="connected")
                self.on_news(self.instance, self.adapter, why)

            try:
                self.adapter.watch(notify, self.stopping)
                if self.stopping.is_set():
                    return
                error = "the watch ended by itself"
            except WatchUnsupported as unsupported:
                self.log("watch", source=name, status="unsupported", detail=str(unsupported))
                return
            except Exception as failure:  # a dropped connection, a refused login, …: try again later
                if self.stopping.is_set():
                    return
                error = f"{type(failure).__name__}: {failure}"[:500]
            stable = connected.is_set() and time.monotonic() - connected_at[0] >= STABLE
            failures = 1 if stable else failures + 1
            wait = backoff(failures, RETRY_FIRST, RETRY_CAP).total_seconds()
            self.log("watch", source=name, status="dropped", error=error, retry_in=f"{wait:g}s")
            self.stopping.wait(wait)
