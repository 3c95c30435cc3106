"""The default editor under a burst: 500 observations, several cycles, nothing lost, no failure."""

from __future__ import annotations

from datetime import datetime, timedelta

from fold_host.hostdb import open_host_db
from tests.support.host_workspace import Workspace

START = datetime.fromisoformat("2026-10-09T08:00:00+08:00")
SENDERS = ["签证代理 <visa@agency.example>", "GitHub <noreply@github.com>", "房东 <landlord@example.com>",
           "银行 <alerts@bank.example>", "同事 Li <li@work.example>", "Newsletter <news@shop.example>"]


def test_the_baseline_editor_takes_a_burst_of_500_observations_over_several_cycles(tmp_path):
    ws = Workspace(tmp_path, agent="", host='max_events = 50\nreview_every = "1d"\n')
    ws.feed("mail", *({"native": str(n), "from": SENDERS[n % len(SENDERS)], "thread": f"thread-{n % 170}",
                       "title": f"{['签证材料', 'PR 评审', '房租续约', '账单提醒', '周会改期', '促销'][n % 6]} #{n}",
                       "text": f"第 {n} 封邮件：请在周五前回复。"} for n in range(500)))
    outcomes = []
    for cycle in range(30):
        report = ws.tick((START + timedelta(minutes=cycle)).isoformat())
        if report["signal"] is None:
            break
        outcomes.append(report["outcome"])
        assert report["outcome"] in ("committed", "checked", "acknowledged"), report
    assert len(outcomes) >= 10  # 500 observations, at most 50 per cycle
    with open_host_db(ws.store) as db:
        listed = db.observations(limit=1000)
        assert db.pending_count() == 0
        failed = [call for call in db.calls(limit=1000)
                  if call["outcome"] not in ("committed", "checked", "acknowledged", "rejected")]
    assert len(listed) == 500 and {o["status"] for o in listed} <= {"processed", "deferred"}
    assert all(o["disposition"] in ("noise", "duplicate", "used", "deferred") and o["why"] for o in listed)
    assert failed == []
    code, state, _ = ws.run("state", "--now", (START + timedelta(hours=1)).isoformat())
    assert code == 0 and 0 < state["root"]["used"] <= 64
    code, doctor, _ = ws.run("doctor")
    agent = next(check for check in doctor["checks"] if check["name"] == "agent")
    assert agent["status"] == "warn" and "baseline" in agent["detail"] and "the default" in agent["detail"]
