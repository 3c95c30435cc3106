"""The host's own sections of plugins.toml, and the configuration the host reads them from (contract §11.1).

``[host]`` (the windows, the editor's attempts, the language and time zone
a person reads), ``[pinboard]`` (the web page) and ``[mcp]`` (``foldctl
mcp``) belong to the application, not to the core: ``fold_host.plugins.
load_config`` hands ``SECTIONS`` to the core's loader, which validates them
like its own, and returns a ``HostConfig`` — the core's ``Config`` with
these three sections typed.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from datetime import timedelta
from typing import ClassVar, Literal, TypeVar

from pydantic import Field, ValidationInfo, field_validator

from fold_core.config import INSTANCE_NAME, Config, Section
from fold_core.settings import ConfigPath, Duration, EnvName

__all__ = ["SECTIONS", "HostConfig", "HostSection", "McpSection", "PinboardSection"]


class HostSection(Section):
    language: Literal["zh", "en"] = "zh"
    timezone: str = "UTC"
    review_every: Duration = Field(default=timedelta(hours=6))
    input_delay: Duration = Field(default=timedelta(seconds=10))  # the user's word wakes the daemon this soon
    max_attempts: int = Field(default=3, ge=1, le=10)
    max_events: int = Field(default=50, ge=1, le=1000)
    max_deferred: int = Field(default=20, ge=0, le=1000)
    defer_for: Duration = Field(default=timedelta(days=7))
    keep_observations: Duration | None = None  # processed observations older than this lose their text
    max_backoff: Duration = Field(default=timedelta(days=1))  # the longest wait a server can ask of a source
    lease: Duration = Field(default=timedelta(seconds=30))  # several hosts (PostgreSQL): leases and claims expire
    allow_private_redirects: bool = False  # a feed's redirect or discovered link may lead to a private address

    @field_validator("lease")
    @classmethod
    def _lease(cls, value: timedelta) -> timedelta:
        if not timedelta(seconds=3) <= value <= timedelta(hours=1):
            raise ValueError(f"expected a duration from 3s to 1h, found {int(value.total_seconds())}s")
        return value

    @property
    def reader_language(self) -> str:
        """The language of what a person reads: ``language`` when the file writes it, else English.

        ``language``'s default (zh) is the editor's instructions' (the skill's),
        not a reader's; see ``fold_core.configfile.view_settings`` for the rule.
        """
        return self.language if "language" in self.model_fields_set else "en"

    @field_validator("timezone")
    @classmethod
    def _zone(cls, value: str) -> str:
        from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

        try:
            ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError(f"expected an IANA time zone name like Asia/Shanghai, found {value!r}") from None
        return value


class PinboardSection(Section):
    host: str = "127.0.0.1"
    port: int = Field(default=8765, ge=1, le=65535)
    token_env: EnvName | None = None
    public_url: str | None = None  # where the Pinboard is reached from outside: push links to its item pages

    @field_validator("public_url")
    @classmethod
    def _public_url(cls, value: str | None) -> str | None:
        if value is None:
            return None
        if not value.startswith(("https://", "http://")) or any(char.isspace() for char in value) or len(value) > 300:
            raise ValueError(f"expected an http(s) URL without spaces like https://fold.example.org, found {value!r}")
        return value.rstrip("/")


class McpSection(Section):
    """``foldctl mcp``: the source its reports are filed under, and the token of its HTTP transport.

    The token's variable or file is read when ``foldctl mcp --http`` starts,
    not here: the other commands never need it.
    """

    env_at_load: ClassVar[bool] = False

    source: str = "agents"
    max_reports_per_hour: int = Field(default=120, ge=1, le=100_000)
    token_env: EnvName | None = None
    token_file: ConfigPath | None = None

    @field_validator("source")
    @classmethod
    def _source_name(cls, value: str) -> str:
        if not INSTANCE_NAME.match(value):
            raise ValueError(f"expected a source name matching [a-z0-9-]{{1,32}}, found {value!r}")
        return value

    @field_validator("token_file")
    @classmethod
    def _one_token(cls, value: object, info: ValidationInfo) -> object:
        if value is not None and info.data.get("token_env") is not None:
            raise ValueError("give token_env or token_file, not both (found both)")
        return value


#: The host's sections, in the order they are validated (after the core's [store] and [user]).
SECTIONS: dict[str, type[Section]] = {"host": HostSection, "pinboard": PinboardSection, "mcp": McpSection}

S = TypeVar("S", bound=Section)


@dataclass(frozen=True, kw_only=True)
class HostConfig(Config):
    """The core's ``Config`` with the host's sections typed."""

    host: HostSection
    pinboard: PinboardSection
    mcp: McpSection

    @classmethod
    def of(cls, config: Config) -> HostConfig:
        """``config`` (loaded with ``SECTIONS``) with its host sections as typed fields."""
        core = {item.name: getattr(config, item.name) for item in fields(Config)}
        return cls(**core, host=_section(config, "host", HostSection),
                   pinboard=_section(config, "pinboard", PinboardSection), mcp=_section(config, "mcp", McpSection))


def _section(config: Config, name: str, model: type[S]) -> S:
    value = config.sections.get(name)
    if not isinstance(value, model):
        raise TypeError(f"the configuration was not loaded with the host's [{name}] section")
    return value
