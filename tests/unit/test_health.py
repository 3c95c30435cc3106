"""The daemon check behind /healthz and doctor: what a record in host.db and the host lock say together."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from fold_host.daemon.health import STALE_AFTER, daemon_check

NOW = datetime(2026, 10, 9, 8, 0, tzinfo=timezone(timedelta(hours=8)))


def record(beat_seconds_ago: float, *, stopped: bool = False, pid: int = 42) -> dict:
    beat = (NOW - timedelta(seconds=beat_seconds_ago)).isoformat()
    return {"pid": pid, "started_at": beat, "beat_at": beat, "stopped_at": beat if stopped else None}


def test_a_store_only_ever_ticked_needs_no_daemon():
    assert daemon_check(None, None, NOW) == (True, "no daemon has run on this store (ticked by hand or by cron)")
    assert daemon_check(None, "pid 7: foldctl tick", NOW)[0] is True


def test_a_clean_stop_is_well_and_a_death_is_not():
    assert daemon_check(record(3600, stopped=True), None, NOW)[0] is True
    ok, detail = daemon_check(record(5), None, NOW)
    assert not ok and "died without a clean stop" in detail


def test_only_the_recorded_daemon_holding_the_lock_counts_as_running():
    assert daemon_check(record(5), "pid 42: foldctl run", NOW)[0] is True
    for holder in ("pid 43: foldctl run", "pid 43: foldctl tick", "a host process"):  # a new start, a tick, unknown
        ok, detail = daemon_check(record(5), holder, NOW)
        assert not ok and "died without a clean stop" in detail and holder in detail


def test_a_heartbeat_older_than_a_minute_is_a_stuck_daemon():
    assert daemon_check(record(STALE_AFTER - 1), "pid 42: foldctl run", NOW)[0] is True
    ok, detail = daemon_check(record(STALE_AFTER + 1), "pid 42: foldctl run", NOW)
    assert not ok and "is stuck" in detail
