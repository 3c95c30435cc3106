"""The main job's scripted US-03 story (README "Run Fold's main job")."""

import io
import json
from pathlib import Path

from fold_core.story import main, play

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "us03"


def test_the_us03_story_rejects_88_then_accepts_58():
    out, err = io.StringIO(), io.StringIO()
    assert play(EXAMPLES, out=out, err=err) == 0
    document = json.loads(out.getvalue())
    assert document["root"]["used"] == 58
    assert [item["id"] for item in document["root"]["items"]][:2] == ["visa", "weekly-report"]
    assert document["not_active"][0]["id"] == "reading"
    assert document["pending_annotations"][0]["item"] == "visa"
    log = err.getvalue()
    assert "declared 88, over by 24" in log and "[root 58/64]" in log


def test_the_story_command_needs_exactly_one_directory(capsys):
    assert main([]) == 2
    assert "usage" in capsys.readouterr().err
