"""The skill evaluation's frame properties (contract §15 ``frames``): question kept, options kept, fallback
not invented, frame cleared after the answer — each one passes on a good run and fails on a bad one."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from fold_host.evaluation.properties import Run, check
from fold_host.evaluation.scenarios import Scenario

FRAME = {"question": "先临时缓解，还是本周迁移？", "digest": "f96c524ca80101c9", "evidence": "complete",
         "options": [{"id": "mitigate", "label": "先临时缓解"}, {"id": "migrate", "label": "本周迁移"}],
         "fallback": {"option": "mitigate", "summary": "周五前无答复则先缓解"}}


def scenario(*frames) -> Scenario:
    return Scenario.model_validate({"name": "s", "now": "2026-10-09T08:00:00+08:00",
                                    "expect": {"frames": list(frames)}})


def run(decision) -> Run:
    item = {"id": "auth", "title": "coding-agent：待你决定", "summary": None, "weight": "high", "kind": "needs-you",
            "sources": [], "children": None, "decision": decision}
    return Run(outcome="committed", before={"root": {"items": []}}, after={"root": {"items": [item]}})


def verdicts(findings):
    return {f.property.split("/ ", 1)[1]: f.passed for f in findings}


def test_a_frame_kept_as_asked_passes_every_property():
    expect = {"match": "coding-agent", "question": "^先临时缓解，还是本周迁移？$", "options": ["migrate", "mitigate"],
              "fallback": "无答复则先缓解", "evidence": ["complete"]}
    assert verdicts(check(scenario(expect), run(FRAME))) == {
        "question kept": True, "options kept": True, "fallback from the source": True, "evidence ∈ complete": True}


def test_a_cut_question_renamed_options_and_an_invented_fallback_fail():
    bad = {**FRAME, "question": "先临时缓解…", "options": [{"id": "a", "label": "先临时缓解"}, {"id": "b", "label": "本周迁移"}],
           "fallback": {"summary": "默认先缓解"}}
    expect = {"match": "coding-agent", "question": "^先临时缓解，还是本周迁移？$", "options": ["mitigate", "migrate"]}
    assert verdicts(check(scenario(expect), run(bad))) == {"question kept": False, "options kept": False}
    assert verdicts(check(scenario({"match": "coding-agent", "fallback": False}), run(bad))) == {
        "no fallback invented": False}
    assert verdicts(check(scenario({"match": "coding-agent", "fallback": False}), run({**FRAME, "fallback": None}))) == {
        "no fallback invented": True}


def test_cleared_fails_while_the_frame_is_still_there_and_a_missing_frame_fails_the_others():
    assert verdicts(check(scenario({"match": "coding-agent", "cleared": True}), run(FRAME))) == {"cleared": False}
    assert verdicts(check(scenario({"match": "coding-agent", "cleared": True}), run(None))) == {"cleared": True}
    assert verdicts(check(scenario({"match": "coding-agent", "options": ["mitigate"]}), run(None))) == {"present": False}
    assert verdicts(check(scenario({"match": "nothing-like-it", "cleared": True}), run(None))) == {"item": False}


def test_fallback_true_is_a_malformed_scenario():
    with pytest.raises(ValidationError):
        scenario({"match": "x", "fallback": True})
