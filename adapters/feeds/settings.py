"""The ``rss`` adapter's settings (``[[adapters]] type = "rss"``; its keys: ``fold_adapters.feeds.rss``).

Apart from the adapter so that the modules that poll can name the settings'
type while the adapter, which the host loads to register the type, loads
none of them until its first poll.
"""

from __future__ import annotations

from datetime import date, datetime, time, timedelta, timezone
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from fold_core.netpolicy import literal_problem
from fold_core.settings import AdapterSettings, ConfigPath, Duration

__all__ = ["FeedItem", "RssSettings", "parse_first_run"]

MAX_BYTES_LIMIT = 64 * 1024 * 1024  # no feed is larger; a larger cap would only let a hostile one cost more memory
URL_PATTERN = r"^[hH][tT][tT][pP][sS]?://\S+$"


class FeedItem(BaseModel):
    """One entry of ``feeds``: a URL, or a table with a title and a folder."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    config_label: ClassVar[str] = "feeds (URLs, or tables `{ url, title, folder }`)"

    url: str = Field(pattern=URL_PATTERN, max_length=4096)
    title: str | None = Field(default=None, max_length=200)
    folder: str | None = Field(default=None, max_length=500)

    @model_validator(mode="before")
    @classmethod
    def _from_url(cls, value: Any) -> Any:
        return {"url": value} if isinstance(value, str) else value

    @field_validator("url")
    @classmethod
    def _where(cls, value: str) -> str:
        return _fetchable(value)


class RssSettings(AdapterSettings):
    url: str | None = Field(default=None, pattern=URL_PATTERN, max_length=4096)
    feeds: tuple[FeedItem, ...] | None = Field(default=None, min_length=1, max_length=5000)
    opml: ConfigPath | None = None
    first_run: str = "last:20"
    timeout: Duration = Field(default=timedelta(seconds=30))
    max_bytes: int = Field(default=10 * 1024 * 1024, ge=1024, le=MAX_BYTES_LIMIT)
    seen_limit: int | None = Field(default=None, ge=10, le=100_000)
    max_connections: int = Field(default=8, ge=1, le=64)
    max_per_host: int = Field(default=2, ge=1, le=16)

    @field_validator("url")
    @classmethod
    def _where(cls, value: str | None) -> str | None:
        return value if value is None else _fetchable(value)

    @field_validator("first_run")
    @classmethod
    def _first_run(cls, value: str) -> str:
        parse_first_run(value)
        return value.strip()

    @model_validator(mode="after")
    def _one_way_to_name_feeds(self) -> "RssSettings":
        given = [name for name in ("url", "feeds", "opml") if getattr(self, name) is not None]
        if len(given) != 1:
            raise ValueError(f"expected exactly one of url, feeds or opml, found "
                             f"{' and '.join(given) if given else 'none of them'}")
        return self

    @property
    def many(self) -> bool:
        """Whether the instance reads many feeds (``feeds`` or ``opml``), even if only one is listed."""
        return self.url is None


def _fetchable(url: str) -> str:
    """``url`` unless it names a link-local or metadata address (never fetched: ``fold_core.netpolicy``)."""
    problem = literal_problem(url)
    if problem is not None:
        raise ValueError(problem)
    return url


def parse_first_run(value: str) -> tuple[str, Any]:
    """``("all"|"new", None)``, ``("since", datetime)`` or ``("last", N)``; ValueError otherwise."""
    text = value.strip() if isinstance(value, str) else ""
    kind, _, arg = text.partition(":")
    try:
        if kind in ("all", "new") and not arg:
            return kind, None
        if kind == "since":
            return kind, datetime.combine(date.fromisoformat(arg), time(0), tzinfo=timezone.utc)
        if kind == "last" and arg.isdigit() and int(arg) > 0:
            return kind, int(arg)
    except ValueError:
        pass
    raise ValueError(f'expected "all", "new", "since:YYYY-MM-DD" or "last:N", found {value!r}')
