"""The file consumers write only regular files: whatever else a path names is refused and left as it is.

* the briefing never replaces a FIFO, a symbolic link or a device with a
  file (it did, with a rename over them);
* the change log never reads ``/dev/zero`` (it read it without limit, and
  its abandoned thread kept reading): the delivery fails at once with a
  message, and the tick's peak memory stays that of a plain tick;
* either way the other consumers are delivered, and the failed one is
  retried later with the same records.
"""

from __future__ import annotations

import os
import stat

import pytest

from tests.support.host_workspace import Workspace
from tests.support.measured import run_measured

NOW = "2026-10-09T08:00:00+08:00"


def consumers(**paths: str) -> str:
    kinds = {"brief": "briefing", "log": "log"}
    return "".join(f'[[consumers]]\nname = "{name}"\ntype = "{kinds[name]}"\npath = "{path}"\nfrom = "start"\n'
                   f'deliver_timeout = "5s"\n' for name, path in paths.items())


def device(tmp_path) -> str:
    """A character device to aim at: a copy of /dev/null's node in tmp_path when allowed (root), else /dev/null."""
    node = tmp_path / "null-device"
    try:
        os.mknod(node, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
        return str(node)
    except PermissionError:
        return "/dev/null"  # without the privilege to make a node, nothing here can replace /dev/null either


def problems(err: str) -> list[str]:
    return [line for line in err.splitlines() if "consumer " in line and " failed" in line]


@pytest.mark.parametrize("target", ["fifo", "symlink", "device", "directory"])
def test_the_briefing_writes_only_a_regular_file(tmp_path, target):
    path = tmp_path / "briefing.md"
    elsewhere = tmp_path / "elsewhere.md"
    if target == "fifo":
        os.mkfifo(path)
    elif target == "symlink":
        elsewhere.write_text("someone else's file\n")
        path.symlink_to(elsewhere)
    elif target == "directory":
        path.mkdir()
    else:
        path = device(tmp_path)
    before = os.lstat(path)
    ws = Workspace(tmp_path, extra=consumers(brief=str(path), log=str(tmp_path / "changes.md")))
    ws.feed("mail", {"native": "1", "title": "签证材料", "text": "还缺银行流水"})
    code, _, err = ws.run("tick", "--now", NOW)
    assert code == 0, err
    kind = {"fifo": "a FIFO", "symlink": "a symbolic link", "device": "a character device",
            "directory": "a directory"}[target]
    [line] = problems(err)
    assert line.startswith("foldctl tick: consumer brief failed") and f"is {kind}, not a regular file" in line, err
    after = os.lstat(path)
    assert (after.st_mode, after.st_ino, after.st_rdev) == (before.st_mode, before.st_ino, before.st_rdev)
    if target == "symlink":
        assert elsewhere.read_text() == "someone else's file\n"
    assert "签证材料" in (tmp_path / "changes.md").read_text()  # the other consumer was delivered
    assert not [name for name in os.listdir(os.path.dirname(path)) if ".tmp-" in name]


def test_the_change_log_never_reads_dev_zero_and_the_tick_stays_small(tmp_path):
    plain = Workspace(tmp_path / "plain", extra=consumers(log=str(tmp_path / "plain" / "changes.md")))
    zero = Workspace(tmp_path / "zero", extra=consumers(log="/dev/zero"))
    for ws in (plain, zero):
        ws.feed("mail", {"native": "1", "title": "签证材料", "text": "还缺银行流水"})
    normal = run_measured(plain.args("tick", "--now", NOW), cwd=plain.root, env=plain.env(), timeout=120)
    assert normal.code == 0 and problems(normal.err) == [], normal.err
    done = run_measured(zero.args("tick", "--now", NOW), cwd=zero.root, env=zero.env(), timeout=120)
    assert done.code == 0, done.err
    [line] = problems(done.err)
    assert "/dev/zero is a character device, not a regular file" in line, done.err
    grown = done.max_rss - normal.max_rss
    print(f"log at /dev/zero: {done.seconds:.1f}s, peak {done.max_rss_mb:.0f} MB "
          f"(plain {normal.seconds:.1f}s, {normal.max_rss_mb:.0f} MB)")
    assert grown < 32 * 1024 * 1024 and done.seconds < normal.seconds + 5, (grown, done.seconds)
    code, doctor, _ = zero.run("doctor")
    [check] = [c for c in doctor["checks"] if c["name"] == "consumer log"]
    assert check["status"] == "warn" and "not a regular file" in check["detail"]


def test_a_refused_target_is_delivered_once_it_is_a_regular_file_again(tmp_path):
    path = tmp_path / "briefing.md"
    os.mkfifo(path)
    ws = Workspace(tmp_path, extra=consumers(brief=str(path)))
    ws.feed("mail", {"native": "1", "title": "签证材料", "text": "还缺银行流水"})
    code, _, err = ws.run("tick", "--now", NOW)
    assert code == 0 and len(problems(err)) == 1
    path.unlink()
    code, _, err = ws.run("tick", "--now", "2026-10-09T09:00:00+08:00")
    assert code == 0 and problems(err) == [], err
    assert "签证材料" in path.read_text() and stat.S_ISREG(os.lstat(path).st_mode)
