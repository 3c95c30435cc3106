"""A real ``foldctl`` process measured: how long it took and its peak resident memory.

``run_measured(args, cwd=..., env=...)`` starts ``python -m fold_host ARGS``,
waits for it with ``os.wait4`` (whose resource usage is that one child's, not
every child's of the test process) and returns a ``Measured`` with the exit
code, stdout, stderr, the wall-clock seconds and ``max_rss`` in bytes.

A runaway process must not take the machine with it: the child runs under an
address-space limit (``RLIMIT_AS``, 2 GiB) and is killed after
``timeout`` seconds (then ``timed_out`` is true).
"""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass

__all__ = ["Measured", "run_measured"]

ADDRESS_SPACE = 2 * 1024 ** 3


@dataclass
class Measured:
    code: int
    out: str
    err: str
    seconds: float
    max_rss: int  # bytes
    timed_out: bool

    @property
    def max_rss_mb(self) -> float:
        return self.max_rss / 1024 ** 2


def _limit() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))


def run_measured(args: list[str], *, cwd, env: dict, timeout: float = 120) -> Measured:
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        started = time.monotonic()
        process = subprocess.Popen([sys.executable, "-m", "fold_host", *args], cwd=cwd, env=env, stdout=out,
                                   stderr=err, preexec_fn=_limit)
        killed = threading.Event()

        def kill() -> None:
            killed.set()
            try:
                os.kill(process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

        timer = threading.Timer(timeout, kill)
        timer.start()
        try:
            _, status, usage = os.wait4(process.pid, 0)
        finally:
            timer.cancel()
        seconds = time.monotonic() - started
        process.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        return Measured(process.returncode, out.read().decode("utf-8", "replace"),
                        err.read().decode("utf-8", "replace"), seconds, usage.ru_maxrss * 1024, killed.is_set())
