"""Many feeds fetched at once, politely: a bounded pool, a cap per host, one deadline (contract §10).

``run_polite(tasks, workers=…, per_host=…, deadline_at=…)`` runs each
task's function on a pool of at most ``workers`` threads, with at most
``per_host`` running at once against the same host, and returns each task's
value by key. The tasks are taken round-robin over the hosts, so a host with
many feeds never keeps the others waiting behind its cap. A task that could
not start before ``deadline_at`` (``time.monotonic()``) is left out of the
answer — its feed keeps its state and comes first next time; a task that
raised is answered with the exception (the caller turns it into that feed's
failure). Each function is called with the seconds left until the deadline.
"""

from __future__ import annotations

import threading
import time
from collections import defaultdict, deque
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

__all__ = ["Task", "host_of", "run_polite"]


@dataclass(frozen=True)
class Task:
    key: Hashable
    host: str
    function: Callable[[float], Any]


def host_of(url: str) -> str:
    """The host a URL names (lower case; the whole URL when it names none)."""
    try:
        return (urlsplit(url).hostname or url).lower()
    except ValueError:
        return url


def _round_robin(tasks: list[Task]) -> list[Task]:
    by_host: dict[str, deque] = defaultdict(deque)
    for task in tasks:
        by_host[task.host].append(task)
    ordered, queues = [], deque(by_host.values())
    while queues:
        queue = queues.popleft()
        ordered.append(queue.popleft())
        if queue:
            queues.append(queue)
    return ordered


def run_polite(tasks: list[Task], *, workers: int, per_host: int, deadline_at: float) -> dict[Hashable, Any]:
    """Each started task's value (or the exception it raised), by key; see the module docstring."""
    from concurrent.futures import ThreadPoolExecutor

    if not tasks:
        return {}
    caps: dict[str, threading.BoundedSemaphore] = defaultdict(lambda: threading.BoundedSemaphore(per_host))
    for task in tasks:
        caps[task.host]  # made before the threads start: no race on the defaultdict
    answers: dict[Hashable, Any] = {}
    lock = threading.Lock()

    def run(task: Task) -> None:
        cap = caps[task.host]
        if not cap.acquire(timeout=max(deadline_at - time.monotonic(), 0.0)):
            return
        try:
            left = deadline_at - time.monotonic()
            if left <= 0:
                return
            try:
                value = task.function(left)
            except Exception as error:  # handed to the caller as this task's answer
                value = error
            with lock:
                answers[task.key] = value
        finally:
            cap.release()

    with ThreadPoolExecutor(max_workers=max(1, min(workers, len(tasks))), thread_name_prefix="feed") as pool:
        for future in [pool.submit(run, task) for task in _round_robin(tasks)]:
            future.result()
    return answers
