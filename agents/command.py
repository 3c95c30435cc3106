"""The ``command`` editor backend: any program as the editor (contract §9, §11.1).

The program gets one JSON document on stdin — the §9 input plus ``skill`` (the
instructions), ``attempt`` (1, 2, …) and ``corrections`` (the earlier attempts
of this window: ``[{"reply", "receipt"}]``) — and answers with the §9 output
JSON on stdout (a code fence or leading prose is tolerated). Its stderr is kept
for the call log (its last bytes). The program runs within two bounds: at
``timeout`` seconds, or as soon as its stdout passes ``max_answer_bytes``, it
is killed with its process group (``too_large``, ``timeout``). A missing
executable, a crash, a non-zero exit or a broken bound is ``AgentUnavailable``
(the host tries again later); an unreadable stdout is a ``Reply`` with ``error``.
"""

from __future__ import annotations

import json
import os
import selectors
import signal
import subprocess
import time
from dataclasses import dataclass
from typing import IO

from pydantic import Field

from fold_core.plugin_api import AgentBackend, AgentRequest, AgentUnavailable, Reply
from fold_core.settings import AgentSettings, ConfigPath
from fold_agents.llm.conversation import Clock, read_answer

__all__ = ["CommandBackend", "command_input"]

STDERR_LIMIT = 8000  # characters of stderr kept (the end of it: that is where errors are)
STDERR_KEEP = 64 * 1024  # bytes of stderr held while the program runs (its end)
PIPE_READ = 64 * 1024


class CommandSettings(AgentSettings):
    """``[agent] type = "command"``: ``command = ["my-editor", "--json"]``."""

    command: list[str] = Field(min_length=1)
    cwd: ConfigPath | None = None


def command_input(request: AgentRequest) -> dict:
    """The document a command editor reads on stdin."""
    return {**request.input, "skill": request.skill, "attempt": request.attempt,
            "corrections": [{"reply": c.reply, "receipt": dict(c.receipt)} for c in request.corrections]}


def _tail(data: bytes) -> str | None:
    text = data.decode("utf-8", "replace")
    return text[-STDERR_LIMIT:] if text else None


class CommandBackend(AgentBackend):
    """Runs the configured program once per attempt."""

    type_name = "command"
    Settings = CommandSettings
    settings: CommandSettings

    def describe(self) -> str:
        return f"command ({' '.join(self.settings.command)[:80]})"

    def propose(self, request: AgentRequest) -> Reply:
        payload = json.dumps(command_input(request), ensure_ascii=False).encode("utf-8")
        timeout = self.settings.timeout.total_seconds()
        limit = self.settings.max_answer_bytes
        clock = Clock()
        try:
            process = subprocess.Popen(
                self.settings.command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                cwd=self.settings.cwd, start_new_session=True)
        except OSError as error:
            kind = "not_found" if isinstance(error, FileNotFoundError) else "cannot_start"
            raise AgentUnavailable(kind, f"command: {kind}: {self.settings.command[0]}: {error.strerror or error}",
                                   latency_ms=clock.ms) from None
        finished = run_bounded(process, payload, timeout, limit)
        if finished.breach == "timeout":
            raise AgentUnavailable("timeout", f"command: timeout: no answer within {timeout:g}s; killed",
                                   latency_ms=clock.ms, stderr=_tail(finished.stderr))
        if finished.breach == "too_large":
            raise AgentUnavailable("too_large", f"command: too_large: the editor wrote more than {limit:,} bytes "
                                   "on stdout (max_answer_bytes); killed", latency_ms=clock.ms,
                                   stderr=_tail(finished.stderr))
        if process.returncode != 0:
            kind = f"exit_{process.returncode}" if process.returncode > 0 else f"signal_{-process.returncode}"
            raise AgentUnavailable(kind, f"command: {kind}: the editor program failed",
                                   latency_ms=clock.ms, stderr=_tail(finished.stderr))
        reply = read_answer(finished.stdout.decode("utf-8", "replace"), latency_ms=clock.ms)
        reply.stderr = _tail(finished.stderr)
        return reply


@dataclass
class Finished:
    """What a bounded run of the editor program gave: its output, and the bound it broke (if any)."""

    stdout: bytes
    stderr: bytes
    breach: str | None = None  # "timeout" | "too_large"


def run_bounded(process: subprocess.Popen[bytes], payload: bytes, timeout: float, max_stdout: int) -> Finished:
    """Feed ``payload`` to stdin and read stdout and stderr until the program ends, within both bounds.

    At ``timeout`` seconds, or as soon as stdout holds more than
    ``max_stdout`` bytes, the program's process group is killed and the run
    ends without waiting for the pipes (a descendant that left the group may
    still hold them). Only the last ``STDERR_KEEP`` bytes of stderr are kept.
    """
    stdin, out, err = process.stdin, process.stdout, process.stderr
    if stdin is None or out is None or err is None:
        raise ValueError("run_bounded needs the program's stdin, stdout and stderr as pipes")
    deadline = time.monotonic() + timeout
    stdout, stderr, breach = bytearray(), bytearray(), None
    pending = memoryview(payload)
    with selectors.DefaultSelector() as selector:
        if pending:
            os.set_blocking(stdin.fileno(), False)
            selector.register(stdin, selectors.EVENT_WRITE)
        else:
            stdin.close()
        selector.register(out, selectors.EVENT_READ, stdout)
        selector.register(err, selectors.EVENT_READ, stderr)
        while selector.get_map() and breach is None:
            left = deadline - time.monotonic()
            if left <= 0:
                breach = "timeout"
                break
            for key, _ in selector.select(left):
                if key.fileobj is stdin:
                    pending = _feed(selector, stdin, pending)
                    continue
                data = os.read(key.fd, PIPE_READ)
                if not data:
                    selector.unregister(key.fileobj)
                    continue
                key.data.extend(data)
                if key.data is stderr and len(stderr) > STDERR_KEEP:
                    del stderr[:len(stderr) - STDERR_KEEP]
                if len(stdout) > max_stdout:
                    breach = "too_large"
    if breach is None:
        try:
            process.wait(max(deadline - time.monotonic(), 0.0))
        except subprocess.TimeoutExpired:
            breach = "timeout"
    if breach is not None:
        _kill_group(process)
        process.wait()
    for pipe in (stdin, out, err):
        try:
            pipe.close()
        except OSError:
            pass
    return Finished(bytes(stdout) if breach != "too_large" else b"", bytes(stderr), breach)


def _feed(selector: selectors.BaseSelector, stdin: IO[bytes], pending: memoryview) -> memoryview:
    """Write what stdin takes now; close it when all is written or the program stopped reading."""
    try:
        pending = pending[os.write(stdin.fileno(), pending[:PIPE_READ]):]
    except (BrokenPipeError, ConnectionResetError):
        pending = pending[:0]
    if not pending:
        selector.unregister(stdin)
        stdin.close()
    return pending


def _kill_group(process: subprocess.Popen) -> None:
    """Kill the program and everything it started (it runs in its own session)."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        process.kill()
