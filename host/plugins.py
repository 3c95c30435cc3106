"""Fold's built-in plugins, handed to the core's plugin manager and configuration loader.

The core knows no plugin by name: the application says which modules are
built in. Every host command loads its configuration through ``load_config``
here, so the built-ins are registered exactly like third-party plugins
(entry points, ``[[plugins]] module``) and a type name offered twice is
still an error naming both.
"""

from __future__ import annotations

from typing import Any

from fold_core import config as core_config
from fold_core import netpolicy
from fold_core import plugins as core_plugins
from fold_host.settings import SECTIONS, HostConfig

__all__ = ["BUILTIN_PLUGINS", "RESERVED_NAMES", "load_config", "plugin_manager"]

#: The built-in plugin modules: one per adapter family, consumer and the editors.
BUILTIN_PLUGINS: tuple[str, ...] = (
    "fold_agents.plugin",
    "fold_consumers.briefing",
    "fold_consumers.changelog",
    "fold_consumers.push",
    "fold_host.report.consumer",
    "fold_adapters.mail.imap",
    "fold_adapters.mail.mailbox",
    "fold_adapters.feeds.rss",
    "fold_adapters.worklog.adapter",
)


#: Sources the host itself writes to the inbox: no configured instance may take their names.
RESERVED_NAMES: dict[str, str] = {
    "feedback": "the host's own feedback source (`foldctl feedback`, the Pinboard's buttons)",
    "reminder": "the host's own reminder source (snoozes coming due)",
}


def load_config(given: str | None = None, **options: Any) -> HostConfig:
    """``fold_core.config.load_config`` with the built-ins registered (unless ``builtins`` is given) and the
    host's sections (``fold_host.settings``), typed."""
    options.setdefault("builtins", BUILTIN_PLUGINS)
    options.setdefault("reserved", RESERVED_NAMES)
    config = HostConfig.of(core_config.load_config(given, sections=SECTIONS, **options))
    # Where a feed's redirects and discovered links may lead: the fetchers read it (fold_core.netpolicy).
    netpolicy.allow_private_redirects(config.host.allow_private_redirects)
    return config


def plugin_manager(modules=(), **options):
    """``fold_core.plugins.get_plugin_manager`` with the built-ins registered."""
    options.setdefault("builtins", BUILTIN_PLUGINS)
    return core_plugins.get_plugin_manager(modules, **options)
