"""The skill texts teach decision frames (contract §3.6, §9): when to write one, what it holds, and moving an
answered item on; their example frame is one the kernel accepts, and the Agent Skill export carries it."""

from __future__ import annotations

import json
import re

import pytest

from fold_core.kernel.decision import check_decision
from fold_core.models import Declaration
from fold_host.cli import build_parser
from fold_host.cli.agent_skill import skill_files
from fold_host.skill import load_skill

TAUGHT = {
    "zh": ["只问一个问题", "选项照来源给的写", "推荐要有依据", "绝不编造", "partial", "gap", "选项 `id` 一字不改",
           "meta.decision", "答复之后要把条目往前推", "\"decision\": null", "用户已决定 ≠ 对方已知道", "current"],
    "en": ["One question", "The options as the sources give them", "Recommend only with a basis", "never invent one",
           "partial", "gap", "keep the option ids", "meta.decision", "After an answer, move the item on",
           "\"decision\": null", "decided is\n  not the same as the other side knowing", "current"],
}


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_the_skill_teaches_frames_and_its_example_is_a_valid_declaration(lang):
    skill = load_skill(lang)
    assert [term for term in TAUGHT[lang] if term not in skill] == []
    (example,) = [json.loads(b) for b in re.findall(r"```json\n(.*?)```", skill, re.DOTALL) if '"decision"' in b]
    frame, problems = check_decision(example["decision"], "decision")
    assert problems == [] and frame is not None
    Declaration.model_validate(example)  # a needs-you declaration the kernel's wire model accepts
    assert example["decision"]["fallback"]["option"] in {o["id"] for o in example["decision"]["options"]}


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_the_agent_skill_export_points_the_editor_at_frames(lang):
    parser = build_parser()
    commands = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    files = skill_files(lang, "fold", commands)
    skill = files["SKILL.md"]
    assert TAUGHT[lang][0] in skill  # the guide's frame section, verbatim
    frame_text = skill.split(load_skill(lang)[:40], 1)[0]  # the "working with Fold" part before the guide
    assert ("守则第 17 节" if lang == "zh" else "section 17") in frame_text
