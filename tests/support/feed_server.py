"""A real HTTP server on 127.0.0.1 serving feeds for the rss adapter's tests and benchmark.

``FeedServer`` is a ``ThreadingHTTPServer`` in a daemon thread. Each path has a
``FeedRoute`` whose answer a test changes between polls (body, status, extra
headers); a 200 route sends an ETag and Last-Modified derived from its body and
answers a matching conditional GET with 304. Every request's headers are
recorded. ``silent_port()`` gives a port that accepts connections and never
answers (the kernel's backlog completes the handshake; nobody reads).

``rss2``, ``atom`` and ``rdf`` build small documents of the three families.
"""

from __future__ import annotations

import hashlib
import socket
import threading
from dataclasses import dataclass, field
from typing import Any
from email.utils import formatdate
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from xml.sax.saxutils import escape

__all__ = ["FeedRoute", "FeedServer", "atom", "rdf", "rss2", "silent_socket"]


@dataclass
class FeedRoute:
    body: bytes = b""
    status: int = 200
    content_type: str = "application/rss+xml; charset=utf-8"
    headers: dict[str, str] = field(default_factory=dict)
    validators: bool = True  # send ETag / Last-Modified and honour conditional GET
    declared_length: int | None = None  # a Content-Length that lies (zip-bomb-sized declarations)
    chunked: bool = False  # no Content-Length: the body ends when the connection closes
    writer: Any = None  # a ``hostile_http`` writer: the whole answer, written raw (trickles, bombs)
    requests: list[dict[str, str]] = field(default_factory=list)
    answered: list[int] = field(default_factory=list)  # the status of each answer, in order

    @property
    def etag(self) -> str:
        return '"' + hashlib.sha256(self.body).hexdigest()[:16] + '"'

    def last_modified(self) -> str:
        return formatdate(1_790_000_000 + int(hashlib.sha256(self.body).hexdigest()[:6], 16), usegmt=True)


class _Handler(BaseHTTPRequestHandler):
    server_version = "FeedTestServer"

    def log_message(self, *args) -> None:  # keep test output quiet
        pass

    def do_GET(self) -> None:
        route = self.server.routes.get(self.path)
        if route is None:
            self.send_error(404)
            return
        route.requests.append({k.lower(): v for k, v in self.headers.items()})
        if route.writer is not None:
            self.close_connection = True
            route.writer(self, self.server.stopping)
            return
        if route.status == 200 and route.validators and (
                self.headers.get("If-None-Match") == route.etag
                or self.headers.get("If-Modified-Since") == route.last_modified()):
            route.answered.append(304)
            self.send_response(304)
            self._extra(route)
            self.end_headers()
            return
        route.answered.append(route.status)
        self.send_response(route.status)
        self.send_header("Content-Type", route.content_type)
        if route.status == 200 and route.validators:
            self.send_header("ETag", route.etag)
            self.send_header("Last-Modified", route.last_modified())
        self._extra(route)
        if not route.chunked:
            length = route.declared_length if route.declared_length is not None else len(route.body)
            self.send_header("Content-Length", str(length))
        self.end_headers()
        try:
            self.wfile.write(route.body)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (size cap): expected
            pass

    def _extra(self, route: FeedRoute) -> None:
        for name, value in route.headers.items():
            self.send_header(name, value)


class FeedServer:
    """``with FeedServer() as server: server.route("/feed.xml", body=...)``; ``server.url(path)``."""

    def __init__(self, host: str = "127.0.0.1") -> None:
        self.httpd = ThreadingHTTPServer((host, 0), _Handler)
        self.httpd.daemon_threads = True
        self.httpd.routes = {}
        self.httpd.stopping = threading.Event()
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def url(self, path: str) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host}:{port}{path}"

    def route(self, path: str, body: bytes | str = b"", **fields) -> FeedRoute:
        data = body.encode() if isinstance(body, str) else body
        route = FeedRoute(body=data, **fields)
        self.httpd.routes[path] = route
        return route

    def close(self) -> None:
        self.httpd.stopping.set()
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=5)

    def __enter__(self) -> "FeedServer":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def silent_socket() -> socket.socket:
    """A listening socket on 127.0.0.1 that never accepts: connections hang until the client times out."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    return sock


def _x(value: str) -> str:
    return escape(value, {'"': "&quot;"})


def rss2(items: list[dict], *, title: str = "Example feed", ttl: int | None = None, encoding: str = "utf-8",
         raw_items: str = "") -> bytes:
    """An RSS 2.0 document; item keys: title, link, guid, description (HTML allowed), pubDate, guid_permalink."""
    parts = [f'<?xml version="1.0" encoding="{encoding}"?>', '<rss version="2.0"><channel>',
             f"<title>{_x(title)}</title><link>http://example.org/</link><description>d</description>"]
    if ttl is not None:
        parts.append(f"<ttl>{ttl}</ttl>")
    for item in items:
        parts.append("<item>")
        for key in ("title", "link", "description", "pubDate", "author"):
            if key in item:
                parts.append(f"<{key}>{_x(item[key])}</{key}>")
        if "guid" in item:
            permalink = "true" if item.get("guid_permalink") else "false"
            parts.append(f'<guid isPermaLink="{permalink}">{_x(item["guid"])}</guid>')
        parts.append("</item>")
    parts.append(raw_items)
    parts.append("</channel></rss>")
    return "\n".join(parts).encode(encoding)


def atom(entries: list[dict], *, title: str = "Example Atom") -> bytes:
    """An Atom 1.0 document; entry keys: id, title, link, updated, content (HTML), summary."""
    parts = ['<?xml version="1.0" encoding="utf-8"?>', '<feed xmlns="http://www.w3.org/2005/Atom">',
             f"<title>{_x(title)}</title><id>urn:example:feed</id><updated>2026-10-01T00:00:00Z</updated>"]
    for entry in entries:
        parts.append("<entry>")
        parts.append(f"<id>{_x(entry['id'])}</id>" if "id" in entry else "")
        parts.append(f"<title>{_x(entry.get('title', ''))}</title>")
        if "link" in entry:
            parts.append(f'<link rel="alternate" href="{_x(entry["link"])}"/>')
        parts.append(f"<updated>{entry.get('updated', '2026-10-01T00:00:00Z')}</updated>")
        if "content" in entry:
            parts.append(f'<content type="html">{_x(entry["content"])}</content>')
        if "summary" in entry:
            parts.append(f"<summary>{_x(entry['summary'])}</summary>")
        parts.append("</entry>")
    parts.append("</feed>")
    return "\n".join(parts).encode("utf-8")


def rdf(items: list[dict], *, title: str = "Example RDF") -> bytes:
    """An RSS 1.0 (RDF) document; item keys: about, title, link, description, date (dc:date)."""
    parts = ['<?xml version="1.0" encoding="utf-8"?>',
             '<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#" xmlns="http://purl.org/rss/1.0/"'
             ' xmlns:dc="http://purl.org/dc/elements/1.1/">',
             f'<channel rdf:about="http://example.org/rdf"><title>{_x(title)}</title><link>http://example.org/</link>'
             "<description>d</description></channel>"]
    for item in items:
        parts.append(f'<item rdf:about="{_x(item["about"])}"><title>{_x(item["title"])}</title>'
                     f'<link>{_x(item["link"])}</link><description>{_x(item.get("description", ""))}</description>'
                     f'<dc:date>{item.get("date", "2026-10-01T08:00:00+08:00")}</dc:date></item>')
    parts.append("</rdf:RDF>")
    return "\n".join(parts).encode("utf-8")
