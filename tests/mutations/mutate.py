"""Deliberate bugs the suite must catch. Not part of CI: run it by hand.

    .venv/bin/python tests/mutations/mutate.py              # every mutation, its targeted tests
    .venv/bin/python tests/mutations/mutate.py --full       # every mutation, the whole suite
    .venv/bin/python tests/mutations/mutate.py --runs 3 no-log-fsync shared-write-lock

For each mutation the working tree (tracked and untracked, not ignored files) is
copied to a scratch directory, one exact piece of source text is replaced there,
and the tests run against that copy (``PYTHONPATH`` puts the copy first, also
for every ``foldctl`` subprocess the tests start). A mutation is *caught* when
the tests fail; the script first checks that the same tests pass on an
unmutated copy. Exit status 0 only when every mutation was caught in every run.

When the source a mutation edits is rewritten, its ``old`` text no longer
matches: the script says so (exit 2) and the mutation is to be updated to
express the same bug in the new code.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PYTHON = sys.executable
KERNEL_TESTS = ("tests/unit/test_kernel_properties.py::test_fixed_scenarios_pass_the_oracle",)
LONG_LIVED = ("tests/integration/test_long_lived_recorder.py",)
ID_TESTS = ("tests/unit/test_kernel_ids.py",)


@dataclass(frozen=True)
class Mutation:
    name: str
    path: str
    old: str
    new: str
    tests: tuple[str, ...]  # the pytest targets expected to catch it
    conformance: bool = False  # the conformance cases catch it too (run with --full)


MUTATIONS = (
    Mutation("no-log-fsync", "fold_core/store/append.py",
             "                os.fsync(self._fd)\n                if created:", "                if created:",
             ("tests/integration/test_durability.py", "tests/integration/test_power_loss_matrix.py")),
    Mutation("restore-keeps-withdrawn-with", "fold_core/kernel/candidate.py",
             'patched.update(status="active", withdrawn_with=None)', 'patched.update(status="active")',
             KERNEL_TESTS, conformance=True),
    Mutation("shared-write-lock", "fold_core/store/locking.py",
             "_flock(self._fd, self.path, exclusive, timeout)", "_flock(self._fd, self.path, False, timeout)",
             ("tests/integration/test_locking.py",)),
    Mutation("share-rounds-up", "fold_core/shares.py",
             "return max(1, budget * numerator // denominator)",
             "return max(1, -(-budget * numerator // denominator))", KERNEL_TESTS, conformance=True),
    Mutation("ack-errors-first", "fold_core/kernel/batch.py",
             "    errors += found\n    fresh, already, found = _acknowledges(state, raw_acks if isinstance(raw_acks, "
             "list) else [])\n    errors += found\n",
             "    declaration_errors = found\n    fresh, already, found = _acknowledges(state, raw_acks if "
             "isinstance(raw_acks, list) else [])\n    errors += found + declaration_errors\n",
             KERNEL_TESTS, conformance=True),
    Mutation("merge-loses-annotations", "fold_core/kernel/view.py",
             'self.notes.setdefault(resolve_item(state, note["item"]), []).append(note)',
             'self.notes.setdefault(note["item"], []).append(note)', KERNEL_TESTS, conformance=True),
    Mutation("rank-due-descending", "fold_core/shares.py",
             "instant_key(due) if due is not None else 0.0,", "-instant_key(due) if due is not None else 0.0,",
             KERNEL_TESTS, conformance=True),
    Mutation("merge-result-in-root", "fold_core/kernel/candidate.py",
             'parent = sources[0]["parent"]', "parent = None", KERNEL_TESTS, conformance=True),
    Mutation("new-reuses-inactive-id", "fold_core/kernel/declarations.py",
             '        if word == "new":\n            if item in items:',
             '        if word == "new":\n            if item in items and items[item]["status"] == "active":',
             ID_TESTS, conformance=True),
    Mutation("merge-reuses-inactive-id", "fold_core/kernel/declarations.py",
             "        if item in items:\n            self.item_exists(item)\n        if \"children\" in raw:",
             "        if item in items and items[item][\"status\"] == \"active\":\n            self.item_exists(item)\n"
             "        if \"children\" in raw:", ID_TESTS),
    Mutation("fast-encoder-sorts-keys", "fold_core/store/log.py",
             "return fast(record, option=_APPEND_NEWLINE)", "return fast(record, option=_APPEND_NEWLINE | 32)",
             ("tests/unit/test_record_encoding.py",)),
    Mutation("meta-read-once", "fold_core/store/file.py",
             "if stat is None or stat != self._meta_stat:", "if self._meta is None:", LONG_LIVED),
    Mutation("log-identity-unchecked", "fold_core/store/file.py",
             "if cache is not None and cache.identity == identity and cache.snap_stat == snap_stat",
             "if cache is not None and cache.snap_stat == snap_stat", LONG_LIVED),
    Mutation("log-growth-unchecked", "fold_core/store/file.py",
             "                and stat.st_size == cache.offset and (self._swept or not write):",
             "                and (self._swept or not write):",
             LONG_LIVED),
    Mutation("appender-keeps-old-log", "fold_core/store/append.py",
             "if self._fd < 0 or self._identity != expected or self._pid != os.getpid():",
             "if self._fd < 0 or self._pid != os.getpid():\n            expected = self._identity", LONG_LIVED),
    Mutation("held-lock-identity-unchecked", "fold_core/store/locking.py",
             "if (stat.st_dev, stat.st_ino) == self._identity:", "if True:", LONG_LIVED),
    Mutation("held-lock-shared-with-fork", "fold_core/store/locking.py",
             "if self._fd < 0 or self._pid != os.getpid():", "if self._fd < 0:", LONG_LIVED),
    Mutation("plain-keys-joined-blindly", "fold_core/store/refresh.py",
             'joined.count("\\n") == len(keys) - 1 and ', "",
             ("tests/integration/test_snapshot_text.py::test_batch_ids_a_foreign_log_spells_oddly_survive_the_snapshot",)),
    Mutation("archivable-ids-joined-blindly", "fold_core/store/layout.py",
             'return joined.count("\\n") == len(keys) - 1 and _ITEM_IDS', "return _ITEM_IDS",
             ("tests/integration/test_snapshot_text.py::test_an_id_the_index_cannot_hold_stays_in_the_head_of_a_large_snapshot",)),
    Mutation("appended-keys-never-learnt", "fold_core/store/parts.py",
             "        elif self._keys_upto is not None:\n            self._add_keys(self._keys, self._keys_upto)\n",
             "        elif self._keys_upto is not None:\n            pass\n",
             ("tests/integration/test_snapshot_head.py::"
              "test_a_long_lived_writer_finds_batches_and_items_its_own_refreshes_archived",)),
    Mutation("view-trusts-the-head", "fold_core/store/cache.py",
             "        if above < not_active:", "        if above < 0:",
             ("tests/integration/test_snapshot_head.py", "tests/integration/test_store_stateful.py")),
)


DIGEST_TESTS = ("tests/unit/test_request_digest.py",)
# The commit's fast paths: the request digest through orjson, a layer's members read from the table's maps.
MUTATIONS += (
    Mutation("digest-fast-path-takes-floats", "fold_core/digest.py",
             "    if _may_hold_float(data) and _may_hold_float(_outside_strings(data)):\n        return None\n",
             "", DIGEST_TESTS),
    Mutation("digest-fast-path-trusts-what-it-wrote", "fold_core/digest.py",
             "    if loads(data) != value:\n        return None\n", "", DIGEST_TESTS),
    Mutation("layer-shares-cached-across-layers", "fold_core/kernel/candidate.py",
             "        used = self._used.get(layer)\n", "        used = next(iter(self._used.values()), None)\n",
             KERNEL_TESTS, conformance=True),
    Mutation("layer-members-read-below-the-top", "fold_core/kernel/candidate.py",
             "in_overlay(item) or top_get(item) or base_get(item)", "in_overlay(item) or base_get(item) or top_get(item)",
             ("tests/unit/test_kernel_tables.py",)),
    Mutation("fault-points-blind-to-set-names", "fold_core/store/faults.py",
             "        if key not in _DATA:\n            return None\n", "        return None\n",
             ("tests/unit/test_fault_environment.py", "tests/integration/test_durability.py")),
    # A snapshot written from scratch: instants keyed without the cache, entries with no annotation.
    Mutation("instant-key-once-takes-naive-times", "fold_core/timefmt.py",
             "moment = _parse_uncached(text) if isinstance(text, str)",
             "moment = datetime.fromisoformat(text) if isinstance(text, str)", ("tests/unit/test_instant_keys.py",)),
    Mutation("scratch-archive-drops-annotations", "fold_core/store/layout.py",
             "list(archived[item_id])) if item_id in archived", "list(archived[item_id])) if False",
             ("tests/integration/test_snapshot_head.py", "tests/integration/test_store_stateful.py")),
)

BOARD_TESTS = ("tests/unit/test_pinboard_fragments.py",)
MAIL_PARSE_TESTS = ("tests/unit/test_mail_parse.py",)
# The parts of the board kept between requests (a key that misses an input serves an old card), and the
# mail parser's direct path for one-part messages (a message it builds unlike the feed parser).
MUTATIONS += (
    Mutation("kept-rectangle-ignores-its-boxes", "host/pinboard/fragments.py",
             "drawn = (layer.boxes, tuple(", "drawn = (tuple(", BOARD_TESTS),
    Mutation("kept-box-by-name-only", "host/pinboard/fragments.py",
             "key = (name, box.id in marked, budget, box_key(box))", "key = (name, box.id in marked, budget, None)",
             BOARD_TESTS),
    Mutation("kept-entry-ignores-its-children", "host/pinboard/fragments.py",
             'key = ("entry", budget, values, badges, None if children is None else tuple(children.items()))',
             'key = ("entry", budget, values, badges, None)', BOARD_TESTS),
    Mutation("box-key-skips-lines", "host/pinboard/fragments.py",
             'if field.name != "children")', 'if field.name not in ("children", "lines"))', BOARD_TESTS),
    Mutation("direct-parse-allows-space-in-names", "adapters/mail/policy.py",
             '_NAME = r"[\\041-\\071\\073-\\176]++"', '_NAME = r"[\\040-\\071\\073-\\176]++"', MAIL_PARSE_TESTS),
    Mutation("direct-parse-keeps-leading-tabs", "adapters/mail/policy.py",
             '_FIELD = re.compile(rf"({_NAME}):[ \\t]*+', '_FIELD = re.compile(rf"({_NAME}): *+', MAIL_PARSE_TESTS),
    Mutation("direct-parse-takes-multipart", "adapters/mail/policy.py",
             'if message.get_content_maintype() in ("multipart", "message"):',
             'if message.get_content_maintype() in ("message",):', MAIL_PARSE_TESTS),
    Mutation("card-facts-without-due", "host/overview/cardtext.py",
             "        facts = _FACTS(view)  # a §8 item view has them all",
             "        facts = _FACTS(view)[:6] + (None,) + _FACTS(view)[7:]", BOARD_TESTS),
)

HISTORY_TESTS = ("tests/integration/test_store_protocol.py::TestFileRecorder::"
                 "test_an_items_history_leaves_out_records_that_only_name_it_elsewhere",)
COPY_TESTS = ("tests/unit/test_filecopy.py",)
# An item's history in a file store parses only the lines holding the id; the search index is told what it
# held before a body changes; a backup's copy works in steps.
MUTATIONS += (
    Mutation("item-history-keeps-every-hit", "fold_core/store/file_session.py",
             "                if mentions(record, item))", "                if True)", HISTORY_TESTS),
    Mutation("skipped-line-not-counted", "fold_core/store/log.py",
             "            position, expected = end, expected + 1\n            if end >= size:\n                break\n\n\n"
             "def scan(",
             "            position = end\n            if record is not None:\n                expected += 1\n"
             "            if end >= size:\n                break\n\n\ndef scan(", HISTORY_TESTS),
    Mutation("reindex-without-delete", "host/hostdb/schema.py",
             "ON observations BEGIN\n        INSERT INTO observation_text (observation_text, rowid, title, text) "
             "VALUES ('delete', old.seq,\n            coalesce(json_extract(old.body, '$.title'), ''), "
             "coalesce(json_extract(old.body, '$.text'), ''));\n        INSERT INTO observation_text (rowid, title, "
             "text) VALUES (new.seq,",
             "ON observations BEGIN\n        INSERT INTO observation_text (rowid, title, text) VALUES (new.seq,",
             ("tests/integration/test_hostdb_search.py",)),
    Mutation("copy-step-restarts-at-zero", "host/ops/filecopy.py",
             "done = os.copy_file_range(job.source, target, count, offset)",
             "done = os.copy_file_range(job.source, target, count, offset % WRITE_BACK)", COPY_TESTS),
    # [hardening-2] (hard-b)
    Mutation("window-chosen-without-skip-locked", "host/hostdb/inbox.py",
             'f"ORDER BY seq LIMIT ?{self._skip_locked}", (max_events,)', 'f"ORDER BY seq LIMIT ?", (max_events,)',
             ("tests/integration/test_hosts_sharing.py",)),
    Mutation("restore-skips-digests", "host/ops/backup.py",
             "            if found[name] != expected:", "            if False and found[name] != expected:",
             ("tests/e2e/test_backup.py",)),
    Mutation("backup-skips-quick-check", "host/ops/backup.py",
             "problem = copy_problem(os.path.join(out_dir, HOST_DB))", "problem = None",
             ("tests/e2e/test_backup.py",)),
    Mutation("mcp-without-host-check", "host/mcp/http.py",
             "return HostGuard(BearerGuard(EchoCap(app), bind.token), policy)", "return BearerGuard(EchoCap(app), bind.token)",
             ("tests/integration/test_mcp_http.py",)),
    Mutation("mcp-wrong-tokens-not-counted", "host/mcp/http.py",
             "                    self.throttle.wrong(address)", "                    pass",
             ("tests/integration/test_mcp_http.py",)),
    Mutation("feeds-follow-inward-redirects", "adapters/feeds/fetch.py",
             "problem = netpolicy.hop_problem(current, target)", "problem = None",
             ("tests/integration/test_feed_addresses.py",)),
    Mutation("editor-answer-keeps-a-secret", "host/cycle/editor.py",
             "errors = secret_problems(reply.output, secrets)", "errors = []",
             ("tests/e2e/test_secret_echo.py",)),
)


def _files() -> list[str]:
    listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
                            cwd=ROOT, capture_output=True, check=True).stdout.decode().split("\0")
    return [name for name in listed if name and (ROOT / name).is_file()]


def scratch_copy(target: Path) -> None:
    for name in _files():
        destination = target / name
        destination.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, destination)


def apply(mutation: Mutation, copy: Path) -> None:
    path = copy / mutation.path
    text = path.read_text(encoding="utf-8")
    if text.count(mutation.old) != 1:
        sys.exit(f"{mutation.name}: the text to mutate occurs {text.count(mutation.old)} times in "
                 f"{mutation.path} (expected once): update the mutation for the current code")
    path.write_text(text.replace(mutation.old, mutation.new), encoding="utf-8")


def run_tests(copy: Path, targets: tuple[str, ...], full: bool, conformance: bool) -> tuple[bool, float]:
    """(passed, seconds) of the tests on ``copy``."""
    environment = {k: v for k, v in os.environ.items() if not k.startswith("FOLD_")}
    environment["PYTHONPATH"] = os.pathsep.join((str(_import_names(copy)), str(copy)))
    environment["PYTHONDONTWRITEBYTECODE"] = "1"
    check = subprocess.run([PYTHON, "-c", "import fold_core, fold_adapters, fold_consumers, fold_host\n"
                            "for m in (fold_core, fold_adapters, fold_consumers, fold_host): print(m.__file__)"],
                           cwd=copy, env=environment, capture_output=True, text=True)
    found = check.stdout.split()
    assert len(found) == 4 and all(path.startswith(str(copy)) for path in found), \
        f"the copy is not the code under test: {check.stdout} {check.stderr[-300:]}"
    commands = [[PYTHON, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *([] if full else targets)]]
    if full or conformance:
        commands.append([PYTHON, "-m", "conformance"])
    started = time.monotonic()
    for command in commands:
        done = subprocess.run(command, cwd=copy, env=environment, capture_output=True, text=True)
        if done.returncode != 0:
            return False, time.monotonic() - started
    return True, time.monotonic() - started


def _import_names(copy: Path) -> Path:
    """A folder of links giving the copy's folders their import names (pyproject's package-dir)."""
    names = copy / ".import-names"
    names.mkdir(exist_ok=True)
    for name, folder in (("fold_core", "fold_core"), ("fold_adapters", "adapters"), ("fold_consumers", "consumers"),
                         ("fold_host", "host"), ("conformance", "conformance")):
        if not (names / name).exists():
            (names / name).symlink_to(copy / folder, target_is_directory=True)
    return names


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="mutations to run (default: all)")
    parser.add_argument("--full", action="store_true", help="run the whole suite (pytest and conformance)")
    parser.add_argument("--runs", type=int, default=1, help="runs per mutation (every one must catch it)")
    parser.add_argument("--no-baseline", action="store_true", help="skip the unmutated run")
    args = parser.parse_args()
    chosen = [m for m in MUTATIONS if not args.names or m.name in args.names]
    unknown = set(args.names) - {m.name for m in MUTATIONS}
    if unknown:
        parser.error(f"unknown mutations {sorted(unknown)}; known: {[m.name for m in MUTATIONS]}")
    missed = 0
    with tempfile.TemporaryDirectory(prefix="fold-mutations-") as base:
        if not args.no_baseline:
            clean = Path(base) / "baseline"
            scratch_copy(clean)
            targets = tuple(sorted({test for m in chosen for test in m.tests}))
            passed, seconds = run_tests(clean, targets, args.full, any(m.conformance for m in chosen))
            print(f"baseline (no mutation): {'passes' if passed else 'FAILS'} ({seconds:.0f} s)", flush=True)
            if not passed:
                return 2
        for mutation in chosen:
            copy = Path(base) / mutation.name
            scratch_copy(copy)
            apply(mutation, copy)
            results = []
            for _ in range(args.runs):
                passed, seconds = run_tests(copy, mutation.tests, args.full, False)
                results.append((not passed, seconds))
            caught = sum(1 for hit, _ in results if hit)
            missed += caught < args.runs
            where = "the whole suite" if args.full else " ".join(mutation.tests)
            print(f"{mutation.name}: caught in {caught}/{args.runs} runs by {where} "
                  f"({', '.join(f'{s:.0f} s' for _, s in results)})", flush=True)
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
