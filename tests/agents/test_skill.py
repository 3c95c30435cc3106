"""The skill texts, the §9 output schema and ``foldctl skill``."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from fold_host.cli import main
from fold_host.skill import load_skill, output_schema
from fold_host.skill.output import AgentOutput

CODES = ["disposition_missing", "disposition_duplicate", "disposition_unknown_event", "disposition_conflict",
         "invalid_json", "invalid_field", "unsupported_relation", "duplicate_declaration", "item_exists",
         "item_not_found", "item_merged", "item_inactive", "inactive_parent", "unsupported_move",
         "explicit_withdraw_required", "unsupported_merge_structure", "merge_layer_mismatch", "layer_budget",
         "annotation_not_found", "stale_revision"]
TERMS = ["noise", "duplicate", "used", "deferred", "critical", "high", "normal", "low", "trace", "needs-you", "done",
         "in-progress", "fyi", "supersedes:", "merges:", "withdraw", "children", "acknowledges", "checked",
         "pending_annotations", "coverage", "review", "reminder", "feedback", "event:<"]


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_the_skill_covers_the_protocol_and_its_examples_are_valid(lang):
    skill = load_skill(lang)
    missing = [term for term in CODES + TERMS if term not in skill]
    assert missing == []
    blocks = [json.loads(b) for b in re.findall(r"```json\n(.*?)```", skill, re.DOTALL)]
    outputs = [b for b in blocks if "dispositions" in b]
    assert len(outputs) == 1
    AgentOutput.model_validate(outputs[0])  # titles ≤ 24, summaries ≤ 60, fields as the kernel wants
    assert any("events" in b and "signal" in b for b in blocks)  # the §9 input shape
    if lang == "zh":
        assert sum("\u4e00" <= ch <= "\u9fff" for ch in skill) > 2000


def test_the_output_schema_describes_dispositions_and_the_batch():
    schema = output_schema()
    assert schema["required"] == ["dispositions", "batch"]
    disposition = schema["$defs"]["Disposition"]["properties"]["disposition"]
    assert set(disposition["enum"]) == {"noise", "duplicate", "used", "deferred"}
    declaration = schema["$defs"]["Declaration"]
    assert declaration["additionalProperties"] is False and "batch_id" not in schema["$defs"]["AgentBatch"]["properties"]
    output_schema()["required"].append("x")
    assert output_schema()["required"] == ["dispositions", "batch"]  # a fresh copy each call


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_foldctl_skill_prints_the_text(lang, capsys):
    assert main(["skill", "--lang", lang]) == 0
    assert capsys.readouterr().out == load_skill(lang)


def test_foldctl_skill_json_and_a_bad_language(capsys, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)  # no plugins.toml here: the default language is zh
    monkeypatch.delenv("FOLD_CONFIG", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    assert main(["skill", "--format", "json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["lang"] == "zh" and document["skill"] == load_skill("zh") and document["output_schema"]
    (tmp_path / "plugins.toml").write_text('[host]\nlanguage = "en"\n')
    assert main(["skill"]) == 0 and capsys.readouterr().out == load_skill("en")
    assert main(["skill", "--lang", "fr"]) == 2
    assert "invalid choice" in capsys.readouterr().err


def test_the_command_runs_as_a_real_process_without_loading_the_sdks():
    code = ("import sys; from fold_host.cli import main; rc = main(['skill', '--lang', 'en']);"
            "sys.stderr.write(repr(sorted(m for m in sys.modules if m in ('openai', 'anthropic'))))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout.startswith("# Fold editor's guide") and done.stderr == "[]"


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_the_skill_teaches_reading_mail_and_the_rules_of_judgment(lang):
    skill = load_skill(lang)
    for term in ("list_unsubscribe", "precedence", "auto_submitted", "bulk_headers", "due_at", "duplicate",
                 "merged_into", "saved"):
        assert term in skill, term
    words = {"zh": ["迟到的提示", "窗口描述的是过去", "同一条证据", "七天内", "同一个事实没有同时写进父项和一个新条目"],
             "en": ["late hint", "describes only the past", "same evidence", "within seven days",
                    "same fact is not written both in a parent and in a new item"]}[lang]
    assert [w for w in words if w not in skill] == []
