"""``foldctl doctor --probe``: try each source's login and the editor's endpoint now, in bounded time.

A source type that can try its credentials without reading anything
(``Adapter.probe``: the IMAP login) is asked to; the editor backend is asked
for its model list (``AgentBackend.probe``). Every attempt runs on a worker
thread of its own and is waited for at most ``PROBE_TIMEOUT`` seconds, all of
them at once, so a dead server costs one timeout, not one per source. A type
with nothing to try adds no check.
"""

from __future__ import annotations

import time
from functools import partial

from fold_core.bounded import Job, Worker
from fold_core.config import Config
from fold_core.plugin_api import AgentUnavailable
from fold_host.words import Sentence

__all__ = ["PROBE_TIMEOUT", "probe_all"]

PROBE_TIMEOUT = 15.0  # seconds every probe may take


def probe_all(config: Config, timeout: float = PROBE_TIMEOUT) -> list[dict]:
    """One check per source that can be probed, and one for the editor."""
    started: list[tuple[str, Worker, Job]] = []
    for instance in config.adapters:
        worker = Worker(f"probe-{instance.name}")
        job = worker.submit(partial(_probe_source, instance, timeout))
        started.append((f"probe source {instance.name}", worker, job))
    if config.agent is not None:
        worker = Worker("probe-editor")
        started.append(("probe editor", worker, worker.submit(lambda: _probe_agent(config.agent, timeout))))
    deadline = time.monotonic() + timeout + 1.0
    checks = []
    for name, worker, job in started:
        try:
            outcome = job.wait(deadline - time.monotonic())
        except TimeoutError:
            outcome = ("fail", Sentence("no answer within {seconds}s", seconds=f"{timeout:g}"))
        finally:
            worker.stop()
        if outcome is not None:
            checks.append({"name": name, "status": outcome[0], "detail": outcome[1]})
    return checks


def _probe_source(instance, timeout: float) -> tuple[str, str] | None:
    try:
        adapter = instance.build()
    except Exception as error:
        return "fail", Sentence("type {type} cannot be set up: {error}", type=instance.type_name,
                                error=f"{type(error).__name__}: {error}")
    try:
        health = adapter.probe(timeout=timeout)
    except Exception as error:  # a plugin's probe that raises: still only this check
        return "fail", f"{type(error).__name__}: {error}"
    finally:
        try:
            adapter.close()
        except Exception:
            pass
    if health is None:
        return None
    if health.status == "ok":
        return "ok", "; ".join(health.notes) or Sentence("reachable")
    return "fail", f"{health.error_class}: {health.message}"


def _probe_agent(agent, timeout: float) -> tuple[str, str] | None:
    try:
        answer = agent.build().probe(timeout=timeout)
    except AgentUnavailable as error:
        return "fail", f"{error.error_class}: {error}"
    except Exception as error:
        return "fail", f"{type(error).__name__}: {error}"
    return None if answer is None else ("ok", answer)
