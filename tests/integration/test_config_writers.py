"""[hardening-2] 4: ``sources import-opml --into`` never loses a concurrent edit of plugins.toml.

The red team's scenario with real processes: ten ``foldctl sources
import-opml --into plugins.toml`` (each its own block) run at once while
another process keeps appending lines to the same file. Every edit must be
in the file at the end; every import either exits 0 with its block in the
file, or refuses (exit 2) with a message saying why — never exit 0 with its
block or an edit lost. Once the editing stops, imports all go through.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from fold_host.plugins import load_config

FOLDCTL = str(Path(sys.executable).with_name("foldctl"))
IMPORTS, EDITS = 10, 200

OPML = """<?xml version="1.0"?><opml version="2.0"><head><title>t</title></head><body>
<outline type="rss" text="A" xmlUrl="https://example.org/{name}.xml"/></body></opml>"""

EDITOR = textwrap.dedent("""
    import sys, time
    path, count = sys.argv[1], int(sys.argv[2])
    for n in range(count):
        with open(path, "a", encoding="utf-8") as file:  # what an editor or a script appending does
            file.write(f"# edit {n}\\n")
        time.sleep(0.01)
""")


def start_import(tmp_path: Path, config: Path, name: str) -> subprocess.Popen:
    opml = tmp_path / f"{name}.opml"
    opml.write_text(OPML.format(name=name), encoding="utf-8")
    env = {key: value for key, value in os.environ.items() if not key.startswith("FOLD_")}
    return subprocess.Popen([FOLDCTL, "--config", str(config), "sources", "import-opml", str(opml), "--name", name,
                             "--into", str(config), "--format", "json"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, cwd=tmp_path)


def test_imports_racing_an_editor_keep_every_edit_and_every_block_they_report(tmp_path):
    config = tmp_path / "plugins.toml"
    config.write_text('[store]\npath = "store"\n', encoding="utf-8")
    editor = subprocess.Popen([sys.executable, "-c", EDITOR, str(config), str(EDITS)])
    imports = {f"feeds-{n}": start_import(tmp_path, config, f"feeds-{n}") for n in range(IMPORTS)}
    outcomes = {name: (process.wait(timeout=300), *process.communicate()) for name, process in imports.items()}
    assert editor.wait(timeout=300) == 0
    text = config.read_text(encoding="utf-8")
    assert [line for line in text.splitlines() if line.startswith("# edit ")] == [f"# edit {n}" for n in range(EDITS)]
    for name, (code, out, err) in outcomes.items():
        assert "Traceback" not in err, err
        if code == 0:
            assert json.loads(out)["into"] == str(config) and f'name = "{name}"' in text, name
        else:
            assert code == 2 and "run the import again" in err, (name, code, err)
            assert f'name = "{name}"' not in text
    assert sum(code == 0 for code, _, _ in outcomes.values()) >= 1
    names = [adapter.name for adapter in load_config(path=config).adapters]
    assert sorted(names) == sorted(name for name, (code, _, _) in outcomes.items() if code == 0)
    # Nobody editing: the rest go through, all at once, each block once.
    later = {f"late-{n}": start_import(tmp_path, config, f"late-{n}") for n in range(4)}
    assert all(process.wait(timeout=300) == 0 for process in later.values())
    assert sorted(adapter.name for adapter in load_config(path=config).adapters) == sorted(names + list(later))
    assert not any(path.name.startswith(".plugins-") for path in tmp_path.iterdir())  # no candidate left behind


def test_an_edit_landing_between_the_compare_and_the_rename_is_kept(tmp_path, monkeypatch):
    """The narrowest race, made certain: an edit appended to the file right before the rename (after the
    compare) goes into the replaced file; it is noticed and appended after the block."""
    from fold_host.ops import opml_import
    from fold_adapters.feeds.opml import FeedRef

    config = tmp_path / "plugins.toml"
    config.write_text('[store]\npath = "store"\n', encoding="utf-8")
    real_replace, edits = os.replace, []

    def replace_after_an_edit(source, target):
        if str(target) == str(config) and len(edits) < 2:  # the first two renames each race an edit
            edits.append(f"# late edit {len(edits)}\n")
            with open(config, "a", encoding="utf-8") as file:
                file.write(edits[-1])
        real_replace(source, target)

    monkeypatch.setattr(os, "replace", replace_after_an_edit)
    opml_import.append_checked(config, opml_import.adapter_block("news", [FeedRef(url="https://example.org/a.xml")]))
    text = config.read_text(encoding="utf-8")
    assert "# late edit 0\n" in text and "# late edit 1\n" in text and 'name = "news"' in text
    assert [adapter.name for adapter in load_config(path=config).adapters] == ["news"]
