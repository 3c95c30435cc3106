"""The plugin manager and the type registry (contract §11).

``get_plugin_manager()`` builds a fresh pluggy manager (never at import
time): the ``builtins`` the application hands in (``fold_host.plugins``
names Fold's own) are registered exactly like third-party plugins, then the
entry-point group ``fold``, then the modules
named by ``[[plugins]] module = "..."``; ``check_pending()`` makes a misspelled
hook fail at start. ``load_types(pm)`` asks every plugin for its types and
files them by kind; a type name offered twice is a ``ConfigError`` naming
both plugins — never silently renamed.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable
from dataclasses import dataclass, field

import pluggy

from fold_core import hookspecs
from fold_core.errors import ConfigError
from fold_core.plugin_api import Adapter, AgentBackend, Consumer
from fold_core.settings import Settings

__all__ = ["PluginManager", "TypeEntry", "TypeRegistry", "get_plugin_manager", "load_types"]

ENTRY_POINT_GROUP = hookspecs.PROJECT
KINDS = {"adapter": "fold_adapter_types", "consumer": "fold_consumer_types", "agent": "fold_agent_types"}
_BASES: dict[str, type] = {"adapter": Adapter, "consumer": Consumer, "agent": AgentBackend}


class PluginManager(pluggy.PluginManager):
    """pluggy's manager, knowing where each plugin came from."""

    def __init__(self, project_name: str) -> None:
        super().__init__(project_name)
        self.origins: dict[str, str] = {}  # plugin name -> "builtin" | "entry-point" | "module"


def get_plugin_manager(modules: Iterable[str] = (), *, entry_points: bool = True,
                       builtins: Iterable[str] = ()) -> PluginManager:
    """A fresh plugin manager with ``builtins``, the entry points and ``modules`` registered."""
    pm = PluginManager(hookspecs.PROJECT)
    pm.add_hookspecs(hookspecs)
    for name in builtins:
        _register_module(pm, name, "builtin")
    if entry_points:
        before = set(pm.get_plugins())
        try:
            pm.load_setuptools_entrypoints(ENTRY_POINT_GROUP)
        except Exception as error:  # a broken third-party distribution
            raise ConfigError(f"a plugin of the entry-point group {ENTRY_POINT_GROUP!r} failed to load: "
                              f"{type(error).__name__}: {error}") from None
        for plugin in set(pm.get_plugins()) - before:
            plugin_name = pm.get_name(plugin)
            if plugin_name is not None:
                pm.origins[plugin_name] = "entry-point"
    for name in modules:
        _register_module(pm, name, "module")
    try:
        pm.check_pending()
    except pluggy.PluginValidationError as error:
        raise ConfigError(f"plugin {error.plugin!r}: {error}") from None
    return pm


def _register_module(pm: PluginManager, name: str, origin: str) -> None:
    if pm.has_plugin(name):
        return
    try:
        module = importlib.import_module(name)
    except Exception as error:
        where = "built-in plugin" if origin == "builtin" else "[[plugins]] module"
        raise ConfigError(f"{where} {name!r} cannot be imported: {type(error).__name__}: {error}",
                          field="module") from None
    try:
        pm.register(module, name=name)
    except (ValueError, pluggy.PluginValidationError) as error:
        raise ConfigError(f"plugin {name!r} cannot be registered: {error}", field="module") from None
    pm.origins[name] = origin


@dataclass(frozen=True)
class TypeEntry:
    kind: str  # "adapter" | "consumer" | "agent"
    type_name: str
    cls: type
    plugin: str
    origin: str

    def to_json(self) -> dict:
        return {"kind": self.kind, "type": self.type_name, "plugin": self.plugin, "origin": self.origin}

    @property
    def settings_model(self) -> type[Settings]:
        """The type's ``Settings`` model (every registered type has one: ``load_types`` checked its base)."""
        cls = self.cls
        if issubclass(cls, (Adapter, Consumer, AgentBackend)):
            return cls.Settings
        raise TypeError(f"{cls!r} is not an adapter, consumer or agent type")


@dataclass
class TypeRegistry:
    """Every installed type, by kind and name."""

    entries: dict[str, dict[str, TypeEntry]] = field(default_factory=lambda: {kind: {} for kind in KINDS})

    def get(self, kind: str, type_name: str) -> TypeEntry | None:
        return self.entries[kind].get(type_name)

    def names(self, kind: str) -> list[str]:
        return sorted(self.entries[kind])

    def all(self) -> list[TypeEntry]:
        return [entry for kind in KINDS for _, entry in sorted(self.entries[kind].items())]


def load_types(pm: pluggy.PluginManager) -> TypeRegistry:
    """Ask every plugin for its types; a duplicate type name names both plugins."""
    registry = TypeRegistry()
    origins = pm.origins if isinstance(pm, PluginManager) else {}
    for kind, hook_name in KINDS.items():
        base = _BASES[kind]
        for impl in getattr(pm.hook, hook_name).get_hookimpls():
            plugin = impl.plugin_name
            try:
                offered = impl.function()
            except Exception as error:
                raise ConfigError(f"plugin {plugin!r}: {hook_name}() failed: {type(error).__name__}: {error}") from None
            for cls in offered or ():
                name = _check_type(plugin, hook_name, cls, base)
                known = registry.entries[kind].get(name)
                if known is not None:
                    raise ConfigError(
                        f"{kind} type {name!r} is provided by two plugins: {known.plugin!r} ({known.origin})"
                        f" and {plugin!r} ({origins.get(plugin, 'unknown')}); uninstall or rename one")
                registry.entries[kind][name] = TypeEntry(kind, name, cls, plugin, origins.get(plugin, "builtin"))
    return registry


def _check_type(plugin: str, hook_name: str, cls: object, base: type) -> str:
    if not (isinstance(cls, type) and issubclass(cls, base)):
        raise ConfigError(f"plugin {plugin!r}: {hook_name}() returned {cls!r}, expected a subclass of {base.__name__}")
    name = getattr(cls, "type_name", None)
    if not isinstance(name, str) or not name:
        raise ConfigError(f"plugin {plugin!r}: {cls.__name__} has no type_name")
    return name
