"""[hardening-2] 3: retention never forgets the evidence of what the state says.

Through ``foldctl tick`` (the scripted editor tracks each mail as an item
citing ``event:<id>``), ``foldctl commit`` (withdrawals at chosen times) and
``foldctl inbox show`` / ``doctor``: with ``keep_observations = "30d"``, an old
observation that an active item cites — or an item withdrawn less than 30 days
ago — keeps its title, sender and text; one whose item was withdrawn long ago
loses them; doctor says how many were kept for that reason.
"""

from __future__ import annotations

import json

from tests.support.host_workspace import Workspace

AUG = "2026-08-01T08:00:00+08:00"
NOW = "2026-10-09T08:00:00+08:00"


def withdraw(ws: Workspace, item: str, at: str) -> None:
    batch = ws.root / f"withdraw-{item}.json"
    batch.write_text(json.dumps({"batch_id": f"w-{item}", "declarations": [
        {"id": item, "relation": "withdraw", "reason": "over"}]}), encoding="utf-8")
    code, receipt, _ = ws.run("commit", "--actor", "agent", "--now", at, str(batch))
    assert code == 0, receipt


def test_old_observations_that_live_items_cite_keep_their_text(tmp_path):
    ws = Workspace(tmp_path, script=["track"], host='keep_observations = "30d"\n')
    ws.feed("mail", *({"native": str(n), "title": f"visa letter {n}", "text": f"bring the bank statement {n}",
                       "from": f"consulate{n}@example.org"} for n in (1, 2, 3)))
    assert ws.tick(AUG)["outcome"] == "committed"
    withdraw(ws, "t-mail-2", "2026-08-02T08:00:00+08:00")  # long before the cutoff: its evidence may go
    withdraw(ws, "t-mail-3", "2026-10-01T08:00:00+08:00")  # 8 days ago: still within the retention period
    ws.tick(NOW)  # the retention pass runs
    shown = {n: ws.run("inbox", "show", f"mail:{n}")[1]["observation"] for n in (1, 2, 3)}
    for n in (1, 3):  # cited by the active t-mail-1, and by t-mail-3 withdrawn 8 days ago
        assert shown[n]["title"] == f"visa letter {n}" and shown[n]["text"] == f"bring the bank statement {n}"
        assert shown[n]["from"] == f"consulate{n}@example.org" and "text_dropped_at" not in shown[n].get("meta", {})
    assert shown[2]["title"] is None and shown[2]["text"] == "" and shown[2]["meta"]["text_dropped_at"]
    host = next(check for check in ws.run("doctor", "--now", NOW)[1]["checks"] if check["name"] == "host database")
    assert "1 old text(s) dropped, 2 kept because live items cite them" in host["detail"]
