"""The adapter conformance suite itself: it passes for a well-behaved adapter and fails for broken ones.

``NotesAdapter`` is a tiny third-party-style adapter (one observation per
``*.txt`` file in a directory). The broken variants each violate one rule;
the suite is run on them through pytester and must report failures.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from conformance.adapter_suite import AdapterConformance
from fold_core.observation import Health, Observation, Poll
from fold_core.plugin_api import Adapter
from fold_core.settings import AdapterSettings, ConfigPath

pytest_plugins = ["pytester"]


class NotesSettings(AdapterSettings):
    path: ConfigPath


class NotesAdapter(Adapter):
    """One observation per ``*.txt`` file; the cursor is the sorted list of names seen."""

    type_name = "notes"
    channel = "notes"
    Settings = NotesSettings

    def poll(self, cursor, *, now):
        seen = set(cursor or [])
        try:
            if not Path(self.settings.path).is_dir():
                raise FileNotFoundError(f"no such directory: {self.settings.path}")
            names = sorted(p.name for p in Path(self.settings.path).glob("*.txt"))
            texts = {name: (Path(self.settings.path) / name).read_text() for name in names if name not in seen}
        except OSError as error:
            return Poll(cursor=cursor, health=Health.failed("unavailable", str(error)))
        observations = [
            Observation(id=f"{self.name}:{name}", source=self.name, channel=self.channel,
                        observed_at=now.isoformat(), title=name, text=text)
            for name, text in texts.items()
        ]
        return Poll(observations=observations, cursor=sorted(seen | set(texts)))


class NotesFixtures:
    @pytest.fixture
    def make_adapter(self, tmp_path):
        return lambda: NotesAdapter("notes", NotesSettings(path=tmp_path))

    @pytest.fixture
    def add_new_data(self, tmp_path):
        counter = itertools.count()

        def add():
            (tmp_path / f"{next(counter):04d}.txt").write_text("a note ✓")
            return 1

        return add

    @pytest.fixture
    def make_failing_adapter(self, tmp_path):
        return lambda: NotesAdapter("notes", NotesSettings(path=tmp_path / "missing"))


class TestNotesAdapterConformance(NotesFixtures, AdapterConformance):
    """The suite passes for a well-behaved adapter."""


@pytest.mark.parametrize("flaw", ["repeats", "raises", "random-ids", "sets-cursor"])
def test_suite_fails_broken_adapters(pytester, flaw):
    """Each broken variant makes at least one suite test fail (the suite can fail)."""
    source = Path(__file__).read_text(encoding="utf-8")
    patches = {
        "repeats": ("return Poll(observations=observations, cursor=sorted(seen | set(texts)))",
                    "return Poll(observations=observations, cursor=[])"),
        "raises": ("return Poll(cursor=cursor, health=Health.failed(\"unavailable\", str(error)))",
                   "raise"),
        "random-ids": ('id=f"{self.name}:{name}"', 'id=f"{self.name}:{name}:{id(self)}"'),
        "sets-cursor": ("cursor=sorted(seen | set(texts))", "cursor=set(texts)"),
    }
    old, new = patches[flaw]
    assert old in source
    module = source.replace(old, new).replace("def test_suite_fails_broken_adapters", "def _unused")
    pytester.makepyfile(test_broken=module)
    outcome = pytester.runpytest_inprocess("-q", "-p", "no:cacheprovider", "-k", "Conformance")
    counts = outcome.parseoutcomes()
    assert counts.get("failed", 0) + counts.get("errors", 0) >= 1, f"{flaw}: the suite passed a broken adapter"

