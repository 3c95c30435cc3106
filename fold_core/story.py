"""Play a scripted story through the kernel (the first "main job").

``python -m fold_core.story DIR`` reads ``DIR/story.json`` — a budget, steps
(a batch file with actor and now, or an annotation) and the time to read the
state at — runs every step against an in-memory store, reports each outcome
on stderr and prints the final §8 state document on stdout.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from fold_core.store import memory_store

__all__ = ["main", "play"]


def _summary(document: dict) -> str:
    if document.get("ok") and "type" in document:
        changes = ", ".join(f"{change['op']} {change['item']}" for change in document["changes"]) or "no changes"
        used = ", ".join(f"{layer['layer'] or 'root'} {layer['used']}/{layer['budget']}"
                         for layer in document["layers"])
        return f"accepted {document['type']} r{document['revision']}: {changes}" + (f" [{used}]" if used else "")
    if document.get("ok"):
        return f"saved {document['annotation']}"
    return "rejected: " + "; ".join(error["message"] for error in document["errors"])


def play(directory: Path, out=sys.stdout, err=sys.stderr) -> int:
    story = json.loads((directory / "story.json").read_text(encoding="utf-8"))
    store = memory_store(story.get("budget", 64))
    for number, step in enumerate(story["steps"], 1):
        if "batch" in step:
            batch = json.loads((directory / step["batch"]).read_text(encoding="utf-8"))
            answer = store.commit(batch, actor=step["actor"], now=step["now"])
            label = step["batch"]
        else:
            answer = store.annotate(item=step["annotate"], text=step["text"],
                                    author=step.get("author", "user"), now=step["now"])
            label = f"annotate {step['annotate']}"
        print(f"step {number} ({label}): {_summary(answer.document)}", file=err)
    document = store.state_document(now=story["state_at"]).document
    json.dump(document, out, ensure_ascii=False, indent=2)
    out.write("\n")
    return 0


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m fold_core.story DIR", file=sys.stderr)
        return 2
    return play(Path(args[0]))


if __name__ == "__main__":
    sys.exit(main())
