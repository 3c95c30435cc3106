"""Every command in README.md and docs/*.md runs as written (acceptance "tried as a new user would").

Each document's ```sh blocks run in one bash session (conventions in
``tests/support/doc_commands.py``), as a new user would: in a copy of the
repository at ``~/fold`` (the clone), with a fresh ``$HOME`` and ``$TMPDIR``,
Fold's virtualenv first on ``PATH`` (as after ``source .venv/bin/activate``),
no ``FOLD_*`` variables, and the secrets the documents name set to harmless
values. The default store (``~/.local/share/fold/store``) holds the US-03
story (examples/us03: three commits, one rejected, and an annotation on
``visa``), so that a document may show reads without creating a store first;
a document that starts from nothing says ``<!-- doc-test: fresh home -->``. A command that exits other than documented, or
prints other than the output shown after it, fails the test with the
document and line.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.support.doc_commands import compare_json, extract, run_session

ROOT = Path(__file__).resolve().parents[2]
DOCUMENTS = [document for document in sorted([ROOT / "README.md", *(ROOT / "docs").rglob("*.md")])
             if any(command.skip is None for command in extract(document, ROOT))]  # those with a command to run
SHOWN_HOME = "/home/me"  # what the documents' example outputs show for $HOME
FRESH_HOME = "<!-- doc-test: fresh home -->"
PARALLEL_SESSIONS = 3  # documents run side by side (each session is a chain of short processes)

# Environment variables the documents name for secrets; the documents never print them.
DOCUMENTED_SECRETS = {
    "OPENAI_API_KEY": "sk-doc-test",
}


def _doc_id(path: Path) -> str:
    return str(path.relative_to(ROOT))


@pytest.fixture(scope="module")
def story_store(tmp_path_factory) -> Path:
    """A store holding the US-03 story, as the README's commands leave it."""
    store = tmp_path_factory.mktemp("story") / "store"
    env = {**os.environ, "FOLD_STORE": str(store)}
    env.pop("FOLD_CONFIG", None)
    foldctl = [sys.executable, "-m", "fold_host"]
    steps = [["init", "--budget", "64"]]
    for name, now in (("01-initial", "2026-10-08T20:00:00+08:00"), ("02-visa-over-budget", "2026-10-09T08:00:00+08:00"),
                      ("03-visa-rebalanced", "2026-10-09T08:05:00+08:00")):
        steps.append(["commit", "--actor", "agent", "--now", now, str(ROOT / "examples/us03" / f"{name}.json")])
    steps.append(["annotate", "--item", "visa", "--text", "流水明天上午去银行打印。", "--now", "2026-10-09T09:00:00+08:00"])
    for step in steps:
        done = subprocess.run(foldctl + step, env=env, cwd=store.parent, capture_output=True, text=True)
        assert done.returncode in (0, 1), done.stderr
    return store


@pytest.fixture(scope="module")
def sessions(request, tmp_path_factory, story_store):
    """The bash session of every selected document, started side by side: document → future (outcomes, home)."""
    chosen = [item.callspec.params["document"] for item in request.session.items
              if getattr(item, "function", None) is test_documented_commands_run_as_written]
    pool = ThreadPoolExecutor(max_workers=PARALLEL_SESSIONS)
    futures = {document: pool.submit(_run_document, document, tmp_path_factory.mktemp("doc"), story_store)
               for document in dict.fromkeys(chosen)}
    yield futures
    pool.shutdown(wait=True)


def _run_document(document: Path, tmp_path: Path, story_store: Path):
    commands = extract(document, ROOT)
    home = tmp_path / "home"
    clone = home / "fold"
    _copy_repository(clone)
    if FRESH_HOME not in document.read_text(encoding="utf-8"):
        shutil.copytree(story_store, home / ".local/share/fold/store")
    # A short $TMPDIR: Chromium's profile socket path must stay under 108 bytes (pytest's are long).
    with tempfile.TemporaryDirectory(prefix="fold-doc-") as scratch:
        return run_session(commands, cwd=clone, env=_environment(home, Path(scratch)), work=tmp_path / "work"), home


@pytest.mark.parametrize("document", DOCUMENTS, ids=_doc_id)
def test_documented_commands_run_as_written(document: Path, sessions):
    outcomes, home = sessions[document].result()
    failures = []
    for outcome in outcomes:
        command = outcome.command
        problems = []
        if outcome.exit_code is None:
            problems.append("did not finish (the session stopped before it)")
        elif outcome.exit_code == 124 and command.until:
            problems.append(f"never printed {command.until!r} while running")
        elif outcome.exit_code != command.expect_exit:
            problems.append(f"exit {outcome.exit_code}, documented {command.expect_exit}")
        elif command.output is not None:
            problems.extend(_shown_output_problems(command.output, outcome.stdout, home))
        if problems:
            failures.append(f"{command.where}: `{command.text}`\n  " + "\n  ".join(problems)
                            + _tail("stdout", outcome.stdout) + _tail("stderr", outcome.stderr))
    assert not failures, (
        f"{len(failures)} documented command(s) in {_doc_id(document)} do not run as written "
        "(conventions: tests/support/doc_commands.py):\n\n" + "\n\n".join(failures))


def _shown_output_problems(output: tuple[str, str, int], stdout: str, home: Path) -> list[str]:
    fence, shown, line = output
    actual = stdout.replace(str(home), SHOWN_HOME)
    if fence == "json":
        try:
            shown_document = json.loads(shown)
        except json.JSONDecodeError as error:
            return [f"the output shown at line {line} is not JSON: {error}"]
        try:
            actual_document = json.loads(actual)
        except json.JSONDecodeError:
            return [f"the output shown at line {line} is JSON, the command printed something else"]
        return [f"output shown at line {line}: {p}" for p in compare_json(shown_document, actual_document)]
    shown_lines = [x.rstrip() for x in shown.strip("\n").splitlines()]
    actual_lines = [x.rstrip() for x in actual.strip("\n").splitlines()]
    if shown_lines != actual_lines:
        return [f"the output shown at line {line} differs from what the command printed"]
    return []


def _tail(name: str, text: str, limit: int = 1500) -> str:
    text = text.strip()
    if not text:
        return ""
    return f"\n  {name}: " + (text if len(text) <= limit else "…" + text[-limit:]).replace("\n", "\n    ")


def _copy_repository(clone: Path) -> None:
    """The working tree's files (tracked and new, not ignored) at ``clone``, with the venv linked in."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                            cwd=ROOT, capture_output=True, check=True).stdout.decode().split("\0")
    for name in filter(None, listed):
        source = ROOT / name
        if source.is_file():
            target = clone / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    (clone / ".venv").symlink_to(sys.prefix, target_is_directory=True)


def _environment(home: Path, scratch: Path) -> dict[str, str]:
    home.mkdir(exist_ok=True)
    inherited = [p for p in os.environ.get("PATH", "/usr/bin:/bin").split(os.pathsep)
                 if p and not p.startswith(sys.prefix)]
    env = {
        "PATH": os.pathsep.join([str(Path(sys.prefix) / "bin"), *inherited]),
        "HOME": str(home),
        "TMPDIR": str(scratch),
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "USER": os.environ.get("USER", "me"),
        **DOCUMENTED_SECRETS,
    }
    for passed in ("CI", "FOLD_CHROMIUM"):
        if passed in os.environ:
            env[passed] = os.environ[passed]
    return env


# -- the harness itself: it finds every command and it can fail --------------------------------

SAMPLE = '''# Sample

```sh
export GREETING=hello   # carried to the next commands
printf '%s\\n' "$GREETING" \\
  world
false  # exit 1: documented failure
cat > notes.toml <<'EOF'
# not a command
[store]
EOF
sleep 60  # doc-test: skip (too slow)
```

```json
{"a": {"b": [1]}}
```

<!-- doc-test: skip (a synopsis) -->
```sh
foldctl tick [--now T]
```

```bash
python3 -c 'import json; print(json.dumps({"a": {"b": [1, 2], "c": 3}}))'
```

```json
{"a": {"b": [1]}}
```
'''


def test_harness_extracts_every_command_with_its_conventions(tmp_path: Path):
    doc = tmp_path / "sample.md"
    doc.write_text(SAMPLE)
    commands = extract(doc, tmp_path)
    assert [c.line for c in commands] == [4, 5, 7, 8, 12, 21, 25]
    assert commands[1].text == "printf '%s\\n' \"$GREETING\" \\\n  world"
    assert commands[2].expect_exit == 1 and commands[0].expect_exit == 0
    assert commands[3].text.endswith("[store]\nEOF")
    assert commands[4].skip == "too slow" and commands[5].skip == "a synopsis"
    assert commands[4].output[0] == "json"  # shown after the block: the output of its last command
    assert commands[6].output == ("json", '{"a": {"b": [1]}}', 29)


def test_harness_reports_a_failing_command_and_a_wrong_output(tmp_path: Path):
    doc = tmp_path / "sample.md"
    doc.write_text(SAMPLE.replace("false  # exit 1", "false  # exit 0").replace('"c": 3', '"c": 3, "a2": 0'))
    outcomes = run_session(extract(doc, tmp_path), cwd=tmp_path, env={"PATH": os.environ["PATH"]},
                           work=tmp_path / "work")
    by_line = {o.command.line: o for o in outcomes}
    assert by_line[5].stdout == "hello\nworld\n"
    assert by_line[7].exit_code == 1 and by_line[7].command.expect_exit == 0  # reported as a failure
    assert (tmp_path / "notes.toml").read_text() == "# not a command\n[store]\n"
    shown = json.loads(by_line[25].command.output[1])
    assert compare_json(shown, json.loads(by_line[25].stdout)) == []
    assert compare_json({"a": {"d": 1}}, {"a": {"b": 1}}) == ["$.a.d: shown, but not in the output (keys: b)"]
    assert compare_json({"x": "committed"}, {"x": "nothing"}) == ["$.x: shown 'committed', the command printed 'nothing'"]
    assert compare_json({"x": [1, 2]}, {"x": [1]}) == ["$.x: shown 2 entries, the output has 1"]
    assert compare_json({"p": "/home/me/s"}, {"p": "/root/s"}) == []


def test_harness_runs_a_long_running_command_until_it_is_ready(tmp_path: Path):
    doc = tmp_path / "daemon.md"
    doc.write_text('```sh\npython3 -c \'import time; print("up", flush=True); time.sleep(60)\'  '
                   '# doc-test: until "up"  # exit 143\n'
                   'python3 -c \'import time; time.sleep(60)\'  # doc-test: until "never"\n```\n')
    outcomes = run_session(extract(doc, tmp_path), cwd=tmp_path, env={"PATH": os.environ["PATH"]},
                           work=tmp_path / "work", until_seconds=2)
    assert [o.exit_code for o in outcomes] == [143, 124]  # stopped by SIGTERM; never ready


def test_harness_names_a_command_that_never_ends(tmp_path: Path):
    doc = tmp_path / "hang.md"
    doc.write_text("```sh\ntrue\nsleep 60\n```\n")
    with pytest.raises(AssertionError, match=r"hang.md:3: `sleep 60` was still running after"):
        run_session(extract(doc, tmp_path), cwd=tmp_path, env={"PATH": os.environ["PATH"]},
                    work=tmp_path / "work", command_timeout=2)
