"""[hardening-2] 2: an agent's reports are bounded, and a flood of them never keeps mail from the editor.

``fold_report`` through a real ``foldctl mcp`` over stdio: at most ``[mcp]
max_reports_per_hour`` per agent, beyond it a ``too_many_reports`` tool
error and nothing stored, other agents unaffected, a retry of a kept report
still answered. Then the red team's scenario through ``foldctl tick``:
hundreds of reports, then four mails — the mails are in the first window.
"""

from __future__ import annotations

import anyio

from fold_core.store.locate import create
from fold_host.hostdb import open_host_db
from fold_host.mcp.operations import FoldDesk
from fold_host.mcp.quota import HourlyQuota
from tests.support.host_workspace import Workspace
from tests.support.mcp_world import World, call, codes

T1 = "2026-10-09T08:00:00+08:00"


def test_reports_beyond_the_hourly_bound_are_refused_and_not_stored(tmp_path):
    world = World(tmp_path, mcp="max_reports_per_hour = 3\n")

    async def scenario():
        async with world.stdio() as session:
            sent = [await call(session, "fold_report", {"agent": "looper", "title": f"step {n}", "text": "ok",
                                                        "report_id": f"r{n}"}) for n in range(5)]
            retry = await call(session, "fold_report", {"agent": "looper", "title": "step 0", "text": "ok",
                                                        "report_id": "r0"})
            other = await call(session, "fold_report", {"agent": "codex", "title": "build", "text": "green"})
            return sent, retry, other

    sent, retry, other = anyio.run(scenario)
    assert [is_error for _, is_error in sent] == [False, False, False, True, True]
    refused = sent[3][0]
    assert codes(refused) == ["too_many_reports"] and refused["errors"][0]["limit"] == 3
    assert "max_reports_per_hour" in refused["errors"][0]["message"]
    assert retry[1] is False and retry[0]["new"] is False  # a retry of a kept report is answered
    assert other[1] is False and other[0]["new"] is True  # the bound is per agent
    with open_host_db(str(world.store)) as db:
        kept = {o["id"] for o in db.observations(source="agents", limit=100)}
    assert kept == {"agents:report/r0", "agents:report/r1", "agents:report/r2"} | {other[0]["observation"]["id"]}


def test_the_hour_slides(tmp_path):
    store = tmp_path / "store"
    create(str(store), 64)
    report = {"agent": "looper", "title": "step", "text": "ok"}

    def send(now: str, n: int) -> tuple[dict, bool]:
        desk = FoldDesk(str(store), now=now, quota=HourlyQuota(2))
        return desk.call("fold_report", {**report, "report_id": f"r{n}"})

    assert send("2026-10-09T08:00:00+08:00", 1)[1] and send("2026-10-09T08:30:00+08:00", 2)[1]
    refused, ok = send("2026-10-09T08:59:59+08:00", 3)
    assert not ok and refused["errors"][0]["retry_after"] == "2026-10-09T09:00:00+08:00"
    assert send("2026-10-09T01:00:00+00:00", 4)[1]  # an hour after the first one, in another offset


def test_a_flood_of_reports_never_keeps_four_mails_out_of_the_first_window(tmp_path):
    ws = Workspace(tmp_path, host="max_events = 10\n", extra="[mcp]\nmax_reports_per_hour = 1000\n")
    create(ws.location, 64)
    desk = FoldDesk(ws.location, now=T1, quota=HourlyQuota(1000))
    for n in range(300):
        assert desk.call("fold_report", {"agent": "looper", "title": f"step {n}", "text": f"did step {n}"})[1]
    ws.feed("mail", *({"native": str(n), "title": f"mail {n}", "text": f"body {n}"} for n in range(4)))
    report = ws.tick("2026-10-09T08:05:00+08:00")
    assert report["outcome"] == "committed"
    offered = [event["id"] for event in ws.requests()[0]["input"]["events"]]
    assert len(offered) == 10 and {f"mail:{n}" for n in range(4)} <= set(offered)
