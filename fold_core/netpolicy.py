"""Where Fold's fetches may be led, and credentials in URLs (docs/operating.md "What Fold fetches").

A configured URL is fetched as configured, whatever its address — a feed on
``localhost`` or on the home network is a valid choice of the user. What a
*server* says cannot widen that: a redirect, or the feed a web page names
(discovery), is a **hop**, and a hop may go to a public address, or stay in
the class of the address it came from, but not move inward — from a public
address to a private one, from the network to this machine (``loopback``) —
unless ``[host] allow_private_redirects = true`` (``allow_private_redirects``;
the host sets it when it loads its configuration). A link-local address
(``169.254.0.0/16``, ``fe80::/10``) and the cloud metadata addresses
(``METADATA``) are never fetched at all, configured or not: nothing a user
subscribes to lives there, and the credentials of the machine do.

``url_class(url)`` is the class of the address a URL's host names: an IP
literal's own, else the innermost of the addresses its name resolves to
(``resolve``, a module attribute tests may replace: a name that cannot be
resolved is ``unknown`` and its fetch fails on its own). Classes, outermost
first: ``public``, ``private`` (RFC 1918, unique-local, shared address space,
reserved), ``loopback``, ``link-local``. The resolution is the system's, and
the HTTP client resolves the name again when it connects: a name whose
answers change between the two (DNS rebinding) is not caught here.

``mask_credentials(text)`` shows ``user:***@`` for every ``user:password@``
of a URL in a text; ``without_credentials(url)`` drops a URL's user info
(what is stored), ``with_credentials_of(url, configured)`` gives it back for
a URL on the configured URL's own origin (what is fetched).
"""

from __future__ import annotations

import ipaddress
import re
import socket
from collections.abc import Callable
from urllib.parse import urlsplit, urlunsplit

__all__ = ["CLASSES", "METADATA", "address_class", "allow_private_redirects", "configured_problem", "hop_problem",
           "literal_problem", "mask_credentials", "moves_inward", "private_redirects_allowed", "resolve", "url_class",
           "with_credentials_of", "without_credentials"]

CLASSES = ("public", "private", "loopback", "link-local")  # outermost first
METADATA = frozenset(ipaddress.ip_address(a) for a in (
    "169.254.169.254",  # AWS, GCP, Azure, OpenStack, …
    "169.254.170.2",  # AWS ECS task metadata
    "fd00:ec2::254",  # AWS over IPv6
    "100.100.100.200",  # Alibaba Cloud
))
SHARED = ipaddress.ip_network("100.64.0.0/10")  # carrier-grade NAT: not the public internet
_CREDENTIALS = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://[^\s/?#@:]*):[^\s/?#@]*@")

_allowed = False


def allow_private_redirects(allowed: bool) -> None:
    """Set ``[host] allow_private_redirects`` for this process (the host does, from its configuration)."""
    global _allowed
    _allowed = bool(allowed)


def private_redirects_allowed() -> bool:
    return _allowed


def _system_resolve(host: str) -> list[str]:
    try:
        return sorted({str(info[4][0]) for info in socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)})
    except (OSError, UnicodeError, ValueError):
        return []


resolve: Callable[[str], list[str]] = _system_resolve


def address_class(address: str) -> str:
    """The class of one IP address (see the module docstring)."""
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    if ip in METADATA or ip.is_link_local:
        return "link-local"
    if ip.is_loopback or ip.is_unspecified:  # 0.0.0.0 and :: reach this machine
        return "loopback"
    if ip.is_private or ip.is_reserved or ip.is_multicast or ip in SHARED or not ip.is_global:
        return "private"
    return "public"


def url_class(url: str) -> str:
    """The class of the address ``url`` leads to; ``unknown`` when its host cannot be read or resolved."""
    try:
        host = urlsplit(url).hostname
    except ValueError:
        return "unknown"
    if not host:
        return "unknown"
    try:
        return address_class(host)
    except ValueError:
        pass
    classes = []
    for address in resolve(host):
        try:
            classes.append(address_class(address))
        except ValueError:
            continue
    return max(classes, key=CLASSES.index) if classes else "unknown"


def _article(kind: str) -> str:
    return f"an {kind}" if kind[0] in "aeiou" else f"a {kind}"


def literal_problem(url: str) -> str | None:
    """``configured_problem`` for a URL whose host is an IP address, without resolving any name (settings, OPML)."""
    try:
        host = urlsplit(url).hostname
        kind = address_class(host) if host else None
    except ValueError:
        return None
    return configured_problem(url) if kind == "link-local" else None


def configured_problem(url: str) -> str | None:
    """Why a configured URL is never fetched (a link-local or metadata address); None when it may be."""
    if url_class(url) == "link-local":
        return (f"{mask_credentials(url)[:300]} leads to a link-local address (169.254.0.0/16, fe80::/10, where "
                "cloud metadata and the machine's credentials live): Fold never fetches one")
    return None


def hop_problem(came_from: str, target: str, *, allowed: bool | None = None) -> str | None:
    """Why a redirect or discovered link from ``came_from`` to ``target`` is not followed; None when it is."""
    to = url_class(target)
    if to == "link-local":
        return configured_problem(target)
    if to in ("public", "unknown"):
        return None
    origin = url_class(came_from)
    if to == origin or CLASSES.index(to) <= CLASSES.index(origin if origin in CLASSES else "public"):
        return None
    if private_redirects_allowed() if allowed is None else allowed:
        return None
    return (f"{mask_credentials(came_from)[:300]} ({_article(origin)} address) leads to "
            f"{mask_credentials(target)[:300]} ({_article(to)} address): a server may not send Fold into this "
            "machine or its network; set [host] allow_private_redirects = true to follow such links")


def moves_inward(came_from: str, target: str) -> bool:
    """Whether ``target`` is in a class further in than ``came_from`` (followed only when allowed)."""
    to, origin = url_class(target), url_class(came_from)
    if to not in CLASSES or to == "public":
        return False
    return CLASSES.index(to) > CLASSES.index(origin if origin in CLASSES else "public")


def mask_credentials(text: str) -> str:
    """``text`` with every ``scheme://user:password@`` shown as ``scheme://user:***@``."""
    return _CREDENTIALS.sub(r"\1:***@", text) if "@" in text else text


def without_credentials(url: str) -> str:
    """``url`` without its user info (``user:password@``); unchanged when it has none or cannot be read."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return url
    if "@" not in parts.netloc:
        return url
    return urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))


def with_credentials_of(url: str, configured: str | None) -> str:
    """``url`` with the user info of ``configured`` when both are on the same origin and ``url`` has none."""
    if not configured or "@" not in configured:
        return url
    try:
        mine, theirs = urlsplit(url), urlsplit(configured)
        same = (mine.scheme.lower(), mine.hostname, mine.port) == (theirs.scheme.lower(), theirs.hostname,
                                                                    theirs.port)
    except ValueError:
        return url
    if not same or "@" in mine.netloc:
        return url
    userinfo = theirs.netloc.rpartition("@")[0]
    return urlunsplit(mine._replace(netloc=f"{userinfo}@{mine.netloc}"))
