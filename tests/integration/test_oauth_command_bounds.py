"""[hardening-2] 5: the OAuth2 token command cannot grow Fold, outlive its timeout, or smuggle control characters.

Each case runs the adapter's real ``CommandToken`` on a real command. The
endless and the 100 MB outputs run in a child Python under ``prlimit --as``
(an address-space ceiling): reading them whole would die of ``MemoryError``;
the child reports its peak resident memory (``VmHWM``), which stays small.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fold_adapters.mail import oauth
from fold_adapters.mail.oauth import CommandToken, TokenError

REPO = Path(__file__).resolve().parents[2]
CEILING = 400 * 1024 * 1024  # bytes of address space for the child (a whole 100 MB token needs far more)

CHILD = """
import json, sys
from fold_adapters.mail import oauth
oauth.COMMAND_TIMEOUT = 20.0
try:
    token = oauth.CommandToken(tuple(sys.argv[1:])).token()
    outcome = {"token": len(token)}
except oauth.TokenError as error:
    outcome = {"error_class": error.error_class, "message": str(error)}
peak = next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM:"))
print(json.dumps({**outcome, "peak_kib": peak}))
"""


def run_bounded(*command: str) -> dict:
    prlimit = shutil.which("prlimit")
    assert prlimit is not None, "prlimit (util-linux) is needed to bound the child's memory"
    env = {**os.environ, "PYTHONPATH": str(REPO), "MALLOC_ARENA_MAX": "2"}
    done = subprocess.run([prlimit, f"--as={CEILING}", "--", sys.executable, "-c", CHILD, *command],
                          capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr[-2000:]
    return json.loads(done.stdout)


@pytest.mark.parametrize("command", [
    ("sh", "-c", "exec yes AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"),  # endless
    ("sh", "-c", "head -c 100000000 /dev/zero | tr '\\0' A"),  # one 100 MB "token"
], ids=["endless", "100MB"])
def test_a_command_printing_without_end_is_stopped_at_64_kib_and_memory_stays_flat(command):
    outcome = run_bounded(*command)
    assert outcome["error_class"] == "auth" and "more than 64 KiB" in outcome["message"], outcome
    assert outcome["peak_kib"] < 100 * 1024, outcome  # a whole 100 MB read would be far above


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state not in ("Z", "X")


def test_on_timeout_the_command_and_the_helpers_it_started_are_killed(tmp_path, monkeypatch):
    monkeypatch.setattr(oauth, "COMMAND_TIMEOUT", 1.0)
    pids = tmp_path / "pids"
    script = f"sleep 300 & echo $! > {pids}; sh -c 'sleep 300' & echo $! >> {pids}; sleep 300"
    with pytest.raises(TokenError) as raised:
        CommandToken(("sh", "-c", script)).token()
    assert raised.value.error_class == "timeout" and "did not finish within 1s" in str(raised.value)
    children = [int(line) for line in pids.read_text().split()]
    assert len(children) == 2
    deadline = time.monotonic() + 10
    while any(alive(pid) for pid in children) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(alive(pid) for pid in children), "a helper of the token command outlived its timeout"


@pytest.mark.parametrize("printed", ["Zq9\x1bsecret", "Zq9\x00secret", "Zq9\rsecret", "Zq9\x7fsecret",
                                     "Zq9\u2028secret", "Zq9\x9bsecret"])
def test_a_token_with_a_control_character_is_refused_and_never_shown(printed):
    command = (sys.executable, "-c", f"import sys; sys.stdout.write({printed!r} + '\\n')")
    with pytest.raises(TokenError) as raised:
        CommandToken(command).token()
    assert raised.value.error_class == "auth" and "control character" in str(raised.value)
    assert "Zq9" not in str(raised.value) and "secret" not in str(raised.value)


def test_an_ordinary_token_still_comes_through():
    command = (sys.executable, "-c", "print(); print('  ya29.a0AfH6SM-token_value.xyz  '); print('second')")
    assert CommandToken(command).token() == "ya29.a0AfH6SM-token_value.xyz"
