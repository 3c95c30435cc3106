"""The US-03 story (examples/us03, run by README's `foldctl` commands) through the in-memory store.

The visa deadline first overflows the budget (rejected whole, over by 24),
then fits once the editor rebalances; an annotation waits for the editor.
"""

import json
from pathlib import Path

from fold_core.store import memory_store

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "us03"


def test_the_us03_story_rejects_88_then_accepts_58():
    story = json.loads((EXAMPLES / "story.json").read_text(encoding="utf-8"))
    store = memory_store(story.get("budget", 64))
    answers = []
    for step in story["steps"]:
        if "batch" in step:
            batch = json.loads((EXAMPLES / step["batch"]).read_text(encoding="utf-8"))
            answers.append(store.commit(batch, actor=step["actor"], now=step["now"]))
        else:
            answers.append(store.annotate(item=step["annotate"], text=step["text"],
                                          author=step.get("author", "user"), now=step["now"]))
    assert [answer.exit_code for answer in answers] == [0, 1, 0, 0]
    over = answers[1].document["errors"][0]
    assert over["code"] == "layer_budget" and "declared 88, over by 24" in over["message"]
    document = store.state_document(now=story["state_at"]).document
    assert document["root"]["used"] == 58
    assert [item["id"] for item in document["root"]["items"]][:2] == ["visa", "weekly-report"]
    assert document["not_active"][0]["id"] == "reading"
    assert document["pending_annotations"][0]["item"] == "visa"
