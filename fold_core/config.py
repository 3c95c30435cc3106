"""``plugins.toml`` → validated configuration (contract §11.1).

Found through ``--config FILE``, else ``$FOLD_CONFIG``, else
``./plugins.toml``, else ``$XDG_CONFIG_HOME/fold/plugins.toml``; no file at
all means the embedded defaults (the baseline editor, no sources, no
consumers). The core's sections are ``[store]``, ``[user]``, ``[agent]``,
``[[adapters]]``, ``[[consumers]]`` and ``[[plugins]]``; an application hands
in its own (``fold_host.settings``: ``[host]``, ``[pinboard]``, ``[mcp]``).
Every section and every instance is validated by pydantic (each
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
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, ParamSpec, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from fold_core.config_words import file_secrets, plain_message
from fold_core.configfile import find_config, read_toml
from fold_core.errors import ConfigError, ConfigErrors
from fold_core.plugins import TypeRegistry, get_plugin_manager, load_types
from fold_core.settings import FILE_SECRET_PREFIX, ConfigPath, EnvName

__all__ = ["Config", "Instance", "Section", "UserSection", "find_config", "load_config"]

INSTANCE_NAME = re.compile(r"^[a-z0-9-]{1,32}$")
SECRET_KEYS = frozenset({"password", "passwd", "pass", "api_key", "apikey", "key", "token", "secret",
                         "access_token", "auth_token", "client_secret", "url_with_password"})
CORE_SECTIONS = ("store", "user", "agent", "adapters", "consumers", "plugins")
DEFAULT_AGENT = "baseline"

P = ParamSpec("P")
T = TypeVar("T")
M = TypeVar("M", bound=BaseModel)


class Section(BaseModel):
    """Base of a plugins.toml section's model (the core's, and those an application hands ``load_config``).

    Unknown keys are errors. Every ``*_env`` variable a section names must be
    set when the file is loaded, unless its model says ``env_at_load = False``
    (the one command that needs the secret reads it, and says so).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)
    env_at_load: ClassVar[bool] = True


class StoreSection(Section):
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


class UserSection(Section):
    """``[user]``: who the editor works for (handed to the editor with every window)."""

    background: str = Field(default="", max_length=4000)
    purpose: str = Field(default="", max_length=4000)
    feedback_policy: str = Field(default="", max_length=4000)


class PluginModule(Section):
    module: str = Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")


@dataclass(frozen=True)
class Instance:
    """One configured adapter, consumer or agent."""

    kind: str
    name: str
    type_name: str
    cls: type
    settings: Any

    def build(self) -> Any:
        """The plugin object: ``Type(name, settings)`` (an agent: ``Type(settings)``)."""
        if self.kind == "agent":
            return self.cls(self.settings)
        return self.cls(self.name, self.settings)


@dataclass(frozen=True)
class Config:
    """A loaded plugins.toml: the core's sections, the instances, and the application's ``sections`` by name."""

    path: Path | None
    store: Path | None
    user: UserSection
    agent: Instance | None  # None only when no [agent] is given and no baseline editor is installed
    adapters: tuple[Instance, ...]
    consumers: tuple[Instance, ...]
    plugin_modules: tuple[str, ...]
    registry: TypeRegistry = field(repr=False, default_factory=TypeRegistry)
    sections: Mapping[str, Section] = field(default_factory=dict)  # validated with the models handed in

    @property
    def agent_configured(self) -> bool:
        """False when no ``[agent]`` was given and the baseline editor stands in."""
        return self._agent_given

    _agent_given: bool = False


def load_config(given: str | None = None, *, path: Path | None = None, entry_points: bool = True,
                builtins: tuple[str, ...] = (), reserved: Mapping[str, str] | None = None,
                sections: Mapping[str, type[Section]] | None = None) -> Config:
    """Read, validate and resolve plugins.toml (or the embedded defaults).

    ``builtins`` are the application's own plugin modules, registered first
    (``fold_host.plugins.load_config`` passes Fold's). ``reserved`` maps
    instance names the application uses itself to what they name: no
    adapter or consumer may take them. ``sections`` are the application's
    own sections (``[host]``…), each name with its model: validated like the
    core's, they are in ``Config.sections``.
    """
    sections = dict(sections or {})
    if set(sections) & set(CORE_SECTIONS):
        raise ValueError(f"the core's own sections cannot be given again: {sorted(set(sections) & set(CORE_SECTIONS))}")
    path = path if path is not None else find_config(given)
    data = read_toml(path) if path is not None else {}
    where = str(path) if path is not None else "(embedded defaults)"
    base_dir = path.resolve().parent if path is not None else Path.cwd()
    context = {"base_dir": base_dir}
    known = (*CORE_SECTIONS, *sections)
    for key in data:
        if key not in known:
            raise ConfigError(f"{where}: unknown section [{key}]; expected one of {', '.join(known)}",
                              file=where, field=key)
    modules = tuple(m.module for m in _list(data, "plugins", where, PluginModule, context))
    try:
        registry = load_types(get_plugin_manager(modules, entry_points=entry_points, builtins=builtins))
    except ConfigError as error:  # say which configuration was being loaded
        if error.file is not None:
            raise
        raise ConfigError(f"{where}: {error}", file=where, instance=error.instance or "[[plugins]]",
                          field=error.field) from None
    problems = _Problems()  # every one is reported, so that one edit can fix them all
    checked = problems.checked
    store = checked(_section, data, "store", where, StoreSection, context)
    if store is not None:
        checked(_check_env, store, where, "[store]", "[store]")
    user = checked(_section, data, "user", where, UserSection, context)
    own: dict[str, Section] = {}
    for name, model in sections.items():
        section = checked(_section, data, name, where, model, context)
        if section is not None:
            own[name] = section
            if model.env_at_load:
                checked(_check_env, section, where, f"[{name}]", f"[{name}]")
    agent_given = "agent" in data
    agent = None
    if agent_given or registry.get("agent", DEFAULT_AGENT) is not None:
        agent_table = checked(_table, data.get("agent", {"type": DEFAULT_AGENT}), where, "[agent]")
        if agent_table is not None:
            agent = checked(_instance, "agent", "agent", agent_table, where, registry, context, label="[agent]")
    seen: dict[str, str] = dict(reserved or {})
    adapters = tuple(_instances(data, "adapters", "adapter", where, registry, context, seen, checked))
    consumers = tuple(_instances(data, "consumers", "consumer", where, registry, context, seen, checked))
    if problems.found or store is None or user is None:
        raise problems.error()
    return Config(path=path, store=store.path, user=user, agent=agent, adapters=adapters, consumers=consumers,
                  plugin_modules=modules, registry=registry, sections=own, _agent_given=agent_given)


class _Problems:
    """The problems found so far: a check that fails is noted, and the loading goes on."""

    def __init__(self) -> None:
        self.found: list[ConfigError] = []

    def checked(self, function: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T | None:
        try:
            return function(*args, **kwargs)
        except ConfigError as error:
            self.found.append(error)
            return None

    def error(self) -> ConfigError:
        return self.found[0] if len(self.found) == 1 else ConfigErrors(self.found)


def _table(value: Any, where: str, label: str) -> dict:
    if not isinstance(value, dict):
        raise ConfigError(f"{where}: {label} must be a table, found {_kind(value)}", file=where, field=label)
    return value


def _list(data: dict, key: str, where: str, model: type[M], context: dict) -> list[M]:
    tables = data.get(key, [])
    if not isinstance(tables, list):
        raise ConfigError(f"{where}: {key} must be an array of tables ([[{key}]]), found {_kind(tables)}",
                          file=where, field=key)
    return [_validate(model, _table(t, where, f"[[{key}]]"), where, f"[[{key}]] #{i + 1}", None, context)
            for i, t in enumerate(tables)]


def _section(data: dict, key: str, where: str, model: type[M], context: dict) -> M:
    return _validate(model, _table(data.get(key, {}), where, f"[{key}]"), where, f"[{key}]", None, context)


def _instances(data: dict, key: str, kind: str, where: str, registry: TypeRegistry, context: dict,
               seen: dict[str, str], checked: Callable[..., Any]) -> Iterator[Instance]:
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


def _one_instance(index: int, table: Any, key: str, kind: str, where: str, registry: TypeRegistry, context: dict,
                  seen: dict[str, str]) -> Instance:
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


def _fail(message: str, **where: Any) -> None:
    raise ConfigError(message, **where)


def _instance(kind: str, name: str, table: dict, where: str, registry: TypeRegistry, context: dict, *,
              label: str) -> Instance:
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
    settings_model = entry.settings_model
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


def _validate(model: type[M], raw: dict, where: str, label: str, name: str | None, context: dict) -> M:
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
