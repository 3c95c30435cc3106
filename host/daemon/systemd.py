"""Telling systemd how the daemon is: ``sd_notify`` without a library (``Type=notify``, ``WatchdogSec``).

When systemd starts ``foldctl run`` as a ``Type=notify`` service it sets
``NOTIFY_SOCKET``; the daemon sends ``READY=1`` once its scheduler runs,
``WATCHDOG=1`` with every heartbeat (so a hung daemon is restarted after
``WatchdogSec``), ``RELOADING=1`` … ``READY=1`` around a SIGHUP reload and
``STOPPING=1`` on its way out. Without ``NOTIFY_SOCKET`` (not under systemd)
every call does nothing. A failed send is ignored: telling systemd is never a
reason to stop.
"""

from __future__ import annotations

import os
import socket
import time

__all__ = ["notify", "reloading", "watchdog_seconds"]


def notify(*states: str) -> bool:
    """Send ``KEY=value`` lines to systemd; False when not under systemd or the send failed."""
    address = os.environ.get("NOTIFY_SOCKET")
    if not address or not states:
        return False
    if address.startswith("@"):  # an abstract socket
        address = "\0" + address[1:]
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC) as sock:
            sock.connect(address)
            sock.sendall("\n".join(states).encode("utf-8"))
    except OSError:
        return False
    return True


def reloading() -> bool:
    """``RELOADING=1`` with the monotonic timestamp systemd ≥ 253 asks for (``Type=notify-reload``)."""
    usec = time.clock_gettime_ns(time.CLOCK_MONOTONIC) // 1000
    return notify("RELOADING=1", f"MONOTONIC_USEC={usec}")


def watchdog_seconds() -> float | None:
    """systemd's ``WatchdogSec`` for this process (``WATCHDOG_USEC``, ``WATCHDOG_PID``), else None."""
    usec = os.environ.get("WATCHDOG_USEC", "")
    pid = os.environ.get("WATCHDOG_PID")
    if not usec.isdigit() or int(usec) <= 0 or (pid is not None and pid != str(os.getpid())):
        return None
    return int(usec) / 1_000_000
