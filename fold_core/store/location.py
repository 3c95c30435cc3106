"""Where a store lives: a directory, or a ``postgresql://`` URL (contract §7 ``--store``).

``--store``, ``FOLD_STORE`` and ``[store]`` in plugins.toml name a store one
way: a directory path, or a libpq connection URI (``postgresql://`` or
``postgres://``). Fold reads three query parameters of its own from the URL
and hands every other one to libpq unchanged:

* ``store=NAME`` — which store of the database (many stores share one
  database); absent: the store ``default``. NAME is 1–64 of
  ``A-Z a-z 0-9 . _ -``, starting with a letter or digit.
* ``password_env=VAR`` — the password is in the environment variable VAR;
* ``password_file=PATH`` — the password is the first line of the file PATH.

Without either, libpq's own ways apply (a password in the URL, ``PGPASSWORD``,
``~/.pgpass``). ``[store] url``, ``name``, ``password_env`` and
``password_file`` in plugins.toml become the same URL (``compose``), so one
string names the store everywhere. ``display`` is the URL with any password
written in it masked: what answers and messages show.

Parsing is plain text work (no psycopg): a command that opens a directory
never imports the PostgreSQL driver.
"""

from __future__ import annotations

import os
import re
from typing import TypeGuard
from urllib.parse import parse_qsl, quote, urlencode, urlsplit

from fold_core.errors import ConfigError, UsageError

__all__ = ["DEFAULT_NAME", "PgLocation", "compose", "is_url", "parse_url"]

SCHEMES = ("postgresql", "postgres")
DEFAULT_NAME = "default"
STORE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
OWN_PARAMS = ("store", "password_env", "password_file")
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_PASSWORD_PARAM = re.compile(r"([?&]password=)[^&#]*")


def is_url(location: object) -> TypeGuard[str]:
    """Whether ``location`` names a PostgreSQL store (else it is a directory)."""
    if not isinstance(location, str):
        return False
    scheme, sep, _ = location.partition("://")
    return bool(sep) and scheme.lower() in SCHEMES


class PgLocation:
    """A parsed store URL: the libpq URI, the store name, where the password is."""

    __slots__ = ("conninfo", "name", "password_env", "password_file", "url")

    def __init__(self, conninfo: str, name: str, password_env: str | None, password_file: str | None,
                 url: str) -> None:
        self.conninfo = conninfo  # the URI without Fold's own parameters: what libpq gets
        self.name = name
        self.password_env, self.password_file = password_env, password_file
        self.url = url  # as given

    @property
    def display(self) -> str:
        """The URL as answers show it: a password written in it is masked."""
        return _mask(self.url)

    def password(self) -> str | None:
        """The password from ``password_env`` / ``password_file`` (None: libpq finds its own)."""
        if self.password_env is not None:
            value = os.environ.get(self.password_env)
            if value is None:
                raise ConfigError(f"the store URL's password_env names {self.password_env}, which is not set",
                                  field="password_env")
            return value
        if self.password_file is not None:
            path = os.path.expanduser(self.password_file)
            try:
                with open(path, encoding="utf-8") as file:
                    first = file.readline()
            except (OSError, UnicodeDecodeError) as error:
                raise ConfigError(f"the store URL's password_file {path} cannot be read: {error}",
                                  field="password_file") from None
            return first.rstrip("\r\n")
        return None

    def __repr__(self) -> str:
        return f"PgLocation({self.display!r})"


def parse_url(url: str) -> PgLocation:
    """Split a store URL into what libpq gets and what Fold keeps (UsageError when malformed)."""
    if not is_url(url):
        raise UsageError(f"not a PostgreSQL URL: {_mask(url)!r} (expected postgresql://…)")
    parts = urlsplit(url)
    if parts.fragment:
        raise UsageError(f"{_mask(url)}: a store URL has no #fragment; name the store with ?store=NAME")
    try:
        pairs = parse_qsl(parts.query, keep_blank_values=True, strict_parsing=bool(parts.query))
    except ValueError:
        raise UsageError(f"{_mask(url)}: the query part is not name=value pairs joined by &") from None
    own: dict[str, str] = {}
    passed: list[tuple[str, str]] = []
    for key, value in pairs:
        if key in OWN_PARAMS:
            if key in own:
                raise UsageError(f"{_mask(url)}: {key} is given twice")
            own[key] = value
        else:
            passed.append((key, value))
    name = own.get("store", DEFAULT_NAME)
    if not STORE_NAME.fullmatch(name):
        raise UsageError(f"{_mask(url)}: store name {name!r} must be 1–64 of A-Z a-z 0-9 . _ -,"
                         " starting with a letter or digit")
    env, file = own.get("password_env"), own.get("password_file")
    if env is not None and file is not None:
        raise UsageError(f"{_mask(url)}: give password_env or password_file, not both")
    if env is not None and not ENV_NAME.fullmatch(env):
        raise UsageError(f"{_mask(url)}: password_env must name an environment variable, got {env!r}")
    if file == "":
        raise UsageError(f"{_mask(url)}: password_file is empty")
    query = urlencode(passed, quote_via=quote)
    conninfo = _join(parts.scheme, parts.netloc, parts.path, query)
    return PgLocation(conninfo, name, env, file, url)


def compose(url: str, *, name: str | None = None, password_env: str | None = None,
            password_file: str | None = None) -> str:
    """The one store URL for ``[store] url`` plus ``name`` / ``password_env`` / ``password_file``."""
    location = parse_url(url)
    extra = {"store": name, "password_env": password_env, "password_file": password_file}
    given = {"store": location.name if "store=" in url else None, "password_env": location.password_env,
             "password_file": location.password_file}
    pairs = []
    for key, value in extra.items():
        if value is None:
            continue
        if given[key] is not None and given[key] != value:
            raise ConfigError(f"[store] {'name' if key == 'store' else key} = {value!r} disagrees with the"
                              f" url's {key}={given[key]}", instance="[store]",
                              field="name" if key == "store" else key)
        if given[key] is None:
            pairs.append((key, value))
    if not pairs:
        return url
    parts = urlsplit(url)
    query = "&".join(filter(None, [parts.query, urlencode(pairs, quote_via=quote)]))
    composed = _join(parts.scheme, parts.netloc, parts.path, query)
    parse_url(composed)  # the name and the rest are checked the same way as a --store URL
    return composed


def _join(scheme: str, netloc: str, path: str, query: str) -> str:
    """A URI from its parts, keeping an empty authority (``postgresql:///db``: the local socket)."""
    return f"{scheme}://{netloc}{path}" + (f"?{query}" if query else "")


def _mask(url: str) -> str:
    """``url`` with a password (``user:password@`` or ``password=``) replaced by ``***``."""
    url = _PASSWORD_PARAM.sub(r"\1***", url)
    scheme, sep, rest = url.partition("://")
    if not sep:
        return url
    authority, slash, tail = rest.partition("/")
    userinfo, at, hosts = authority.rpartition("@")
    if not at or ":" not in userinfo:
        return url
    user = userinfo.split(":", 1)[0]
    return f"{scheme}://{user}:***@{hosts}{slash}{tail}"
