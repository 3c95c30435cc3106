"""What is durable, and when (contract §6.2 steps 4–6, torn tail rule).

Real ``foldctl`` processes run under the syscall spy of ``durability_spy``,
which records every fsync, directory fsync, rename and the moment the answer
leaves on stdout, and computes what a power cut would leave of the store. The
tests check the order the contract asks for:

* the log is fsynced, up to the end of the new record, before the receipt is
  printed; its directory is fsynced (listing ``events.jsonl``) before that
  when the log was just created, and when a torn tail was repaired;
* every file renamed into place (``meta.json``, ``snapshot.json``) was fsynced
  with its final content before the rename, and the directory is fsynced after
  the rename before the process ends;

and the outcome: after the power cut, every receipt that was printed is found
by ``history --batch`` and nothing else is in the log.
"""

from __future__ import annotations

import json

import pytest

from durability_spy import Journal, apply_power_loss, run_spied

NOW = "2026-10-09T08:00:00+08:00"


def batch(batch_id: str) -> str:
    return json.dumps({"batch_id": batch_id, "declarations": [
        {"id": batch_id, "title": "持久", "weight": "trace", "kind": "fyi"}]})


def commit(store, batch_id: str, env: dict | None = None) -> tuple[dict, Journal]:
    code, receipt, err, journal = run_spied(store, ["commit", "--actor", "agent", "--now", NOW],
                                            stdin=batch(batch_id), env=env)
    assert code == 0 and receipt["ok"] is True, (receipt, err)
    return receipt, journal


def record_end(store, event_seq: int) -> int:
    """Byte offset of the end of record ``event_seq`` in the log."""
    lines = (store / "events.jsonl").read_bytes().splitlines(keepends=True)
    assert json.loads(lines[event_seq - 1])["event_seq"] == event_seq
    return sum(len(line) for line in lines[:event_seq])


def assert_log_synced_before_receipt(journal: Journal, end: int) -> None:
    output = journal.output_at
    assert output is not None, "no receipt was printed"
    synced = journal.index("fsync", 0, path=lambda e: e[1] == "events.jsonl", size=lambda e: e[2] >= end)
    assert synced is not None and synced < output, (
        f"events.jsonl was not fsynced up to byte {end} before the receipt: {journal.events}")


def assert_log_entry_synced_before_receipt(journal: Journal, after: int = 0) -> None:
    synced = journal.index("dirsync", after, path=lambda e: e[1] == "", names=lambda e: "events.jsonl" in e[2])
    assert synced is not None and synced < journal.output_at, (
        f"the store directory was not fsynced with events.jsonl in it before the receipt: {journal.events}")


def assert_renames_durable(journal: Journal) -> list[int]:
    """Every rename's source was fsynced with its content before; a directory fsync follows."""
    renames = [position for position, event in enumerate(journal.events) if event[0] == "rename"]
    for position in renames:
        _, source, target, key = journal.events[position]
        synced = [e for e in journal.events[:position] if e[0] == "fsync" and e[3] == key]
        assert synced, f"{source} was renamed to {target} without an fsync: {journal.events}"
        assert journal.index("dirsync", position + 1, path=lambda e: e[1] == "") is not None, (
            f"no directory fsync after renaming {source} to {target}: {journal.events}")
    return renames


def test_first_commit_syncs_meta_log_and_directory_before_the_receipt(tmp_path):
    store = tmp_path / "store"  # no init: the first accepted commit creates the store
    receipt, journal = commit(store, "b1")
    assert_log_synced_before_receipt(journal, record_end(store, 1))
    assert_log_entry_synced_before_receipt(journal)
    renamed = [journal.events[p][2] for p in assert_renames_durable(journal)]
    assert "meta.json" in renamed
    meta_durable = journal.index("dirsync", 0, names=lambda e: "meta.json" in e[2])
    assert meta_durable is not None and meta_durable < journal.output_at
    apply_power_loss(store, journal)
    code, found, err, _ = run_spied(store, ["history", "--batch", "b1"])
    assert code == 0 and found["found"] is True and found["record"]["receipt"] == receipt, err


def test_commit_after_init_syncs_the_new_log_and_its_directory_entry(tmp_path):
    store = tmp_path / "store"
    code, created, err, journal = run_spied(store, ["init", "--budget", "32"])
    assert code == 0 and created["created"] is True, err
    assert_renames_durable(journal)
    apply_power_loss(store, journal)
    receipt, journal = commit(store, "b1")
    assert_log_synced_before_receipt(journal, record_end(store, 1))
    assert_log_entry_synced_before_receipt(journal)
    apply_power_loss(store, journal)
    code, state, err, _ = run_spied(store, ["state", "--now", NOW])
    assert code == 0 and state["budget"] == 32 and state["event_seq"] == 1, err


@pytest.mark.parametrize("every", [None, "1"])
def test_later_commits_sync_the_log_and_snapshots_are_synced_before_their_rename(tmp_path, every):
    store = tmp_path / "store"
    env = {"FOLD_SNAPSHOT_EVERY": every} if every else None
    receipts = []
    for n in range(1, 4):
        receipt, journal = commit(store, f"b{n}", env)
        receipts.append(receipt)
        assert_log_synced_before_receipt(journal, record_end(store, n))
        renamed = [journal.events[p][2] for p in assert_renames_durable(journal)]
        if every and n > 1:
            assert "snapshot.json" in renamed, journal.events
        apply_power_loss(store, journal)
    code, history, err, _ = run_spied(store, ["history"])
    assert code == 0 and [r["receipt"] for r in history["records"]] == receipts, err


def test_a_repaired_torn_tail_is_synced_with_its_directory(tmp_path):
    store = tmp_path / "store"
    first, journal = commit(store, "b1")
    apply_power_loss(store, journal)
    with open(store / "events.jsonl", "ab") as log:  # a torn fragment a dead writer left
        log.write(b'{"v":1,"event_seq":2,"type":"comm')
    size = (store / "events.jsonl").stat().st_size
    receipt, journal = commit(store, "b2")
    assert receipt["event_seq"] == 2
    assert_log_synced_before_receipt(journal, record_end(store, 2))
    shrunk = journal.index("truncate", 0, path=lambda e: e[1] == "events.jsonl", size=lambda e: e[2] < size)
    repaired = journal.index("fsync", 0, path=lambda e: e[1] == "events.jsonl", size=lambda e: e[2] < size)
    assert repaired is not None or shrunk is not None, f"no repair of the torn tail seen: {journal.events}"
    start = min(p for p in (shrunk, repaired) if p is not None)
    assert_log_entry_synced_before_receipt(journal, after=start)
    apply_power_loss(store, journal)
    code, history, err, _ = run_spied(store, ["history"])
    assert code == 0 and [r["receipt"] for r in history["records"]] == [first, receipt], err
    code, report, err, _ = run_spied(store, ["verify"])
    assert code == 0 and report["torn_tail"] is None, (report, err)


def test_a_printed_receipt_survives_a_power_cut_and_nothing_else_appears(tmp_path):
    """The killed commit of each fault point: after a power cut, exactly the fsynced records remain."""
    store = tmp_path / "store"
    receipt, journal = commit(store, "kept")
    apply_power_loss(store, journal)
    expected = {"before_append": False, "mid_append": False, "after_append": False,
                "after_fsync": True, "mid_snapshot": True}
    for n, (fault, survives) in enumerate(expected.items()):
        env = {"FOLD_FAULT": fault, "FOLD_SNAPSHOT_EVERY": "1"}
        code, doc, err, journal = run_spied(store, ["commit", "--actor", "agent", "--now", NOW],
                                            stdin=batch(f"killed-{n}"), env=env)
        assert code == 137 and doc is None, (fault, code, err)
        apply_power_loss(store, journal)
        code, found, err, journal = run_spied(store, ["history", "--batch", f"killed-{n}"])
        assert code == 0 and found["found"] is survives, (fault, found, err)
        apply_power_loss(store, journal)
        code, found, err, _ = run_spied(store, ["history", "--batch", "kept"])
        assert code == 0 and found["found"] is True and found["record"]["receipt"] == receipt, (fault, found, err)
        if not survives:  # retried, it commits once
            receipt_n, journal = commit(store, f"killed-{n}")
            assert receipt_n["replayed"] is False
            apply_power_loss(store, journal)
    code, report, err, _ = run_spied(store, ["verify"])
    assert code == 0 and report["records"] == 1 + len(expected), (report, err)
