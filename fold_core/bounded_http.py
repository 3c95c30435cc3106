"""HTTP within a deadline and a size, for every request Fold sends to a server it does not control.

httpx's timeouts bound each network operation, not a request: a server that
sends one byte a second (in its headers or its body) keeps a request alive
for ever, and an answer is read into memory whatever its size — decompressed,
a 1 MB gzip body can become gigabytes. ``BoundedTransport`` wraps an httpx
transport so that every request

* ends at its **deadline** however the server trickles: each operation's
  timeout is at most the time left, the body is checked against the deadline
  at every chunk, and a watchdog ends a request still running at the
  deadline by shutting its connection's socket down (found through httpcore's
  ``trace`` extension when the connection is made), so a read blocked in the
  socket returns — in the headers as in the body. Connections are therefore
  never kept alive between requests: each request has its own socket, and a
  shared client can end one request without touching the others;
* reads at most **max_bytes** of body, counted after decompression: a
  declared ``Content-Length`` above it is refused before anything is read;
  ``gzip`` and ``deflate`` are decoded here, in steps that never go past the
  cap (only those two are asked for; another encoding is refused);
* fails with ``DeadlineExceeded`` (an ``httpx.TimeoutException``) or
  ``TooLarge`` (an ``httpx.TransportError``), whose message names the URL and
  the limit (``flavour().DeadlineExceeded``, ``flavour().TooLarge``).

``bounded_client(...)`` is an ``httpx.Client`` on it; proxies named by the
environment (``HTTPS_PROXY``, ``NO_PROXY``, …) are honoured as httpx does.
A request's deadline is its start plus ``seconds``, or earlier: the
transport's ``until``, or the absolute ``time.monotonic()`` instant a caller
puts in the request's extensions under ``DEADLINE_EXTENSION`` (one fetch of
several requests, on a client shared by many feeds). Used by the feed
fetcher and the editor SDK clients. The vendor SDKs may ship their own
copy of httpx under another name (``httpx2``): ``flavour(name)`` builds the
same classes on that package, so a client fits the SDK that uses it.
"""

from __future__ import annotations

import functools
import importlib
import ipaddress
import os
import socket
import threading
import time
import urllib.request
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

__all__ = ["DEADLINE_EXTENSION", "Flavour", "bounded_client", "flavour"]

STEP = 64 * 1024  # bytes decompressed at a time: the most a cap can be overshot before it is noticed
DEADLINE_EXTENSION = "fold_deadline"  # a request extension: its absolute deadline (time.monotonic())
ENCODINGS = "gzip, deflate"
Trace = Callable[[str, dict], None]  # httpcore's ``trace`` extension: (event, info)


@dataclass(frozen=True)
class Flavour:
    """The bounded classes built on one httpx package (``httpx``, or an SDK's ``httpx2``)."""

    httpx: Any
    BoundedTransport: type
    DeadlineExceeded: type  # a subclass of that package's TimeoutException
    TooLarge: type  # a subclass of that package's TransportError


@functools.cache
def flavour(package: str = "httpx") -> Flavour:
    """The bounded transport and its errors for the httpx package named ``package``."""
    httpx = importlib.import_module(package)
    late = type("DeadlineExceeded", (httpx.TimeoutException,),
                {"__module__": __name__, "__doc__": "The request did not finish before its deadline."})
    large = type("TooLarge", (httpx.TransportError,),
                 {"__module__": __name__, "__doc__": "The answer's body (decompressed) is larger than the cap."})
    stream: Any = type("BoundedStream", (_BoundedStream, httpx.SyncByteStream), {"__module__": __name__})
    names = {"__module__": __name__, "httpx": httpx, "DeadlineExceeded": late, "TooLarge": large, "Stream": stream}
    transport = type("BoundedTransport", (_BoundedTransport, httpx.BaseTransport), names)
    stream.transport = transport
    return Flavour(httpx, transport, late, large)


class _BoundedTransport:
    """An httpx transport whose requests keep a deadline and a size cap (see the module docstring).

    :param seconds: each request's deadline, from its start.
    :param max_bytes: the most body bytes (decompressed) a response may have.
    :param until: an absolute ``time.monotonic()`` deadline for every request (the earlier one holds).
    """

    httpx: Any
    DeadlineExceeded: type
    TooLarge: type
    Stream: type

    def __init__(self, inner: Any = None, *, seconds: float, max_bytes: int, until: float | None = None) -> None:
        self.inner = inner if inner is not None else \
            self.httpx.HTTPTransport(limits=self.httpx.Limits(max_keepalive_connections=0))
        self.seconds, self.max_bytes, self.until = seconds, max_bytes, until

    def handle_request(self, request: Any) -> Any:
        deadline = min(limit for limit in (time.monotonic() + self.seconds, self.until,
                                           request.extensions.get(DEADLINE_EXTENSION)) if limit is not None)
        left = deadline - time.monotonic()
        if left <= 0:
            raise self.DeadlineExceeded(f"{request.url}: no time left before the deadline", request=request)
        timeouts = request.extensions.get("timeout") or {}
        request.extensions["timeout"] = {name: left if timeouts.get(name) is None else min(timeouts[name], left)
                                         for name in ("connect", "read", "write", "pool")}
        request.headers["Accept-Encoding"] = ENCODINGS
        watchdog = _Watchdog(left)
        request.extensions["trace"] = watchdog.tracer(request.extensions.get("trace"))
        try:
            response = self.inner.handle_request(request)
        except self.httpx.TransportError as error:
            watchdog.cancel()
            if watchdog.fired:
                raise self.DeadlineExceeded(_late(request, self.seconds), request=request) from None
            raise error
        except BaseException:
            watchdog.cancel()
            raise
        watchdog.watch(response)
        try:
            return self._bounded(request, response, deadline, watchdog)
        except BaseException:
            watchdog.cancel()
            response.close()
            raise

    def _bounded(self, request: Any, response: Any, deadline: float, watchdog: _Watchdog) -> Any:
        encoding = response.headers.get("content-encoding", "identity").strip().lower() or "identity"
        declared = response.headers.get("content-length", "")
        if encoding == "identity" and declared.isdigit() and int(declared) > self.max_bytes:
            raise self.TooLarge(f"{request.url} declares {int(declared):,} bytes, more than the cap of "
                                f"{self.max_bytes:,}", request=request)
        if encoding not in ("identity", "gzip", "x-gzip", "deflate"):
            raise self.httpx.DecodingError(f"{request.url} answered in the encoding {encoding[:40]!r}, which was "
                                           f"not asked for ({ENCODINGS})", request=request)
        headers = [(name, value) for name, value in response.headers.multi_items()
                   if encoding == "identity" or name.lower() not in ("content-encoding", "content-length")]
        stream = self.Stream(response.stream, _Inflater.for_encoding(encoding), self.max_bytes, deadline,
                             watchdog, request, self.seconds)
        return self.httpx.Response(response.status_code, headers=headers, stream=stream, request=request,
                                   extensions=response.extensions)

    def close(self) -> None:
        self.inner.close()


def _late(request: Any, seconds: float) -> str:
    return f"{request.url} did not answer completely within {seconds:g}s; abandoned"


class _Watchdog:
    """Ends a request still running at its deadline by shutting its connection's socket down.

    It keeps the socket's file descriptor (a TLS wrap keeps the descriptor and
    drops the plain socket object) and shuts down a duplicate of it: the
    connection ends for every holder, and the TLS object is left alone.
    """

    def __init__(self, seconds: float) -> None:
        self.fired, self._done = False, False
        self._fd: int | None = None
        self._lock = threading.Lock()
        self._timer = threading.Timer(seconds, self._fire)
        self._timer.daemon = True
        self._timer.start()

    def tracer(self, given: Trace | None) -> Trace:
        """An httpcore ``trace`` callback that notes the request's connection (then calls ``given``)."""
        def trace(event: str, info: dict) -> None:
            if event == "connection.connect_tcp.complete":
                stream = info.get("return_value")
                self._attach(stream.get_extra_info("socket") if stream is not None else None)
            if given is not None:
                given(event, info)
        return trace

    def watch(self, response: Any) -> None:
        stream = response.extensions.get("network_stream")
        self._attach(stream.get_extra_info("socket") if stream is not None else None)

    def _attach(self, sock: object) -> None:
        fd = sock.fileno() if isinstance(sock, socket.socket) else -1
        if fd < 0:
            return
        with self._lock:
            self._fd = fd
            late = self.fired and not self._done
        if late:  # connected just as the deadline passed
            _shut(fd)

    def _fire(self) -> None:
        with self._lock:
            self.fired = True
            fd = None if self._done else self._fd
            if fd is not None:
                _shut(fd)  # under the lock: ``cancel`` (the request closing its socket) waits for it

    def cancel(self) -> None:
        with self._lock:
            self._done = True
        self._timer.cancel()


def _shut(fd: int) -> None:
    try:
        duplicate = socket.socket(fileno=os.dup(fd))
    except OSError:
        return
    try:
        duplicate.shutdown(socket.SHUT_RDWR)  # wakes a read blocked on this connection, in any thread
    except OSError:
        pass
    finally:
        duplicate.close()


class _Inflater:
    """gzip / deflate decoded in steps of at most ``STEP`` bytes (identity passes through)."""

    def __init__(self, wbits: int | None) -> None:
        self._wbits = wbits
        self._decoder = zlib.decompressobj(wbits) if wbits is not None else None
        self._started = False

    @classmethod
    def for_encoding(cls, encoding: str) -> "_Inflater":
        return cls({"gzip": 16 + zlib.MAX_WBITS, "x-gzip": 16 + zlib.MAX_WBITS,
                    "deflate": zlib.MAX_WBITS}.get(encoding))

    def pieces(self, data: bytes) -> Iterator[bytes]:
        if self._decoder is None:
            yield data
            return
        if not self._started and self._wbits == zlib.MAX_WBITS and data:
            try:
                zlib.decompressobj(zlib.MAX_WBITS).decompress(data[:2])
            except zlib.error:  # "deflate" sent raw, without the zlib header (as many servers do)
                self._decoder = zlib.decompressobj(-zlib.MAX_WBITS)
        self._started = True
        while data:
            piece = self._decoder.decompress(data, STEP)
            data = self._decoder.unconsumed_tail
            if piece:
                yield piece
            if self._decoder.eof:
                return


class _BoundedStream:
    """The body of a bounded response: decoded in steps, checked against the cap and the deadline per chunk."""

    transport: Any

    def __init__(self, inner: Any, inflater: _Inflater, max_bytes: int, deadline: float, watchdog: _Watchdog,
                 request: Any, seconds: float) -> None:
        self.inner, self.inflater, self.max_bytes, self.deadline = inner, inflater, max_bytes, deadline
        self.watchdog, self.request, self.seconds = watchdog, request, seconds

    def __iter__(self) -> Iterator[bytes]:
        bounded, total = self.transport, 0
        try:
            for chunk in self.inner:
                if time.monotonic() > self.deadline:
                    raise bounded.DeadlineExceeded(_late(self.request, self.seconds), request=self.request)
                for piece in self.inflater.pieces(chunk):
                    total += len(piece)
                    if total > self.max_bytes:
                        raise bounded.TooLarge(f"{self.request.url} sent more than the cap of {self.max_bytes:,} "
                                               "bytes; abandoned", request=self.request)
                    yield piece
        except zlib.error as error:
            raise bounded.httpx.DecodingError(f"{self.request.url}: the compressed body is broken ({error})",
                                              request=self.request) from None
        except bounded.httpx.TransportError as error:
            if self.watchdog.fired and not isinstance(error, (bounded.TooLarge, bounded.DeadlineExceeded)):
                raise bounded.DeadlineExceeded(_late(self.request, self.seconds), request=self.request) from None
            raise

    def close(self) -> None:
        self.watchdog.cancel()
        self.inner.close()


def bounded_client(*, seconds: float, max_bytes: int, until: float | None = None, package: str = "httpx",
                   limits: Any = None, **options: Any) -> Any:
    """A ``Client`` of ``package`` whose every request keeps ``seconds`` (and ``until``) and ``max_bytes``.

    ``options`` go to the ``Client`` (``timeout`` defaults to ``seconds``);
    ``limits`` sets the most connections at once (none is kept alive). The
    environment's proxies are mounted on bounded transports too.
    """
    bound = flavour(package)
    most = getattr(limits, "max_connections", None) or 100
    pool = bound.httpx.Limits(max_connections=most, max_keepalive_connections=0)

    def bounded(proxy: str | None) -> Any:
        inner = bound.httpx.HTTPTransport(proxy=proxy, limits=pool)
        return bound.BoundedTransport(inner, seconds=seconds, max_bytes=max_bytes, until=until)

    options.setdefault("timeout", seconds)
    mounts = {pattern: bounded(proxy) for pattern, proxy in _environment_proxies().items()}
    return bound.httpx.Client(transport=bounded(None), mounts=mounts, **options)


def _environment_proxies() -> dict[str, str | None]:
    """URL pattern → proxy (None: direct), from the environment, by httpx's own rules (curl's NO_PROXY)."""
    found = urllib.request.getproxies()
    mounts: dict[str, str | None] = {}
    for scheme in ("http", "https", "all"):
        if found.get(scheme):
            mounts[f"{scheme}://"] = found[scheme] if "://" in found[scheme] else f"http://{found[scheme]}"
    for host in (part.strip() for part in found.get("no", "").split(",")):
        if host == "*":
            return {}
        if not host:
            continue
        try:
            address = ipaddress.ip_address(host)
        except ValueError:
            address = None
        if "://" in host:
            mounts[host] = None
        elif address is not None:
            mounts[f"all://[{host}]" if address.version == 6 else f"all://{host}"] = None
        else:
            mounts[f"all://{host}" if host.lower() == "localhost" else f"all://*{host}"] = None
    return mounts
