"""Calling what may fail or hang — adapters, consumers, editors — with a timeout, and backing off after failures.

* ``backoff(failures, first, cap)`` — the wait after the ``failures``-th
  failure in a row: ``first``, doubled per failure, at most ``cap``. Every
  retry schedule of the host is this one function (sources, consumers,
  observations whose window failed, the daemon's editor retries).
* ``Worker`` — one thread on which a source's poll or a consumer's calls run;
  the caller waits at most a timeout. A call that outruns it keeps its thread
  (Python cannot stop it) and ``Hung`` remembers it, so the same source or
  consumer is never run twice at once: it is skipped until that call returns.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Hashable
from datetime import timedelta
from typing import Any

__all__ = ["Hung", "Job", "Worker", "backoff"]


def backoff(failures: int, first: timedelta, cap: timedelta) -> timedelta:
    """``first · 2^(failures−1)``, at most ``cap`` (``first`` for ``failures`` ≤ 1)."""
    seconds = first.total_seconds() * 2.0 ** min(max(failures - 1, 0), 64)  # a float: never an overflow
    return cap if seconds >= cap.total_seconds() else timedelta(seconds=seconds)


class Job:
    """One call handed to a ``Worker``; ``wait`` gives its value or raises what it raised."""

    def __init__(self, function: Callable[[], Any]) -> None:
        self.function = function
        self.done = threading.Event()
        self.value: Any = None
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            self.value = self.function()
        except BaseException as error:  # handed to the waiting thread
            self.error = error
        self.done.set()

    def wait(self, seconds: float) -> Any:
        """The call's value; ``TimeoutError`` when it has not returned after ``seconds``."""
        if not self.done.wait(max(seconds, 0.0)):
            raise TimeoutError
        if self.error is not None:
            raise self.error
        return self.value


class Worker:
    """A daemon thread running calls one after another (a hung call never keeps the process alive).

    A consumer that keeps thread-bound resources (an SQLite connection) sees
    all its calls on this one thread, as it would without the timeout.
    """

    def __init__(self, name: str) -> None:
        self._jobs: queue.SimpleQueue = queue.SimpleQueue()
        self.thread = threading.Thread(target=self._loop, name=name, daemon=True)
        self.thread.start()

    def _loop(self) -> None:
        while True:
            job = self._jobs.get()
            if job is None:
                return
            job.run()

    def submit(self, function: Callable[[], Any]) -> Job:
        job = Job(function)
        self._jobs.put(job)
        return job

    def call(self, function: Callable[[], Any], seconds: float) -> Any:
        """``function()`` on this thread; ``TimeoutError`` when it has not returned after ``seconds``."""
        return self.submit(function).wait(seconds)

    def stop(self) -> None:
        """End the thread once its current call (if any) returns."""
        self._jobs.put(None)


class Hung:
    """The threads of calls that outran their timeout, by key, until they end."""

    def __init__(self) -> None:
        self._threads: dict[Hashable, threading.Thread] = {}
        self._lock = threading.Lock()

    def add(self, key: Hashable, worker: Worker) -> None:
        """``worker``'s current call outran its timeout: remember it, and let the thread end after it."""
        with self._lock:
            self._threads[key] = worker.thread
        worker.stop()

    def busy(self, key: Hashable) -> bool:
        """Whether a call under ``key`` is still running past its timeout."""
        with self._lock:
            thread = self._threads.get(key)
            if thread is not None and not thread.is_alive():
                del self._threads[key]
                thread = None
            return thread is not None
