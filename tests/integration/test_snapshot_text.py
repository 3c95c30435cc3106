"""How the snapshot writes text, and how a long replay parses the log (docs/decisions.md).

The snapshot is UTF-8 like the log, and no raw line break of any kind — not
even U+0085, U+2028 or U+2029, which some readers split lines on — can
enter one of its lines. The kernel refuses those characters in one-line
text, but a log written by another implementation may hold them anywhere.
"""

from __future__ import annotations

import json
import os
import sys

import pytest

from fold_core import kernel
from fold_core.store.base import Store
from fold_core.store.file import FileRecorder
from fold_core.store.log import _loads, bulk_loads, encode_record
from fold_core.store.meta import write_meta
from fold_core.store import parts
from fold_core.store.parts import dumps_line
from fold_core.store.verify import verify_store

BREAKS = ("\n", "\r", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029")
NOW = "2026-10-09T08:00:00+08:00"


@pytest.mark.parametrize("with_orjson", [True, False])
@pytest.mark.parametrize("text", ["签证材料", "a\u2028b\u2029c\x85d", "line\nbreak\r\n", "emoji 😀", "lone \ud800 surrogate"])
def test_a_snapshot_line_is_utf8_without_any_line_break(monkeypatch, text, with_orjson):
    if not with_orjson:
        monkeypatch.setattr(parts, "_fast_dumps", False)  # as if orjson were not installed
    data = dumps_line({"title": text, "notes": [text]})
    assert json.loads(data) == {"title": text, "notes": [text]}
    decoded = data.decode("utf-8")
    assert not any(mark in decoded for mark in BREAKS) and len(decoded.splitlines()) == 1
    if text == "签证材料":
        assert "签证材料".encode() in data, "non-ASCII text is written as UTF-8, not as \\u escapes"


@pytest.mark.parametrize("with_orjson", [True, False])
@pytest.mark.parametrize("odd", [None, "a\u2028b", "c\x85d", "lone \ud800", 2**70])
def test_many_lines_at_once_are_the_lines_one_by_one(monkeypatch, with_orjson, odd):
    """A snapshot written from scratch encodes its archive in one pass: the same bytes as line by line."""
    if not with_orjson:
        monkeypatch.setattr(parts, "_fast_dumps", False)
    values = [{"item": {"id": f"i{n}", "title": "签证材料"}, "notes": []} for n in range(50)]
    if odd is not None:
        values[17]["item"]["title"] = odd
    expected = [dumps_line(value) for value in values]
    assert parts.dumps_lines(values) == expected
    assert parts.dumps_block(values) == (expected, b"\n".join(expected))


def test_a_foreign_log_with_line_separators_in_its_text(tmp_path):
    """Records that break the kernel's text rules are still replayed and snapshotted safely."""
    path = tmp_path / "store"
    path.mkdir()
    write_meta(str(path), 64)
    state, lines = kernel.empty_state(64), []
    for n in range(300):  # enough withdrawn items for an archive
        batch = {"batch_id": f"b{n}", "declarations": [{"id": f"i{n}", "title": f"t{n}", "weight": "low",
                                                         "kind": "fyi"}]}
        if n:
            batch["declarations"].append({"id": f"i{n - 1}", "relation": "withdraw", "reason": "next"})
        outcome = kernel.apply_batch(state, batch, actor="agent", now=NOW)
        record = json.loads(json.dumps(outcome.record))
        for change in record["changes"]:  # what another implementation might have let through
            change["item"]["title"] = f"a\u2028b\u2029c\x85{n}"
        state = kernel.replay([record], state)
        lines.append(encode_record(record))
    (path / "events.jsonl").write_bytes(b"".join(lines))
    store = Store(FileRecorder(path))
    expected = store.state_document(now=NOW, not_active=None).document  # replayed, writes the snapshot
    names = [name for name in os.listdir(path) if name.startswith("snapshot")]
    assert len(names) == 4
    for name in names:
        data = (path / name).read_bytes()
        assert b"\xe2\x80\xa8" not in data and b"\xe2\x80\xa9" not in data and b"\xc2\x85" not in data
        assert len(data.decode("utf-8").splitlines()) == data.count(b"\n")
    assert Store(FileRecorder(path)).state_document(now=NOW, not_active=None).document == expected
    assert expected["not_active"][0]["title"] == "a\u2028b\u2029c\x851"  # i0, as its withdraw wrote it
    assert verify_store(str(path))["ok"]


@pytest.mark.parametrize("odd", [["x", "y", "x\ny"], ['quote"d', "back\\slash", "雪", "tab\tbed"]])
def test_batch_ids_a_foreign_log_spells_oddly_survive_the_snapshot(tmp_path, odd):
    """The snapshot's batch index writes most ids as they are, checked in one pass over them all: ids
    that need escaping — or that hold the newline that pass joins them with — must not slip through."""
    path = tmp_path / "store"
    path.mkdir()
    write_meta(str(path), 64)
    state, lines, batch_ids = kernel.empty_state(64), [], ["plain-1", *odd]
    for n, batch_id in enumerate(batch_ids):
        batch = {"batch_id": f"b{n}", "declarations": [{"id": f"i{n}", "title": f"t{n}", "weight": "low",
                                                         "kind": "fyi"}]}
        record = json.loads(json.dumps(kernel.apply_batch(state, batch, actor="agent", now=NOW).record))
        record["batch_id"] = record["receipt"]["batch_id"] = batch_id  # another implementation's batch_id
        state = kernel.replay([record], state)
        lines.append(encode_record(record))
    (path / "events.jsonl").write_bytes(b"".join(lines))
    assert Store(FileRecorder(path)).history(batch="plain-1").document["found"]  # replayed; the snapshot written
    assert (path / "snapshot.json").exists()
    fresh = Store(FileRecorder(path))  # answers from the snapshot's batch index
    for batch_id in batch_ids:
        document = fresh.history(batch=batch_id).document
        assert document["found"] and document["record"]["batch_id"] == batch_id, batch_id
    assert verify_store(str(path))["ok"]


LINES = [b'{"a":1,"b":[true,null,"\xe4\xb8\xad"]}\n', b'{"big":18446744073709551615}\n', b'{"n":NaN}\n',
         b'"\\ud800"\n', b'{"a":1}x\n', b'\xef\xbb\xbf{"a":1}\n', b'{"a":1,"a":2}\n', b'{"a":"\\u2028"}\n',
         b"[" * 5000 + b"]" * 5000 + b"\n", b"\x00\x00\n", b'{"f":1.5e3,"g":-0.0}\n']


def _outcome(parse, line):
    try:
        value = parse(line)
    except RecursionError:
        return "RecursionError"
    except ValueError:
        return "ValueError"
    return json.dumps(value, sort_keys=True)


@pytest.mark.parametrize("with_orjson", [True, False])
def test_the_bulk_parser_answers_as_json_loads(monkeypatch, with_orjson):
    if not with_orjson:
        monkeypatch.setitem(sys.modules, "orjson", None)  # as if it were not installed
    parse = bulk_loads()
    assert (parse is _loads) == (not with_orjson)
    for line in LINES:
        assert _outcome(parse, line) == _outcome(json.loads, line), line[:40]


@pytest.mark.parametrize("odd", ["Bad Id", "x\ny", "雪"])
def test_an_id_the_index_cannot_hold_stays_in_the_head_of_a_large_snapshot(odd):
    """Many items are checked in one pass: one id that does not match ITEM_ID still keeps its item in
    the head (a foreign log may hold such ids; the archive's index cannot)."""
    from fold_core.state import State
    from fold_core.store.layout import plan_head
    from fold_core.table import Table

    def gone(item_id: str, minute: int) -> dict:
        return {"id": item_id, "status": "withdrawn", "status_at": f"2026-10-09T{minute // 60 % 24:02d}:"
                f"{minute % 60:02d}:00+08:00", "merged_into": None, "parent": None}

    items = {f"i{n}": gone(f"i{n}", n) for n in range(5000)}
    items[odd] = gone(odd, 0)  # the oldest: only its id can keep it in the head
    plan = plan_head(State(budget=64, items=Table(items), inactive_total=len(items)), None, None)
    assert odd in plan.items
    assert odd not in {item["id"] for item, _notes, _fresh in plan.entries}
