"""SIGHUP: the daemon reads plugins.toml again and takes the new configuration without a restart.

``reload(daemon, load_config)``:

* a file that does not load (bad TOML, a wrong setting, a missing secret)
  changes nothing: the running configuration stays and every error is
  logged, one ``reload`` line each;
* a file whose ``[store] path`` changed is refused the same way (one daemon
  per store: restart it to move);
* otherwise a new ``Host`` is built beside the running one, keeping its
  store, its poller and every source whose type and settings did not change
  (``cycle.same_instance``): an added source gets its poll job and is polled
  at once, a removed one loses its job and is closed, a changed one gets a
  new job with its new settings; consumers, the editor and ``[host]`` /
  ``[user]`` take effect from the next cycle (a new consumer starts at the
  event_seq current then, like at a start). A job running during the swap
  finishes with what it started with.

One ``reload`` line says what changed.
"""

from __future__ import annotations

from collections.abc import Callable
from zoneinfo import ZoneInfo

from fold_core.errors import ConfigError, FoldError
from fold_host.cycle.pipeline import Host
from fold_host.daemon.scheduler import Daemon
from fold_host.settings import HostConfig

__all__ = ["reload"]


def reload(daemon: Daemon, load_config: Callable[[], HostConfig]) -> bool:
    """Apply the configuration ``load_config()`` returns; False (and logged) when it is refused."""
    log, running = daemon.log, daemon.host
    try:
        config = load_config()
        refused = _store_moved(running, config)
        if refused:
            log("reload", outcome="refused", error=refused)
            return False
        host = Host(config, running.store_dir, reuse=running)
    except ConfigError as error:
        problems = getattr(error, "problems", None) or [error]
        for problem in problems:
            log("reload", outcome="refused", error=str(problem))
        log("reload", outcome="kept", detail=f"{len(problems)} error(s): the running configuration stays")
        return False
    except FoldError as error:
        log("reload", outcome="refused", error=f"{type(error).__name__}: {error}")
        return False
    changes = _swap(daemon, running, host)
    log("reload", outcome="applied", **changes)
    daemon.request_cycle("reload")
    return True


def _store_moved(running: Host, config: HostConfig) -> str | None:
    if config.store != running.config.store:
        return (f"[store] path changed ({running.config.store} → {config.store}); this daemon works on "
                f"{running.store_dir}: restart it to move")
    return None


def _swap(daemon: Daemon, running: Host, host: Host) -> dict:
    """Put ``host`` in place of ``running``; the poll jobs follow the sources. What changed, for the log."""
    old = {instance.name: (instance, adapter) for instance, adapter in running.adapters}
    new = {instance.name: (instance, adapter) for instance, adapter in host.adapters}
    added = sorted(set(new) - set(old))
    removed = sorted(set(old) - set(new))
    changed = sorted(name for name in set(old) & set(new) if new[name][1] is not old[name][1])
    daemon.host = host
    daemon.zone = ZoneInfo(host.config.host.timezone)
    daemon.log.zone = daemon.zone
    for name in removed + changed:
        try:
            daemon.scheduler.remove_job(f"poll:{name}")
        except Exception:  # already gone (a job lookup error): nothing to remove
            pass
        daemon.stop_watcher(name)
        try:
            old[name][1].close()
        except Exception:  # closing is best effort
            pass
    for name in added + changed:
        daemon.add_source(*new[name])
        daemon.start_watcher(*new[name])
    consumers_before = {instance.name for instance in running.consumers}
    consumers_now = {instance.name for instance in host.consumers}
    return {"sources_added": added or None, "sources_removed": removed or None, "sources_changed": changed or None,
            "consumers_added": sorted(consumers_now - consumers_before) or None,
            "consumers_removed": sorted(consumers_before - consumers_now) or None,
            "editor": host.describe_agent() if host.describe_agent() != running.describe_agent() else None}
