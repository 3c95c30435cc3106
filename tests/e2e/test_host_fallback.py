"""The fallback editor: after ``fallback_after`` windows without the configured editor, the baseline edits (§9).

The configured editor is a real SDK against the scripted server, which
answers HTTP 503 for three windows and then answers again: the third window
goes to the baseline (logged as such, said in the briefing and by doctor),
and the next one is the configured editor's again.
"""

from __future__ import annotations

import json

import pytest

from tests.support.host_workspace import Workspace
from tests.support.llm_servers import LLMServer, status, text

CONSUMER = """
[[consumers]]
name = "morning"
type = "briefing"
path = "briefing.md"
"""


def at(hour: int) -> str:
    return f"2026-10-09T{hour:02d}:00:00+08:00"


@pytest.mark.parametrize("api", ["openai", "anthropic"])
def test_the_baseline_stands_in_after_three_unreachable_windows_and_hands_back(tmp_path, api):
    with LLMServer() as server:
        url = server.openai_url if api == "openai" else server.anthropic_url
        ws = Workspace(tmp_path, agent=f'type = "{api}"\nmodel = "scripted-model"\nbase_url = "{url}"\n'
                                       'timeout = "10s"\nfallback = "baseline"\nfallback_after = 3\n',
                       host='language = "en"\n', extra=CONSUMER)
        ws.feed("mail", {"native": "1", "title": "Visa: bank statement missing", "text": "Bring it by the 12th."})
        server.script(status(503), status(503), status(503))
        assert [ws.tick(at(hour))["outcome"] for hour in (8, 9)] == ["failed", "failed"]
        third = ws.tick(at(10))
        assert third["outcome"] in ("committed", "checked") and third["receipt"]["actor"] == "agent:baseline"
        calls = ws.run("calls")[1]["calls"]
        assert [(c["backend"], c["outcome"], c["fallback"]) for c in calls[:2]] == \
            [("baseline", third["outcome"], True), (api, "unavailable", False)]
        assert calls[0]["window"] == calls[1]["window"] == third["receipt"]["batch_id"]
        briefing = (tmp_path / "briefing.md").read_text(encoding="utf-8")
        assert f"The configured editor ({api}) could not be reached in 3 window(s) in a row" in briefing
        assert "The baseline editor (rules, no model) edits in its place" in briefing
        doctor = ws.run("doctor")[1]
        [agent] = [check for check in doctor["checks"] if check["name"] == "agent"]
        assert agent["status"] == "warn" and "the baseline editor stands in" in agent["detail"]

        # The configured editor is asked first in every window and takes over as soon as it answers.
        ws.feed("mail", {"native": "2", "title": "Dentist moved", "text": "Now Friday 10:00."})
        server.script(text(json.dumps({"dispositions": [{"event": "mail:2", "disposition": "noise",
                                                         "why": "not the user's matter", "related": []}],
                                       "batch": {"declarations": [], "acknowledges": []}})))
        fourth = ws.tick(at(11))
        assert fourth["outcome"] == "checked" and fourth["receipt"]["actor"] == f"agent:{api}"
        latest = ws.run("calls")[1]["calls"][0]
        assert (latest["backend"], latest["fallback"]) == (api, False)
        assert "could not be reached" not in (tmp_path / "briefing.md").read_text(encoding="utf-8")
        [agent] = [check for check in ws.run("doctor")[1]["checks"] if check["name"] == "agent"]
        assert "stands in" not in agent["detail"]


def test_without_fallback_the_window_keeps_failing_and_the_briefing_says_observations_wait(tmp_path):
    with LLMServer([status(503)] * 4) as server:
        ws = Workspace(tmp_path, agent=f'type = "openai"\nmodel = "m"\nbase_url = "{server.openai_url}"\n',
                       host='language = "en"\n', extra=CONSUMER)
        ws.feed("mail", {"native": "1", "title": "hello", "text": "hi"})
        outcomes = [ws.tick(at(hour))["outcome"] for hour in (8, 9, 10, 11)]
        assert outcomes == ["failed"] * 4
        code, brief, _ = ws.run("brief", "--now", at(12))
        assert code == 0 and brief["editor"]["windows"] == 4 and brief["editor"]["fallback"] is None
