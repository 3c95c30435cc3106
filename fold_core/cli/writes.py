"""``foldctl init | commit | annotate`` (contract §7, §6.2, §3.1, §4).

``commit`` reads one batch object from FILE or stdin (at most 16 MiB), merges
``--base-revision`` into it, and submits it with an explicit ``--actor`` and
``now``. Input that is not a JSON object — unparseable, NaN/Infinity, nested
too deep, not UTF-8, too large — is still answered by the kernel as an
``invalid_json`` rejection (exit 1, with the store's revision) so the caller
always gets the §4.2 shape; the message says exactly what was wrong. Nothing
is written for a rejected batch.
"""

from __future__ import annotations

import argparse
import json
import math
import sys

from fold_core.cli.common import Commands, add_format, add_store, non_negative, resolve_now, resolve_store
from fold_core.errors import UsageError

__all__ = ["MAX_INPUT_BYTES", "read_batch", "register"]

MAX_INPUT_BYTES = 16 * 1024 * 1024


def register(commands: Commands) -> None:
    init = commands.add_parser("init", help="create a store", description="Create a store (budget fixed for its life).")
    add_store(init)
    init.add_argument("--budget", type=non_negative, default=None, help="budget B of every layer, 8…4096 (default 64)")
    add_format(init)
    init.set_defaults(run=run_init)

    commit = commands.add_parser(
        "commit",
        help="submit a batch; prints the receipt",
        description="Submit one batch object (JSON) from FILE or stdin; prints the receipt or the rejection.",
    )
    add_store(commit)
    commit.add_argument("--actor", required=True, help="who submits the batch (1–64 printable characters)")
    commit.add_argument("--batch-id", dest="batch_id", help="the batch_id (else the object's batch_id)")
    commit.add_argument("--now", help="the instant of the commit (default: the current clock)")
    commit.add_argument("--base-revision", dest="base_revision", type=non_negative,
                        help="reject with stale_revision unless the store is at this revision")
    commit.add_argument("file", nargs="?", default="-", metavar="FILE|-", help="the batch (default: stdin)")
    add_format(commit)
    commit.set_defaults(run=run_commit)

    annotate = commands.add_parser("annotate", help="save a user annotation",
                                   description="Save a user annotation on an item (status saved).")
    add_store(annotate)
    annotate.add_argument("--item", required=True, help="the item id")
    annotate.add_argument("--text", required=True, help="the annotation text (1–2000 code points)")
    annotate.add_argument("--author", default="user", help="who wrote it (default: user)")
    annotate.add_argument("--now", help="the instant it was saved (default: the current clock)")
    add_format(annotate)
    annotate.set_defaults(run=run_annotate)


def run_init(args: argparse.Namespace) -> tuple[dict, int]:
    from fold_core.store.locate import create, describe
    from fold_core.store.meta import DEFAULT_BUDGET

    budget = DEFAULT_BUDGET if args.budget is None else args.budget
    if not 8 <= budget <= 4096:
        raise UsageError(f"--budget must be between 8 and 4096, got {budget}")
    path = resolve_store(args.store, url_ok=True)
    meta, created = create(path, budget)
    if not created and args.budget is not None and meta["budget"] != args.budget:
        raise UsageError(
            f"a store already exists at {describe(path)} with budget {meta['budget']}; the budget is fixed at creation"
        )
    document = {"ok": True, "store": describe(path), "created": created, "budget": meta["budget"],
                "created_at": meta.get("created_at")}
    return document, 0


def run_commit(args: argparse.Namespace) -> tuple[dict, int]:
    from fold_core.store.locate import open_store

    now = resolve_now(args.now)
    path = resolve_store(args.store, url_ok=True)
    batch, problem = read_batch(args.file)
    if args.base_revision is not None and isinstance(batch, dict):
        given = batch.get("base_revision")
        if given is not None and (type(given) is not int or given != args.base_revision):
            raise UsageError(
                f"--base-revision {args.base_revision} differs from the batch's base_revision {given!r}"
            )
        batch["base_revision"] = args.base_revision
    answer = open_store(path).commit(batch, actor=args.actor, now=now, batch_id=args.batch_id)
    document = answer.document
    if problem is not None:
        _explain_invalid_json(document, problem)
    return document, answer.exit_code


def run_annotate(args: argparse.Namespace) -> tuple[dict, int]:
    from fold_core.store.locate import open_store

    now = resolve_now(args.now)
    path = resolve_store(args.store, url_ok=True)
    answer = open_store(path).annotate(item=args.item, text=args.text, author=args.author, now=now)
    return answer.document, answer.exit_code


def read_batch(source: str) -> tuple[object, str | None]:
    """``(batch, problem)``: the parsed JSON value, or ``(None, why it is not JSON)``."""
    try:
        if source == "-":
            data = sys.stdin.buffer.read(MAX_INPUT_BYTES + 1)
        else:
            with open(source, "rb") as file:
                data = file.read(MAX_INPUT_BYTES + 1)
    except OSError as error:
        raise UsageError(f"cannot read the batch from {source}: {error.strerror or error}") from None
    if len(data) > MAX_INPUT_BYTES:
        return None, f"the input is larger than {MAX_INPUT_BYTES} bytes (16 MiB): a batch must be smaller"
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        return None, f"the input is not UTF-8 text (byte {error.start})"
    if not text.strip():
        return None, "the input is empty: expected one JSON object"
    try:
        return json.loads(text, parse_constant=_reject_constant, parse_float=_finite_float), None
    except RecursionError:
        return None, "the input nests too deeply to be a batch"
    except json.JSONDecodeError as error:
        return None, f"the input is not valid JSON: {error.msg} at line {error.lineno} column {error.colno}"
    except ValueError as error:
        return None, f"the input is not valid JSON: {error}"


def _reject_constant(name: str) -> float:
    raise ValueError(f"{name} is not JSON")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"the number {text[:20]} is out of range")
    return value


def _explain_invalid_json(document: dict, problem: str) -> None:
    """Put the precise reason into the kernel's ``invalid_json`` rejection."""
    for error in document.get("errors", ()):
        if error.get("code") == "invalid_json":
            error["message"] = problem
            return
