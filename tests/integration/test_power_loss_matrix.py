"""The crash matrix again, with a power cut instead of a process crash (contract §6.2, §6.3).

In ``test_crash_matrix`` a crash is ``os._exit``: the operating system still
holds every write, fsynced or not, so a missing fsync goes unseen. Here every
``foldctl`` process of a history runs under the syscall spy
(``durability_spy``), and when it ends — normally or at its ``FOLD_FAULT``
point — the store directory is cut back to what was durable: each file to its
content at its last fsync, each directory to its entries at its last directory
fsync (renames and creations since then undone). The next process starts from
that.

The history and its checks are ``test_crash_matrix.History``'s: every receipt
that was printed is found with ``history --batch``, the state equals the
in-memory model's and a clean replay of the log, the log holds exactly the
model's records (nothing lost, nothing extra, nothing twice), and a retry of
the killed batch returns the original receipt or commits it once. Only what
survives the crash differs: a record written but not yet fsynced
(``after_append``) is lost with the power, and a half-written one
(``mid_append``) leaves no torn tail behind.

A few seeds per fault point keep it fast; ``run_history(fault, seed,
directory, PowerLossHistory)`` replays one history.
"""

from __future__ import annotations

import pytest

from durability_spy import apply_power_loss, run_spied
from test_crash_matrix import FAULTS, History, run_matrix

HISTORIES = 2
SURVIVES_POWER_LOSS = {**FAULTS, "after_append": False}


class PowerLossHistory(History):
    """A history whose every process ends in a power cut."""

    COMMITTED = SURVIVES_POWER_LOSS
    TORN_AFTER = None  # a fragment that was never fsynced does not survive the cut

    def foldctl(self, *args: str, stdin: str | None = None, env: dict | None = None):
        journal = self.store.parent / "journal.json"
        code, doc, err, record = run_spied(self.store, list(args), stdin=stdin, env=env, journal=journal)
        apply_power_loss(self.store, record)
        return code, doc, err


@pytest.mark.parametrize("fault", FAULTS)
def test_power_loss_matrix(fault, tmp_path):
    base = 7000 + 100 * list(FAULTS).index(fault)
    run_matrix(fault, list(range(base, base + HISTORIES)), tmp_path, PowerLossHistory)
