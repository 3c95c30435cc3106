"""Answers a hostile HTTP server gives, written straight onto a ``BaseHTTPRequestHandler``'s socket.

Used by the scripted LLM server (``llm_servers.hostile``) and the feed server
(``FeedRoute(writer=...)``). Each writer takes the handler and a
``threading.Event`` that is set when the server stops, and returns when the
client goes away or the server stops:

* ``endless(content_type)`` — a chunked body that never ends;
* ``trickle_body(every)`` — a body of one byte every ``every`` seconds;
* ``trickle_headers(every)`` — the status line, then the headers one byte at a time;
* ``oversized(size)`` — a body of ``size`` bytes, declared in Content-Length;
* ``gzip_bomb(size)`` — ``size`` zero bytes gzip-compressed (about 1/1000 of it on the wire).
"""

from __future__ import annotations

import functools
import threading
import zlib
from collections.abc import Callable

__all__ = ["Writer", "endless", "gzip_bomb", "oversized", "trickle_body", "trickle_headers"]

Writer = Callable[[object, threading.Event], None]
CHUNK = 64 * 1024


def _gone(write: Callable[[bytes], object], data: bytes) -> bool:
    """Write ``data``; True when the client went away."""
    try:
        write(data)
        return False
    except OSError:
        return True


def endless(content_type: str = "application/json") -> Writer:
    def write(handler, stop: threading.Event) -> None:
        opening = b'{"choices": [{"message": {"content": "'
        head = (f"HTTP/1.1 200 OK\r\nContent-Type: {content_type}\r\nTransfer-Encoding: chunked\r\n\r\n"
                ).encode() + b"%x\r\n%s\r\n" % (len(opening), opening)
        if _gone(handler.wfile.write, head):
            return
        chunk = b"%x\r\n%s\r\n" % (CHUNK, b"x" * CHUNK)
        while not stop.is_set():
            if _gone(handler.wfile.write, chunk):
                return
    return write


def trickle_body(every: float = 1.0, content_type: str = "application/json") -> Writer:
    def write(handler, stop: threading.Event) -> None:
        head = f"HTTP/1.1 200 OK\r\nContent-Type: {content_type}\r\nTransfer-Encoding: chunked\r\n\r\n".encode()
        if _gone(handler.wfile.write, head):
            return
        while not stop.wait(every):
            if _gone(handler.wfile.write, b"1\r\n \r\n"):
                return
    return write


def trickle_headers(every: float = 0.2) -> Writer:
    def write(handler, stop: threading.Event) -> None:
        if _gone(handler.wfile.write, b"HTTP/1.1 200 OK\r\n"):
            return
        for byte in b"X-Slow: " + b"a" * 1_000_000:
            if stop.wait(every) or _gone(handler.wfile.write, bytes([byte])):
                return
    return write


def oversized(size: int, content_type: str = "application/json") -> Writer:
    def write(handler, stop: threading.Event) -> None:
        head = f"HTTP/1.1 200 OK\r\nContent-Type: {content_type}\r\nContent-Length: {size}\r\n\r\n".encode()
        if _gone(handler.wfile.write, head):
            return
        block, sent = b" " * CHUNK, 0
        while sent < size and not stop.is_set():
            if _gone(handler.wfile.write, block[:size - sent]):
                return
            sent += CHUNK
    return write


@functools.lru_cache(maxsize=4)
def _zeros_gzipped(size: int) -> bytes:
    packer = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    block = b"\0" * (1024 * 1024)
    parts = [packer.compress(block) for _ in range(size // len(block))]
    return b"".join(parts) + packer.flush()


def gzip_bomb(size: int = 1024 ** 3, content_type: str = "application/rss+xml") -> Writer:
    def write(handler, stop: threading.Event) -> None:
        body = _zeros_gzipped(size)
        head = (f"HTTP/1.1 200 OK\r\nContent-Type: {content_type}\r\nContent-Encoding: gzip\r\n"
                f"Content-Length: {len(body)}\r\n\r\n").encode()
        _gone(handler.wfile.write, head + body)
    return write

