"""A full or read-only disk is said as such, and ``doctor`` still lists its checks.

Each case runs real ``foldctl`` processes inside a private mount namespace
(``unshare -rm``: no privilege needed where user namespaces are allowed),
where the store directory is a small tmpfs that the test fills, or a
read-only bind mount of itself:

* a tick on a full disk is exit 3 saying "disk full" (not "disk I/O error",
  not "internal error"), and once there is room the observation it could not
  keep is read again: nothing is lost;
* a tick on a read-only store is exit 3 saying "read-only", not "internal error";
* ``doctor`` on a full or a read-only store lists its checks (exit 0 or 1), never exit 3.
"""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
import sys

import pytest

from tests.support.host_workspace import Workspace

NOW = "2026-10-09T08:00:00+08:00"


def in_namespace(ws: Workspace, script: str) -> dict[str, tuple[int, str, str]]:
    """Run ``script`` (bash; ``foldctl NAME ARGS…`` records a step) in a mount namespace; the steps' results."""
    if shutil.which("unshare") is None:
        pytest.fail("unshare (util-linux) is needed for the disk tests")
    results = ws.root / "steps"
    results.mkdir(exist_ok=True)
    foldctl = " ".join(shlex.quote(part) for part in [sys.executable, "-m", "fold_host", *ws.args()])
    prelude = (f"set -u\nstep() {{ name=$1; shift; {foldctl} \"$@\" > {results}/$name.out 2> {results}/$name.err; "
               f"echo $? > {results}/$name.rc; }}\n")
    done = subprocess.run(["unshare", "-rm", "bash", "-c", prelude + script], cwd=ws.root, env=ws.env(),
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    steps = {}
    for rc in results.glob("*.rc"):
        name = rc.stem
        steps[name] = (int(rc.read_text()), (results / f"{name}.out").read_text(), (results / f"{name}.err").read_text())
    return steps


def checks(out: str) -> dict[str, dict]:
    return {check["name"]: check for check in json.loads(out)["checks"]}


def test_a_full_disk_is_said_as_disk_full_and_loses_nothing(tmp_path):
    ws = Workspace(tmp_path, script=["track"])
    ws.feed("mail", {"native": "1", "title": "one", "text": "one"})
    store = shlex.quote(str(ws.store))
    steps = in_namespace(ws, f"""
mkdir -p {store} && mount -t tmpfs -o size=2m tmpfs {store}
step first tick --now {NOW}
echo '{json.dumps({"native": "2", "title": "two", "text": "two " * 900})}' >> mail.jsonl
dd if=/dev/zero of={store}/filler bs=4k 2>/dev/null || true
step full tick --now 2026-10-09T09:00:00+08:00
step doctor doctor
rm {store}/filler
step again tick --now 2026-10-09T10:00:00+08:00
""")
    assert steps["first"][0] == 0, steps["first"][2]
    code, _, err = steps["full"]
    assert code == 3 and "disk full" in err and "internal error" not in err, err
    code, out, err = steps["doctor"]
    assert code in (0, 1) and "internal error" not in err, err
    assert {"config", "store", "host database", "daemon"} <= set(checks(out))
    code, out, err = steps["again"]
    assert code == 0 and json.loads(out)["outcome"] == "committed", err
    assert json.loads(out)["polled"] == [{"source": "mail", "status": "ok", "observations": 1}]


def test_a_read_only_store_is_said_as_such_and_doctor_lists_its_checks(tmp_path):
    ws = Workspace(tmp_path, script=["track"])
    ws.feed("mail", {"native": "1", "title": "one", "text": "one"})
    ws.tick(NOW)
    store = shlex.quote(str(ws.store))
    steps = in_namespace(ws, f"""
mount --bind {store} {store} && mount -o remount,bind,ro {store}
step tick tick --now 2026-10-09T09:00:00+08:00
step doctor doctor
step inbox inbox
""")
    code, _, err = steps["tick"]
    assert code == 3 and "read-only" in err.lower() and "internal error" not in err, err
    code, out, err = steps["doctor"]
    assert code in (0, 1) and "internal error" not in err, err
    listed = checks(out)
    assert {"config", "store", "host database", "daemon", "agent"} <= set(listed), listed
    code, out, err = steps["inbox"]
    assert code in (0, 3) and "internal error" not in err, err
