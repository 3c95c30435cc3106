"""``Host``: what the cycles of one store need, built once from the configuration (contract §9–§11).

The store, the host database (host.db, or the host tables of a store in
PostgreSQL, shared by several hosts), the sources with their poller, the
consumers, the editor with its skill. ``foldctl tick`` builds one per run;
the daemon keeps one between cycles and builds the next beside it on a
reload (``reuse``: the store, the poller and every unchanged source are
kept). ``fold_host.cycle.pipeline`` runs the cycles over it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from fold_core.config import Instance
from fold_core.errors import ConfigError
from fold_core.plugin_api import Adapter, AgentBackend
from fold_core.store.base import Store
from fold_core.store.locate import create, open_store
from fold_core.store.location import is_url
from fold_core.store.meta import DEFAULT_BUDGET
from fold_host.cycle.sources import Poller, coverage
from fold_host.hostdb import HostDB, open_host_db
from fold_host.hostdb.guard import HostDBGuard
from fold_host.settings import HostConfig
from fold_host.skill import load_skill, output_schema

if TYPE_CHECKING:
    from fold_host.hostdb.pg.database import PgHostPool

__all__ = ["Host", "same_instance"]


class Host:
    """What cycles need, built once from the configuration (the daemon keeps it between cycles)."""

    def __init__(self, config: HostConfig, location: str, *, reuse: Host | None = None,
                 holder: str | None = None) -> None:
        """``reuse``: the running host a reload replaces — its store, poller and unchanged sources are kept.

        ``holder``: this host's id among several (a store in PostgreSQL: ``presence``).
        """
        if config.agent is None:
            where = str(config.path) if config.path else "(embedded defaults)"
            raise ConfigError(f"{where}: [agent], field 'type': no editor: no [agent] is configured and no "
                              "baseline editor is installed", file=where, instance="agent", field="type")
        self.config, self.location = config, location
        self.holder: str | None = reuse.holder if reuse is not None else holder
        create(location, DEFAULT_BUDGET)  # a cycle writes: like commit, it creates the store on first use
        self.store: Store = reuse.store if reuse is not None else open_store(location)
        self._pool: PgHostPool | None = reuse._pool if reuse is not None else None
        if self._pool is None and is_url(location):  # the host's tables: in the store's database, shared
            # lazy: psycopg loads only for a store in PostgreSQL
            from fold_host.hostdb.pg.database import PgHostPool

            self._pool = PgHostPool(location, holder=self.holder, lease=config.host.lease.total_seconds())
        kept = {instance.name: (instance, adapter) for instance, adapter in reuse.adapters} if reuse else {}
        self.adapters: list[tuple[Instance, Adapter]] = [
            (instance, kept[instance.name][1]) if same_instance(kept.get(instance.name), instance)
            else (instance, _build(instance)) for instance in config.adapters]
        self.consumers = config.consumers
        self.agent_instance: Instance = config.agent
        self.agent: AgentBackend = _build(config.agent)
        self.agent_type = config.agent.type_name
        self.agent_is_default = not config.agent_configured
        self.actor = f"agent:{self.agent_type}"
        self.skill = load_skill(config.host.language)
        self.output_schema = output_schema()
        self.poller: Poller = reuse.poller if reuse is not None else Poller(config.host.max_backoff)
        # The daemon's HostDBGuard: its connections check host.db is still the same file.
        self.guard: HostDBGuard | None = reuse.guard if reuse is not None else None

    @property
    def store_dir(self) -> str:
        """The store's location (a directory, or a URL): the name older callers use."""
        return self.location

    def open_db(self) -> HostDB:
        if self._pool is not None:
            return self._pool.open()
        if self.guard is not None:
            return self.guard.open()
        return open_host_db(self.location)

    def describe_agent(self) -> str:
        text: str = getattr(self.agent, "describe", lambda: self.agent_type)()
        if self.agent_is_default:
            text += ", the default: no [agent] in plugins.toml"
        return text

    def coverage(self, db: HostDB) -> list[dict]:
        return coverage(db, self.adapters)

    def close(self, *, refresh_snapshot: bool = False) -> None:
        """Release the adapters; a long-lived host (the daemon) also brings the snapshot up to date.

        One ``tick`` does not refresh it: like ``foldctl commit``, that would rewrite it on every run.
        """
        for _, adapter in self.adapters:
            try:
                adapter.close()
            except Exception:  # closing is best effort; the cycle's data is already safe
                pass
        if refresh_snapshot:
            self.store.recorder.close()
            if self._pool is not None:
                self._pool.close()


def same_instance(kept: tuple[Instance, Adapter] | None, instance: Instance) -> bool:
    """Whether a running ``(instance, adapter)`` has the type and settings of ``instance`` (a reload keeps it)."""
    return kept is not None and kept[0].type_name == instance.type_name and kept[0].settings == instance.settings


def _build(instance: Instance) -> Any:
    try:
        return instance.build()
    except Exception as error:
        raise ConfigError(f"{instance.kind} {instance.name!r} (type {instance.type_name!r}) could not be set up: "
                          f"{type(error).__name__}: {error}", instance=instance.name, field="type") from None
