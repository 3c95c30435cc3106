"""Free loopback ports for the tests' own servers (never fixed ones: two checkouts may run at once)."""

from __future__ import annotations

import socket

__all__ = ["free_port", "free_ports"]


def free_ports(count: int) -> list[int]:
    """``count`` distinct ports free on 127.0.0.1 right now.

    The probes stay bound until all are taken: probing one at a time can get
    the same port twice, once the first probe has let it go.
    """
    probes = [socket.socket() for _ in range(count)]
    try:
        for probe in probes:
            probe.bind(("127.0.0.1", 0))
        return [probe.getsockname()[1] for probe in probes]
    finally:
        for probe in probes:
            probe.close()


def free_port() -> int:
    """One port free on 127.0.0.1 right now."""
    return free_ports(1)[0]
