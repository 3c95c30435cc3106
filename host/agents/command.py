"""The ``command`` editor backend: any program as the editor (contract §9, §11.1).

The program gets one JSON document on stdin — the §9 input plus ``skill`` (the
instructions), ``attempt`` (1, 2, …) and ``corrections`` (the earlier attempts
of this window: ``[{"reply", "receipt"}]``) — and answers with the §9 output
JSON on stdout (a code fence or leading prose is tolerated). Its stderr is kept
for the call log. A timeout kills the program and its process group; a missing
executable, a crash or a non-zero exit is ``AgentUnavailable`` (the host tries
again later); an unreadable stdout is a ``Reply`` with ``error``.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess

from pydantic import Field

from fold_core.plugin_api import AgentBackend, AgentRequest, AgentUnavailable, Reply
from fold_core.settings import AgentSettings, ConfigPath
from fold_host.agents.conversation import Clock, read_answer

__all__ = ["CommandBackend", "command_input"]

STDERR_LIMIT = 8000  # characters of stderr kept (the end of it: that is where errors are)


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

    def describe(self) -> str:
        return f"command ({' '.join(self.settings.command)[:80]})"

    def propose(self, request: AgentRequest) -> Reply:
        payload = json.dumps(command_input(request), ensure_ascii=False).encode("utf-8")
        timeout = self.settings.timeout.total_seconds()
        clock = Clock()
        try:
            process = subprocess.Popen(
                self.settings.command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                cwd=self.settings.cwd, start_new_session=True)
        except OSError as error:
            kind = "not_found" if isinstance(error, FileNotFoundError) else "cannot_start"
            raise AgentUnavailable(kind, f"command: {kind}: {self.settings.command[0]}: {error.strerror or error}",
                                   latency_ms=clock.ms) from None
        try:
            stdout, stderr = process.communicate(payload, timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill_group(process)
            try:
                stdout, stderr = process.communicate(timeout=5)
            except subprocess.TimeoutExpired:  # a descendant that left the group still holds the pipes
                stdout, stderr = b"", b""
            raise AgentUnavailable("timeout", f"command: timeout: no answer within {timeout:g}s; killed",
                                   latency_ms=clock.ms, stderr=_tail(stderr)) from None
        if process.returncode != 0:
            kind = f"exit_{process.returncode}" if process.returncode > 0 else f"signal_{-process.returncode}"
            raise AgentUnavailable(kind, f"command: {kind}: the editor program failed",
                                   latency_ms=clock.ms, stderr=_tail(stderr))
        reply = read_answer(stdout.decode("utf-8", "replace"), latency_ms=clock.ms)
        reply.stderr = _tail(stderr)
        return reply


def _kill_group(process: subprocess.Popen) -> None:
    """Kill the program and everything it started (it runs in its own session)."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        process.kill()
