"""The persistent tables behind a state (fold_core.table).

A ``Table`` must behave exactly like the dict it stands for — every version
derived from it keeps its own content — while sharing structure: deriving a
version copies only the changed entries (and, past ``FOLD_AT`` of them, folds
them into a new base once).
"""

from __future__ import annotations

import copy
import pickle

from hypothesis import given, settings
from hypothesis import strategies as st

from fold_core.state import Replayer, empty_state, replay
from fold_core.table import FOLD_AT, Table, derive


class Source:
    """Entries kept outside memory, counting look-ups."""

    def __init__(self, entries: dict) -> None:
        self.entries, self.gets, self.loads = entries, 0, 0

    def get(self, key):
        self.gets += 1
        return self.entries.get(key)

    def load(self) -> dict:
        self.loads += 1
        return self.entries


keys = st.text("abcdef", min_size=1, max_size=3)
versions = st.lists(st.dictionaries(keys, st.integers(0, 9).map(lambda n: {"n": n}), max_size=6), max_size=40)


@settings(max_examples=150, deadline=None)
@given(start=st.dictionaries(keys, st.integers(0, 9).map(lambda n: {"n": n}), max_size=8), steps=versions)
def test_every_version_is_the_dict_it_stands_for(start, steps):
    table, model, history = Table(dict(start)), dict(start), []
    for changes in steps:
        added = sum(1 for key in changes if key not in model)
        table = derive(table, dict(changes), added)
        model = {**model, **changes}
        history.append((table, dict(model)))
    for version, expected in history:  # older versions are untouched by later ones
        assert dict(version.items()) == expected and len(version) == len(expected) and version == expected
        assert all(version[key] == value and key in version for key, value in expected.items())
        assert version.get("zzzz") is None and "zzzz" not in version


def test_deriving_copies_the_changes_not_the_table():
    base = {f"k{n}": {"n": n} for n in range(10_000)}
    table = derive(base, {"new": {"n": -1}}, 1)
    assert table.base is base, "the base dict is shared, not copied"
    later = derive(table, {"k1": {"n": 1.5}}, 0)
    assert later.base is base and len(later.top) == 2 and table["k1"] == {"n": 1}
    for n in range(FOLD_AT):
        later = derive(later, {f"x{n}": {"n": n}}, 1)
    assert later.base is not base and len(later.top) < 8, "past FOLD_AT changes are folded into a new base"
    assert len(later) == 10_001 + FOLD_AT and later["k1"] == {"n": 1.5} and base["k1"] == {"n": 1}


def test_a_source_is_looked_up_one_key_at_a_time_and_loaded_only_to_iterate():
    source = Source({"old": {"n": 0}, "older": {"n": -1}})
    table = Table({"head": {"n": 1}}, size=3, source=source)
    table = derive(table, {"old": {"n": 2}}, 0)
    assert table["head"] == {"n": 1} and table["old"] == {"n": 2} and source.gets == 0
    assert table["older"] == {"n": -1} and source.gets == 1 and source.loads == 0
    assert "missing" not in table and len(table) == 3 and source.loads == 0
    assert dict(table.items()) == {"head": {"n": 1}, "old": {"n": 2}, "older": {"n": -1}} and source.loads == 1
    assert table.in_memory() == {"head": {"n": 1}, "old": {"n": 2}}


def test_copies_and_pickles_are_plain_dicts_of_every_entry():
    table = Table({"a": {"n": 1}}, size=2, source=Source({"b": {"n": 2}}))
    for clone in (copy.deepcopy(table), pickle.loads(pickle.dumps(table))):
        assert clone == {"a": {"n": 1}, "b": {"n": 2}} and type(clone) is dict


def _record(seq: int, images: list[dict], created: list[str]) -> dict:
    return {"v": 1, "event_seq": seq, "type": "commit", "revision": seq, "previous_revision": seq - 1,
            "changes": [{"item": image} for image in images], "acks": [],
            "receipt": {"changes": [{"item": item_id, "op": "created"} for item_id in created]}}


def _image(item_id: str, status: str = "active") -> dict:
    return {"id": item_id, "parent": None, "status": status, "merged_into": None}


def test_replay_shares_the_item_table_between_states():
    first = replay([_record(1, [_image("a"), _image("b")], ["a", "b"])], budget=64)
    second = replay([_record(2, [_image("a", "withdrawn")], [])], first)
    assert second.items.base is first.items.base or second.items.base is first.items.top
    assert first.items["a"]["status"] == "active" and second.items["a"]["status"] == "withdrawn"
    assert (first.inactive_total, second.inactive_total) == (0, 1)
    assert second.active == {None: ("b",)} and len(second.items) == 2


def test_replay_trusts_the_receipt_only_where_a_look_up_would_reach_the_archive():
    source = Source({"old": _image("old", "withdrawn")})
    start = empty_state(64).replace(items=Table({}, size=1, source=source), inactive_total=1)
    replayer = Replayer(start)
    replayer.apply(_record(1, [_image("new")], ["new"]))
    replayer.apply(_record(2, [_image("old")], []))  # a restore: looked up
    state = replayer.freeze()
    assert source.gets == 1, "the created item was not looked up in the archive"
    assert (len(state.items), state.inactive_total, state.active) == (2, 0, {None: ("new", "old")})
