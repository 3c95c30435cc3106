"""``plugins.toml`` → validated configuration (contract §11.1).

Found through ``--config FILE``, else ``$FOLD_CONFIG``, else
``./plugins.toml``, else ``$XDG_CONFIG_HOME/fold/plugins.toml``; no file at
all means the embedded defaults (the baseline editor, no sources, no
consumers). Every section and every instance is validated by pydantic (each
type brings its settings model; unknown keys are refused). Every error is a
``ConfigError`` naming the file, the instance and the field, what was
expected (with an example) and what was found, in words (``config_words``).
Secrets are never settings: a plaintext ``password``/``api_key``/``token``/…
is refused with a hint to use its ``*_env`` form, an ``*_env`` naming a
variable that is not set is a startup error, and every ``*_env`` may instead
be ``*_file``, a file only its owner (and group) can read.
"""

from __future__ import annotations

import os
import re
import tomllib
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator, model_validator

from fold_core.config_words import file_secrets, plain_message
from fold_core.configfile import find_config
from fold_core.errors import ConfigError, ConfigErrors
from fold_core.settings import FILE_SECRET_PREFIX, ConfigPath, Duration, EnvName

__all__ = ["Config", "HostSection", "Instance", "McpSection", "PinboardSection", "UserSection", "find_config",
           "load_config"]

INSTANCE_NAME = re.compile(r"^[a-z0-9-]{1,32}$")
SECRET_KEYS = frozenset({"password", "passwd", "pass", "api_key", "apikey", "key", "token", "secret",
                         "access_token", "auth_token", "client_secret", "url_with_password"})
TOP_LEVEL = ("store", "host", "user", "agent", "adapters", "consumers", "plugins", "pinboard", "mcp")
DEFAULT_AGENT = "baseline"


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class StoreSection(_Section):
    """``[store]``: a directory (``path``) or a PostgreSQL database (``url``, ``name``, password)."""

    path: ConfigPath | None = None
    url: str | None = Field(default=None, pattern=r"^postgres(ql)?://")
    name: str | None = Field(default=None, pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
    password_env: EnvName | None = None
    password_file: ConfigPath | None = None

    @model_validator(mode="after")
    def _one_store(self) -> "StoreSection":
        if self.path is not None and self.url is not None:
            raise ValueError("give path or url, not both (a directory, or a PostgreSQL database)")
        if self.url is None and (self.name, self.password_env, self.password_file) != (None, None, None):
            raise ValueError("name, password_env and password_file go with url (a PostgreSQL store)")
        if self.password_env is not None and self.password_file is not None:
            raise ValueError("give password_env or password_file, not both")
        return self


class HostSection(_Section):
    language: Literal["zh", "en"] = "zh"
    timezone: str = "UTC"
    review_every: Duration = Field(default=timedelta(hours=6))
    max_attempts: int = Field(default=3, ge=1, le=10)
    max_events: int = Field(default=50, ge=1, le=1000)
    max_deferred: int = Field(default=20, ge=0, le=1000)
    defer_for: Duration = Field(default=timedelta(days=7))
    keep_observations: Duration | None = None  # processed observations older than this lose their text
    max_backoff: Duration = Field(default=timedelta(days=1))  # the longest wait a server can ask of a source
    lease: Duration = Field(default=timedelta(seconds=30))  # several hosts (PostgreSQL): leases and claims expire

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
        not a reader's; see ``configfile.view_settings`` for the rule.
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


class UserSection(_Section):
    background: str = Field(default="", max_length=4000)
    purpose: str = Field(default="", max_length=4000)
    feedback_policy: str = Field(default="", max_length=4000)


class PinboardSection(_Section):
    host: str = "127.0.0.1"
    port: int = Field(default=8765, ge=1, le=65535)
    token_env: EnvName | None = None


class McpSection(_Section):
    """``foldctl mcp``: the source its reports are filed under, and the token of its HTTP transport.

    The token's variable or file is read when ``foldctl mcp --http`` starts,
    not here: the other commands never need it.
    """

    source: str = "agents"
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
    def _one_token(cls, value, info: ValidationInfo):
        if value is not None and info.data.get("token_env") is not None:
            raise ValueError("give token_env or token_file, not both (found both)")
        return value


class PluginModule(_Section):
    module: str = Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")


@dataclass(frozen=True)
class Instance:
    """One configured adapter, consumer or agent."""

    kind: str
    name: str
    type_name: str
    cls: type
    settings: Any

    def build(self):
        """The plugin object: ``Type(name, settings)`` (an agent: ``Type(settings)``)."""
        if self.kind == "agent":
            return self.cls(self.settings)
        return self.cls(self.name, self.settings)


@dataclass(frozen=True)
class Config:
    path: Path | None
    store: Path | None
    host: HostSection
    user: UserSection
    pinboard: PinboardSection
    agent: Instance | None  # None only when no [agent] is given and no baseline editor is installed
    adapters: tuple[Instance, ...]
    consumers: tuple[Instance, ...]
    plugin_modules: tuple[str, ...]
    registry: Any = field(repr=False, default=None)
    mcp: McpSection = field(default_factory=McpSection)

    @property
    def agent_configured(self) -> bool:
        """False when no ``[agent]`` was given and the baseline editor stands in."""
        return self._agent_given

    _agent_given: bool = False


def load_config(given: str | None = None, *, path: Path | None = None, entry_points: bool = True,
                builtins: tuple[str, ...] = (), reserved: dict[str, str] | None = None) -> Config:
    """Read, validate and resolve plugins.toml (or the embedded defaults).

    ``builtins`` are the application's own plugin modules, registered first
    (``fold_host.plugins.load_config`` passes Fold's). ``reserved`` maps
    instance names the application uses itself to what they name: no
    adapter or consumer may take them.
    """
    from fold_core import plugins

    path = path if path is not None else find_config(given)
    data = _read(path) if path is not None else {}
    where = str(path) if path is not None else "(embedded defaults)"
    base_dir = path.resolve().parent if path is not None else Path.cwd()
    context = {"base_dir": base_dir}
    for key in data:
        if key not in TOP_LEVEL:
            raise ConfigError(f"{where}: unknown section [{key}]; expected one of {', '.join(TOP_LEVEL)}",
                              file=where, field=key)
    modules = tuple(m.module for m in _list(data, "plugins", where, PluginModule, context))
    try:
        pm = plugins.get_plugin_manager(modules, entry_points=entry_points, builtins=builtins)
        registry = plugins.load_types(pm)
    except ConfigError as error:  # say which configuration was being loaded
        if error.file is not None:
            raise
        raise ConfigError(f"{where}: {error}", file=where, instance=error.instance or "[[plugins]]",
                          field=error.field) from None
    problems: list[ConfigError] = []  # every one is reported, so that one edit can fix them all

    def checked(function, *args, **kwargs):
        try:
            return function(*args, **kwargs)
        except ConfigError as error:
            problems.append(error)
            return None

    store = checked(_section, data, "store", where, StoreSection, context)
    host = checked(_section, data, "host", where, HostSection, context)
    user = checked(_section, data, "user", where, UserSection, context)
    pinboard = checked(_section, data, "pinboard", where, PinboardSection, context)
    if pinboard is not None:
        checked(_check_env, pinboard, where, "[pinboard]", "[pinboard]")
    if store is not None:
        checked(_check_env, store, where, "[store]", "[store]")
    mcp = checked(_section, data, "mcp", where, McpSection, context)
    agent_given = "agent" in data
    agent = None
    if agent_given or registry.get("agent", DEFAULT_AGENT) is not None:
        agent_table = checked(_table, data.get("agent", {"type": DEFAULT_AGENT}), where, "[agent]")
        if agent_table is not None:
            agent = checked(_instance, "agent", "agent", agent_table, where, registry, context, label="[agent]")
    seen: dict[str, str] = dict(reserved or {})
    adapters = tuple(_instances(data, "adapters", "adapter", where, registry, context, seen, checked))
    consumers = tuple(_instances(data, "consumers", "consumer", where, registry, context, seen, checked))
    if problems:
        raise problems[0] if len(problems) == 1 else ConfigErrors(problems)
    return Config(path=path, store=store.path, host=host, user=user, pinboard=pinboard, agent=agent,
                  adapters=adapters, consumers=consumers, plugin_modules=modules, registry=registry,
                  mcp=mcp, _agent_given=agent_given)


def _read(path: Path) -> dict:
    try:
        with open(path, "rb") as file:
            return tomllib.load(file)
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"{path}: not valid TOML: {error}", file=str(path)) from None
    except RecursionError:
        raise ConfigError(f"{path}: not usable TOML: arrays or tables nested too deeply", file=str(path)) from None
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigError(f"{path}: cannot be read: {error}", file=str(path)) from None


def _table(value: Any, where: str, label: str) -> dict:
    if not isinstance(value, dict):
        raise ConfigError(f"{where}: {label} must be a table, found {_kind(value)}", file=where, field=label)
    return value


def _list(data: dict, key: str, where: str, model: type[BaseModel], context: dict) -> list:
    tables = data.get(key, [])
    if not isinstance(tables, list):
        raise ConfigError(f"{where}: {key} must be an array of tables ([[{key}]]), found {_kind(tables)}",
                          file=where, field=key)
    return [_validate(model, _table(t, where, f"[[{key}]]"), where, f"[[{key}]] #{i + 1}", None, context)
            for i, t in enumerate(tables)]


def _section(data: dict, key: str, where: str, model: type[BaseModel], context: dict):
    return _validate(model, _table(data.get(key, {}), where, f"[{key}]"), where, f"[{key}]", None, context)


def _instances(data, key, kind, where, registry, context, seen, checked):
    """The instances of ``[[key]]`` that are right; ``checked`` keeps the problems of the others."""
    tables = data.get(key, [])
    if not isinstance(tables, list):
        checked(_fail, f"{where}: {key} must be an array of tables ([[{key}]]), found {_kind(tables)}",
                file=where, field=key)
        return
    for index, table in enumerate(tables):
        found = checked(_one_instance, index, table, key, kind, where, registry, context, seen)
        if found is not None:
            yield found


def _one_instance(index, table, key, kind, where, registry, context, seen) -> Instance:
    table = _table(table, where, f"[[{key}]] #{index + 1}")
    name = table.get("name")
    label = f"[[{key}]] #{index + 1}"
    if not isinstance(name, str) or not INSTANCE_NAME.match(name):
        raise ConfigError(f"{where}: {label}, field 'name': expected an instance name matching "
                          f"[a-z0-9-]{{1,32}}, found {name!r}", file=where, instance=label, field="name")
    if name in seen:
        taken = seen[name]
        why = (f"the name is already used by {taken}; instance names are unique across the file"
               if taken.startswith("[[") else f"{name!r} is the name of {taken}; choose another name")
        raise ConfigError(f"{where}: [[{key}]] {name!r}, field 'name': {why}", file=where, instance=name,
                          field="name")
    seen[name] = f"[[{key}]] #{index + 1}"
    return _instance(kind, name, table, where, registry, context, label=f"[[{key}]] {name!r}")


def _fail(message: str, **where) -> None:
    raise ConfigError(message, **where)


def _instance(kind, name, table, where, registry, context, *, label) -> Instance:
    type_name = table.get("type")
    known = registry.names(kind)
    if not isinstance(type_name, str):
        raise ConfigError(f"{where}: {label}, field 'type': expected one of the installed {kind} types "
                          f"({', '.join(known) or 'none'}), found {type_name!r}",
                          file=where, instance=name, field="type")
    entry = registry.get(kind, type_name)
    if entry is None:
        raise ConfigError(f"{where}: {label}, field 'type': unknown {kind} type {type_name!r}; installed: "
                          f"{', '.join(known) or 'none'} (see `foldctl plugins`)", file=where, instance=name,
                          field="type")
    settings_model = entry.cls.Settings
    raw = {k: v for k, v in table.items() if k not in ("name", "type")}
    _refuse_secrets(raw, settings_model, where, label, name)
    settings = _validate(settings_model, raw, where, f"{label} (type {type_name!r})", name, context)
    _check_env(settings, where, label, name)
    return Instance(kind, name, type_name, entry.cls, settings)


def _refuse_secrets(raw: dict, model: type[BaseModel], where: str, label: str, name: str) -> None:
    fields = model.model_fields
    for key, value in raw.items():
        if key in fields:
            continue
        if f"{key}_env" in fields or key.lower() in SECRET_KEYS or key == "urls":
            hint = f"{key}_env" if f"{key}_env" in fields else "a *_env setting"
            raise ConfigError(
                f"{where}: {label}, field {key!r}: secrets are never written in plugins.toml; put it in an "
                f"environment variable and name that variable with {hint} = \"MY_VARIABLE\" (or put it in a "
                f"file only you can read and name the file with {hint.replace('_env', '_file')})",
                file=where, instance=name, field=key)


def _check_env(settings: BaseModel, where: str, label: str, name: str) -> None:
    for key in type(settings).model_fields:
        if not key.endswith("_env"):
            continue
        variable = getattr(settings, key)
        if isinstance(variable, str) and not variable.startswith(FILE_SECRET_PREFIX) and variable not in os.environ:
            raise ConfigError(f"{where}: {label}, field {key!r}: the environment variable {variable} is not set",
                              file=where, instance=name, field=key)


def _validate(model: type[BaseModel], raw: dict, where: str, label: str, name: str | None, context: dict):
    raw = dict(raw)
    secrets = file_secrets(model, raw, where=where, label=label, name=name, base_dir=context["base_dir"])
    try:
        settings = model.model_validate(raw, context=context)
    except ValidationError as error:
        first = error.errors()[0]
        field_name = ".".join(str(part) for part in first["loc"]) or "(section)"
        if first["type"] == "extra_forbidden":
            allowed = ", ".join(sorted(f.alias or k for k, f in model.model_fields.items()))
            message = f"unknown key; expected one of: {allowed}"
            if field_name.endswith("_file") and f"{field_name[:-5]}_env" not in model.model_fields:
                message += f" (only a secret's *_env setting may be given as *_file)"
        elif first["type"] == "missing":
            message = "required, but missing"
        else:
            message = plain_message(model, first)
        raise ConfigError(f"{where}: {label}, field {field_name!r}: {message}", file=where, instance=name or label,
                          field=field_name) from None
    return settings.model_copy(update=secrets) if secrets else settings


def _kind(value: Any) -> str:
    return {dict: "a table", list: "an array", str: "a string", int: "an integer", float: "a number",
            bool: "a boolean"}.get(type(value), type(value).__name__)
