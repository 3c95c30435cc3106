"""``GET /healthz`` and ``GET /metrics`` on the Pinboard's server (same token rules as its pages).

``/healthz`` answers ``{"ok": true, "checks": {...}}`` with 200 when the store
reads and the daemon is well, and the same shape with ``"ok": false`` and
503 otherwise (``fold_host.daemon.health``): what Uptime Kuma, a load balancer or a
container's health check wants. ``/metrics`` is the Prometheus text format
(``fold_host.ops.metrics``), read at scrape time; ``prometheus_client`` is
imported on the first scrape.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from starlette.responses import JSONResponse, Response

from fold_core.errors import FoldError
from fold_host.daemon.health import health

if TYPE_CHECKING:  # the name only: prometheus_client loads on the first scrape
    from prometheus_client.registry import CollectorRegistry

__all__ = ["Watch"]


class Watch:
    """The two handlers over one ``Pinboard``."""

    def __init__(self, pinboard) -> None:
        self.pinboard = pinboard
        self._registry: CollectorRegistry | None = None
        self._lock = threading.Lock()

    def healthz(self, request) -> Response:
        pinboard = self.pinboard
        ok, checks = health(pinboard.store_dir, pinboard.state, pinboard.now())
        return JSONResponse({"ok": ok, "checks": checks}, status_code=200 if ok else 503)

    def metrics(self, request) -> Response:
        from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

        with self._lock:
            registry = self._registry
            if registry is None:
                # lazy: prometheus_client loads on the first scrape
                from fold_host.ops.metrics import registry_for

                registry = self._registry = registry_for(self.pinboard.store_dir, self.pinboard.state)
            try:
                body = generate_latest(registry)
            except (FoldError, OSError) as error:
                return Response(f"# the store or host.db cannot be read: {error}\n", status_code=503,
                                media_type="text/plain; charset=utf-8")
        return Response(body, media_type=CONTENT_TYPE_LATEST)
