"""Field types for plugin settings in ``plugins.toml`` (contract §11.1).

Each plugin type brings a pydantic settings model (subclass of ``Settings``:
unknown keys are refused). The field types here give every type the same
spelling of the same things:

* ``Duration`` — ``"90s"``, ``"5m"``, ``"6h"``, ``"1d"`` (or a number of
  seconds) → ``datetime.timedelta``, positive and at most 365 days (``inf``,
  ``nan`` and ``1e308`` are refused, never an overflow);
* ``ConfigPath`` — ``~`` expanded, a relative path resolved against the
  directory of the plugins.toml it came from (validation context
  ``base_dir``);
* ``EnvName`` — the name of an environment variable holding a secret
  (``password_env = "FOLD_IMAP_PASSWORD"``), or — written ``password_file`` —
  a file holding it (``config_words.file_secrets``); ``env_value`` reads either.

Secrets are never settings themselves: the config loader refuses a
plaintext ``password``/``api_key``/``token``/… with a hint to use the
``*_env`` form.
"""

from __future__ import annotations

import math
import os
import re
from datetime import timedelta
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (BaseModel, BeforeValidator, ConfigDict, Field, ValidationInfo, ValidatorFunctionWrapHandler,
                      WrapValidator)

__all__ = ["FILE_SECRET_PREFIX", "ConfigPath", "Duration", "EnvName", "Settings", "env_value", "parse_duration"]

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(s|m|h|d)\s*$")
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
MAX_DURATION = timedelta(days=365)  # longer is a typo, and 1e308 seconds overflows every clock


def parse_duration(value: Any) -> timedelta:
    """``"90s" | "5m" | "6h" | "1d"`` (or seconds as a number) → timedelta; ValueError otherwise."""
    if isinstance(value, timedelta):
        return value
    if isinstance(value, bool):
        raise ValueError(f'expected a duration like "90s", "5m", "6h" or "1d", found {value!r}')
    if isinstance(value, (int, float)):
        seconds = float(value)
    elif isinstance(value, str) and (match := _DURATION.match(value)):
        seconds = float(match.group(1)) * _UNIT_SECONDS[match.group(2)]
    else:
        raise ValueError(f'expected a duration like "90s", "5m", "6h" or "1d", found {value!r}')
    if not math.isfinite(seconds) or seconds > MAX_DURATION.total_seconds():
        raise ValueError(f'expected a duration like "90s", "5m", "6h" or "1d" of at most '
                         f'{MAX_DURATION.days} days, found {value!r}')
    if seconds <= 0:
        raise ValueError(f"expected a duration like \"90s\" that is positive, found {value!r}")
    return timedelta(seconds=seconds)


def _path(value: Any, handler: ValidatorFunctionWrapHandler, info: ValidationInfo) -> Path:
    if not isinstance(value, (str, Path)) or not str(value):
        raise ValueError(f"expected a path (a non-empty string), found {value!r}")
    path = Path(os.path.expanduser(str(value)))
    base = (info.context or {}).get("base_dir") if info.context else None
    if not path.is_absolute():
        if base is None:
            path = Path.cwd() / path
        else:
            path = Path(base) / path
    return handler(path)


def _env_name(value: Any) -> str:
    if not isinstance(value, str) or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]{0,127}", value):
        raise ValueError(f"expected the name of an environment variable (like FOLD_IMAP_PASSWORD), found {value!r}")
    return value


Duration = Annotated[timedelta, BeforeValidator(parse_duration)]
ConfigPath = Annotated[Path, WrapValidator(_path)]
EnvName = Annotated[str, BeforeValidator(_env_name)]


FILE_SECRET_PREFIX = "file:"  # an *_env setting given as *_file holds "file:<path>" (config_words)


def env_value(name: str | None) -> str | None:
    """The secret an ``*_env`` setting names: the environment variable ``name``, or the file of an ``*_file``.

    A file is read each time (a rotated secret counts at once), without its
    final line break; None when ``name`` is None, the variable is not set or
    the file cannot be read.
    """
    if name is None:
        return None
    if name.startswith(FILE_SECRET_PREFIX):
        try:
            with open(name[len(FILE_SECRET_PREFIX):], encoding="utf-8") as file:
                return file.read().rstrip("\r\n") or None
        except (OSError, UnicodeDecodeError):
            return None
    return os.environ.get(name)


class Settings(BaseModel):
    """Base of every plugin type's settings model: unknown keys are errors."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


class AdapterSettings(Settings):
    """Keys every ``[[adapters]]`` instance understands (besides ``name`` and ``type``)."""

    every: Duration = Field(default=timedelta(minutes=5))
    poll_timeout: Duration = Field(default=timedelta(seconds=120))


class ConsumerSettings(Settings):
    """Keys every ``[[consumers]]`` instance understands (besides ``name`` and ``type``)."""

    from_: str = Field(default="now", alias="from", pattern=r"^(now|start)$", description='"now" or "start"',
                       examples=["start"])
    deliver_timeout: Duration = Field(default=timedelta(seconds=120))


class AgentSettings(Settings):
    """Keys every ``[agent]`` understands (besides ``type``).

    ``timeout`` bounds one attempt in wall-clock time (however slowly an
    answer trickles in); ``max_answer_bytes`` bounds the size of one answer
    (an HTTP body, a program's stdout): a larger one fails that attempt.
    ``fallback = "baseline"``: after ``fallback_after`` windows in a row in
    which this editor could not be reached, windows go to the baseline editor
    (this one is still tried first, every window).
    """

    timeout: Duration = Field(default=timedelta(seconds=120))
    max_answer_bytes: int = Field(default=1024 * 1024, ge=16 * 1024, le=64 * 1024 * 1024)
    fallback: Literal["baseline"] | None = None
    fallback_after: int = Field(default=3, ge=1, le=1000)


class ToolSettings(AgentSettings):
    """Keys of an ``[agent]`` whose model may call the editor's tools (``fold_core.editor_tools``).

    ``max_tool_calls = 0`` offers no tools.
    """

    max_tool_calls: int = Field(default=8, ge=0, le=64)
    max_tool_bytes: int = Field(default=16_384, ge=1024, le=1_048_576)


__all__ += ["AdapterSettings", "AgentSettings", "ConsumerSettings", "ToolSettings"]
