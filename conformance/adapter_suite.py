"""The adapter conformance suite (contract §10, §11).

Every adapter — built-in or third-party — can prove it behaves like a Fold
source by subclassing ``AdapterConformance`` in a pytest module and providing
three fixtures. pytest collects the subclass (name it ``Test…``); the base
class itself is never collected.

Fixtures a subclass provides
----------------------------
``make_adapter``
    A callable ``make_adapter() -> Adapter``. Each call returns a **fresh**
    adapter instance (a "restart": no state kept in memory between instances)
    reading the **same** source. The source must be reachable.
``add_new_data``
    A callable ``add_new_data() -> int | None`` that adds new material to the
    source (an entry to the feed, a line to the log, a message to the
    mailbox). It may return how many observations the next poll must yield
    (then the suite checks the exact number), or None (then "at least one").
    It is called several times in one test; each call must add material that
    differs from every earlier call.
``make_failing_adapter``
    A callable ``make_failing_adapter() -> Adapter`` returning an adapter
    whose source fails (a port nobody listens on, a missing directory, a
    wrong password).

Optional fixture: ``poll_now`` (a tz-aware ``datetime`` passed as ``now``;
default 2026-10-09T08:00:00+00:00).

What the suite checks
---------------------
* a poll returns a ``fold_core.observation.Poll``; on a healthy source its
  health is ``ok``;
* every observation validates as ``fold_core.observation.Observation``
  (re-validated from its JSON form), its ``id`` is
  ``"<instance name>:<native id>"``, its ``source`` is the instance name, its
  ``channel`` the type's ``channel`` and its ``observed_at`` the poll's ``now``;
* cursors round-trip through JSON (the suite passes every cursor back only
  after ``json.loads(json.dumps(cursor))``, as the host does);
* new data is seen by the next poll, and a second poll without new data
  yields nothing — also from a fresh instance given the saved cursor;
* ids are stable: a fresh instance polling from the same saved cursor yields
  the same ids as the first instance did; ids never repeat across a run of
  polls;
* a failing source reports ``Health(status="failed")`` with an error class and
  a message, and no observation, instead of raising;
* the type is registrable: ``type_name``, ``channel`` and a ``Settings`` model
  derived from ``AdapterSettings``.

Example (a third-party adapter)::

    import pytest
    from conformance.adapter_suite import AdapterConformance

    class TestMyAdapterConformance(AdapterConformance):
        @pytest.fixture
        def make_adapter(self, tmp_path):
            return lambda: MyAdapter("mine", MyAdapter.Settings(path=tmp_path))

        @pytest.fixture
        def add_new_data(self, tmp_path):
            counter = iter(range(10**6))
            def add():
                (tmp_path / f"{next(counter)}.txt").write_text("hello")
                return 1
            return add

        @pytest.fixture
        def make_failing_adapter(self, tmp_path):
            return lambda: MyAdapter("mine", MyAdapter.Settings(path=tmp_path / "missing"))
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Any

import pytest

from fold_core.observation import Observation, Poll
from fold_core.plugin_api import Adapter
from fold_core.settings import AdapterSettings
from fold_core.timefmt import parse_instant

__all__ = ["AdapterConformance", "json_round_trip"]

DEFAULT_NOW = datetime(2026, 10, 9, 8, 0, tzinfo=timezone.utc)


def json_round_trip(value: Any) -> Any:
    """``value`` as the host gives it back after storing it as JSON text."""
    return json.loads(json.dumps(value))


class AdapterConformance:
    """Subclass (as ``Test…``) and provide ``make_adapter``, ``add_new_data``, ``make_failing_adapter``."""

    @pytest.fixture
    def poll_now(self) -> datetime:
        return DEFAULT_NOW

    # -- helpers ---------------------------------------------------------------

    def poll(self, adapter: Adapter, cursor: Any, now: datetime) -> Poll:
        """One poll the way the host does it: the cursor comes back from JSON, the result is checked."""
        result = adapter.poll(json_round_trip(cursor), now=now)
        assert isinstance(result, Poll), f"poll() returned {type(result).__name__}, expected Poll"
        assert json_round_trip(result.cursor) == result.cursor, "the cursor does not survive JSON"
        for observation in result.observations:
            self.check_observation(adapter, observation, now)
        return result

    def poll_ok(self, adapter: Adapter, cursor: Any, now: datetime) -> Poll:
        result = self.poll(adapter, cursor, now)
        assert result.health.status == "ok", f"healthy source reported {result.health!r}"
        return result

    def check_observation(self, adapter: Adapter, observation: Any, now: datetime) -> None:
        assert isinstance(observation, Observation), f"{observation!r} is not an Observation"
        again = Observation.model_validate(json.loads(observation.to_json()))
        assert again == observation, "the observation does not survive its JSON form"
        assert observation.id.startswith(f"{adapter.name}:"), (
            f"id {observation.id!r} must start with the instance name {adapter.name!r}")
        assert observation.source == adapter.name
        assert observation.channel == adapter.channel
        assert parse_instant(observation.observed_at) == now, (
            f"observed_at {observation.observed_at!r} is not the poll's now {now.isoformat()}")

    def new_data_poll(self, adapter: Adapter, cursor: Any, now: datetime, add_new_data) -> Poll:
        """Add data, poll, and check the poll saw it."""
        expected = add_new_data()
        result = self.poll_ok(adapter, cursor, now)
        if isinstance(expected, int) and not isinstance(expected, bool):
            assert len(result.observations) == expected, (
                f"expected {expected} new observation(s), got {len(result.observations)}")
        else:
            assert result.observations, "new data was added but the poll yielded nothing"
        return result

    # -- the suite -------------------------------------------------------------

    def test_type_is_registrable(self, make_adapter) -> None:
        adapter = make_adapter()
        cls = type(adapter)
        assert isinstance(adapter, Adapter)
        assert isinstance(getattr(cls, "type_name", None), str) and cls.type_name
        assert isinstance(getattr(cls, "channel", None), str) and cls.channel
        assert issubclass(cls.Settings, AdapterSettings)
        assert isinstance(adapter.settings, cls.Settings)

    def test_second_poll_without_new_data_yields_nothing(self, make_adapter, add_new_data, poll_now) -> None:
        adapter = make_adapter()
        first = self.poll_ok(adapter, None, poll_now)
        second = self.new_data_poll(adapter, first.cursor, poll_now, add_new_data)
        third = self.poll_ok(adapter, second.cursor, poll_now)
        assert third.observations == [], f"nothing was added, yet got {[o.id for o in third.observations]}"
        fourth = self.poll_ok(adapter, third.cursor, poll_now)
        assert fourth.observations == []

    def test_cursor_round_trips_through_json(self, make_adapter, add_new_data, poll_now) -> None:
        adapter = make_adapter()
        cursor = self.poll_ok(adapter, None, poll_now).cursor
        for _ in range(2):
            result = self.new_data_poll(adapter, cursor, poll_now, add_new_data)
            text = json.dumps(result.cursor, ensure_ascii=False)
            assert json.loads(text) == result.cursor
            cursor = json.loads(text)
        assert self.poll_ok(make_adapter(), cursor, poll_now).observations == []

    def test_ids_are_stable_across_polls_and_restarts(self, make_adapter, add_new_data, poll_now) -> None:
        adapter = make_adapter()
        baseline = self.poll_ok(adapter, None, poll_now)
        fresh_baseline = self.poll_ok(make_adapter(), None, poll_now)
        assert sorted(o.id for o in fresh_baseline.observations) == sorted(o.id for o in baseline.observations), (
            "two fresh instances polling the same source from scratch disagree on ids")
        saved = baseline.cursor
        seen = self.new_data_poll(adapter, saved, poll_now, add_new_data)
        ids = [o.id for o in seen.observations]
        assert len(ids) == len(set(ids)), f"one poll repeated an id: {ids}"
        # A restart before the cursor was saved: the same material again, under the same ids.
        replayed = self.poll_ok(make_adapter(), saved, poll_now)
        assert sorted(o.id for o in replayed.observations) == sorted(ids), (
            "a fresh instance given the same saved cursor yields different ids")
        # A restart after it was saved: nothing again.
        assert self.poll_ok(make_adapter(), seen.cursor, poll_now).observations == []

    def test_ids_never_repeat_across_polls(self, make_adapter, add_new_data, poll_now) -> None:
        adapter = make_adapter()
        result = self.poll_ok(adapter, None, poll_now)
        all_ids = [o.id for o in result.observations]
        cursor = result.cursor
        for _ in range(3):
            result = self.new_data_poll(adapter, cursor, poll_now, add_new_data)
            all_ids += [o.id for o in result.observations]
            cursor = result.cursor
            result = self.poll_ok(make_adapter(), cursor, poll_now)
            all_ids += [o.id for o in result.observations]
            cursor = result.cursor
        assert len(all_ids) == len(set(all_ids)), f"ids repeated across polls: {sorted(all_ids)}"

    def test_failing_source_reports_health_instead_of_raising(self, make_failing_adapter, poll_now) -> None:
        adapter = make_failing_adapter()
        result = self.poll(adapter, None, poll_now)
        assert result.health.status == "failed", f"a failing source reported {result.health!r}"
        assert result.health.error_class, "a failed health needs an error class"
        assert result.health.message, "a failed health needs a message"
        assert result.observations == []
        # Polling again (the host retries with backoff) fails the same way, still without raising.
        again = self.poll(adapter, result.cursor, poll_now)
        assert again.health.status == "failed"
        assert again.observations == []
