"""Fold's hook specifications (contract §11): the only ways a plugin plugs in.

Project name ``"fold"``; every hook is named ``fold_…`` and called with
keyword arguments only (adding a parameter is compatible, renaming one is
breaking). Registration hooks return lists of **type classes**; the host
validates them in one place (``fold_core.plugins``), where a type name given
by two plugins is a startup error naming both.

A plugin module needs one import::

    from fold_core import hookimpl

    @hookimpl
    def fold_adapter_types():
        return [MyAdapter]
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pluggy

if TYPE_CHECKING:
    from fold_core.plugin_api import Adapter, AgentBackend, Consumer

__all__ = ["PROJECT", "hookimpl", "hookspec"]

PROJECT = "fold"
hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


# -- adapters --------------------------------------------------------------------


@hookspec
def fold_adapter_types() -> list[type[Adapter]]:
    """Inbound adapter types this plugin provides.

    :return: classes derived from ``fold_core.plugin_api.Adapter``, each with a
        unique ``type_name`` (used as ``type = "..."`` in ``[[adapters]]``), a
        ``channel`` and a ``Settings`` model.
    """
    raise NotImplementedError  # a specification: pluggy calls the plugins' implementations, never this


# -- agents ----------------------------------------------------------------------


@hookspec
def fold_agent_types() -> list[type[AgentBackend]]:
    """Editor (agent) backend types this plugin provides.

    :return: classes derived from ``fold_core.plugin_api.AgentBackend``, each with
        a unique ``type_name`` (used as ``type = "..."`` in ``[agent]``) and a
        ``Settings`` model.
    """
    raise NotImplementedError  # a specification


# -- consumers -------------------------------------------------------------------


@hookspec
def fold_consumer_types() -> list[type[Consumer]]:
    """Downstream consumer types this plugin provides.

    :return: classes derived from ``fold_core.plugin_api.Consumer``, each with a
        unique ``type_name`` (used as ``type = "..."`` in ``[[consumers]]``) and a
        ``Settings`` model.
    """
    raise NotImplementedError  # a specification
