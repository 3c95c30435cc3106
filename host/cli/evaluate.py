"""``foldctl eval``: the skill evaluation against the configured editor (contract §15).

Argparse only at import time (every ``foldctl`` call imports this module);
the host and the editor are loaded inside ``run_eval``. Exit 0 when the
evaluation ran — a scenario that fails its properties is a finding, not an
error — and 2 for a malformed scenario (file and field named).
"""

from __future__ import annotations

import argparse

from fold_core.cli.common import add_format, config_given, explain, positive

__all__ = ["register"]


def register(commands) -> None:
    evaluate = commands.add_parser(
        "eval", help="the skill evaluation against the configured editor",
        description="Run every scenario in --scenarios against the configured editor ([agent] in plugins.toml; the "
                    "baseline editor when none) and write report.md and report.json to --out.")
    evaluate.add_argument("--scenarios", required=True, metavar="DIR", help="a directory of *.json scenarios")
    evaluate.add_argument("--out", required=True, metavar="DIR", help="where report.md and report.json go")
    evaluate.add_argument("--repeat", type=positive, default=1, metavar="N",
                          help="run every scenario N times (weights of repeated runs show the editor's stability)")
    add_format(evaluate)
    evaluate.set_defaults(run=run_eval, render_text=_text)


def run_eval(args: argparse.Namespace) -> tuple[dict, int]:
    from fold_host.plugins import load_config
    from fold_host.evaluation.runner import evaluate

    config = load_config(config_given())
    report = evaluate(config, args.scenarios, args.out, repeat=args.repeat,
                      progress=lambda line: explain(f"foldctl eval: {line}"))
    overall = report["overall"]
    explain(f"foldctl eval: {overall['passed']}/{overall['total']} properties passed; reports: "
            f"{report['files']['markdown']}, {report['files']['json']}")
    return report, 0


def _text(document: dict) -> str:
    overall = document["overall"]
    return (f"{overall['passed']}/{overall['total']} properties passed in {overall['scenarios']} scenario runs\n"
            f"report: {document['files']['markdown']}\n")


