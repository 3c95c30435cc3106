"""Fault points read the environment at the point itself (contract §6.3): a name set or removed
through ``os.environ`` in this process (as in-process tests do) is seen by the very next point."""

from __future__ import annotations

import os

from fold_core.store.faults import environ_value, fault_is, injected
from fold_core.store.file import snapshot_bound
from fold_core.store.locking import lock_timeout


def test_set_and_unset_names_are_seen_at_once(monkeypatch):
    monkeypatch.delenv("FOLD_INJECT", raising=False)
    monkeypatch.delenv("FOLD_FAULT", raising=False)
    assert injected("eio_fsync") is None and not fault_is("mid_append")
    monkeypatch.setenv("FOLD_INJECT", "enospc_append,eio_fsync")
    monkeypatch.setenv("FOLD_FAULT", "mid_append")
    assert injected("eio_fsync") is not None and fault_is("mid_append")
    os.environ["FOLD_SNAPSHOT_EVERY"] = "5"
    os.environ["FOLD_LOCK_TIMEOUT"] = "0.5"
    try:
        assert (snapshot_bound(), lock_timeout()) == (5, 0.5)
    finally:
        del os.environ["FOLD_SNAPSHOT_EVERY"], os.environ["FOLD_LOCK_TIMEOUT"]
    assert (snapshot_bound(), lock_timeout()) == (32, 10.0)
    monkeypatch.delenv("FOLD_INJECT")
    assert injected("eio_fsync") is None


def test_the_same_answers_as_os_environ(monkeypatch):
    monkeypatch.setenv("FOLD_TEST_VALUE", "ä b")
    for name in ("FOLD_TEST_VALUE", "FOLD_NOT_SET_ANYWHERE", "PATH"):
        assert environ_value(name) == os.environ.get(name)
