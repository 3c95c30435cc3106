"""``foldctl run`` as a process: one daemon per store, signals, reload, systemd, the log (contract §11.2).

One daemon per store directory (``hostlock``): a second start is refused
with a clear message (exit 3); on a store in PostgreSQL any number share the
work (``presence``). SIGTERM / SIGINT stop it within 5 s: the scheduler stops at
once; a cycle or poll still running after a short grace is abandoned — safe,
because every step is durable (host.db transactions, the store's commit
protocol, the commit intent) and the next start resumes it. SIGHUP reads
plugins.toml again (``reload``): sources and consumers added or removed take
effect without a restart; a file that does not load changes nothing and
every error is logged. Under systemd (``NOTIFY_SOCKET``) it says READY,
RELOADING and STOPPING. Logs: one line per event on stderr, readable text or
``--log-format json``, times in ``[host] timezone``; other libraries'
warnings (APScheduler, uvicorn) come out as ``log`` events in the same format
(``eventlog.ForwardedLog``). The jobs themselves are ``daemon.Daemon``.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
from collections.abc import Callable
from zoneinfo import ZoneInfo

from fold_core.cli.common import emit
from fold_core.store.location import is_url
from fold_host.cycle.pipeline import Host
from fold_host.daemon import systemd
from fold_host.daemon.eventlog import EventLog, ForwardedLog
from fold_host.daemon.presence import presence
from fold_host.daemon.reload import reload
from fold_host.daemon.scheduler import Daemon
from fold_host.hostdb.guard import HostDBGuard
from fold_host.plugins import load_config as load
from fold_host.settings import HostConfig

__all__ = ["STOP_GRACE", "run"]

STOP_GRACE = 3.0  # seconds a running job may take to finish after SIGTERM


def run(config: HostConfig, store_dir: str, *, log_format: str = "text",
        load_config: Callable[[], HostConfig] | None = None) -> tuple[dict, int]:
    """Run until SIGTERM / SIGINT; SIGHUP reloads the configuration (``load_config()``, default: the same file)."""
    if load_config is None:
        given = str(config.path) if config.path is not None else None
        load_config = lambda: load(given)  # noqa: E731
    log = EventLog(log_format, zone=ZoneInfo(config.host.timezone))
    forwarded = ForwardedLog(log)
    logging.getLogger().addHandler(forwarded)
    try:
        return _run(config, store_dir, log, load_config)
    finally:
        logging.getLogger().removeHandler(forwarded)


def _run(config: HostConfig, store_dir: str, log: EventLog,
         load_config: Callable[[], HostConfig]) -> tuple[dict, int]:
    with presence(store_dir, "run", config.host.lease.total_seconds(), log) as holder:
        daemon = Daemon(Host(config, store_dir, holder=holder), log)
        if not is_url(store_dir):  # several hosts on PostgreSQL: there is no host.db file to guard
            daemon.host.guard = HostDBGuard(store_dir)
        stop, wake = threading.Event(), threading.Event()
        received: list[str] = []
        reloads: list[int] = []

        def on_signal(number, _frame) -> None:
            if number == signal.SIGHUP:
                reloads.append(number)
            else:
                received.append(signal.Signals(number).name)
                stop.set()
            wake.set()

        previous = {s: signal.signal(s, on_signal) for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)}
        try:
            daemon.start()
            systemd.notify("READY=1", f"STATUS=polling {len(daemon.host.adapters)} source(s)", f"MAINPID={os.getpid()}")
            while not stop.is_set():
                wake.wait(0.5)
                wake.clear()
                while reloads and not stop.is_set():
                    reloads.clear()
                    systemd.reloading()
                    reload(daemon, load_config)
                    systemd.notify("READY=1", f"STATUS=polling {len(daemon.host.adapters)} source(s)")
            systemd.notify("STOPPING=1")
            finished = daemon.stop(STOP_GRACE)
        finally:
            for number, handler in previous.items():
                signal.signal(number, handler)
        document = {"ok": True, "stopped_by": received[0] if received else None, "cycles": daemon.cycles}
        daemon.stopped()
        log("stop", signal=document["stopped_by"], cycles=daemon.cycles, clean=finished)
        if not finished:
            # A job is still inside a poll or an editor call: leave it. Everything it did so
            # far is durable and the next start resumes the rest.
            emit(document)
            os._exit(0)
        daemon.host.close(refresh_snapshot=True)
    return document, 0
