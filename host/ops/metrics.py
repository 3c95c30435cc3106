"""``GET /metrics``: Fold's numbers in the Prometheus text format, read at scrape time.

``StoreCollector`` is a ``prometheus_client`` custom collector: every scrape
reads host.db (the ``counters`` table, the inbox counts, the sources, the
consumers, the daemon record) and the store's state, so the numbers survive
restarts of the daemon and of the server, and several servers over one store
agree. Nothing is counted in memory.

Counters (``_total``): ``fold_polls_total{source,status}``,
``fold_windows_total{outcome}``, ``fold_agent_calls_total{backend,outcome}``,
``fold_agent_tokens_total{direction}``, ``fold_editor_tokens_total{kind}``
(in, cached, out), ``fold_editor_cost_total`` (under ``[agent] prices``), ``fold_rejections_total`` (editor
answers refused: no usable JSON, the host's checks, the kernel), ``fold_deliveries_total{consumer,outcome}``,
``fold_commits_total`` (accepted batches that changed the state: the store's
revision). Gauges: ``fold_observations{status}``, ``fold_store_event_seq``,
``fold_source_last_success_timestamp_seconds{source}``,
``fold_source_failures{source}`` (failed polls in a row),
``fold_consumer_lag_events{consumer}``,
``fold_daemon_heartbeat_timestamp_seconds``. The attention figures
(``fold_host.report.build.attention``, all time): ``fold_notifications_total{kind,mode}``,
``fold_false_interrupts_total``, ``fold_missed_escalations_total``,
``fold_decisions_total{status}`` (``answered``, ``late``, ``fell_back``, ``open``); they read the
store's history, so they are computed again only when the store, the feedback or a push ledger moved.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import datetime, timezone

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector, CollectorRegistry

from fold_core.state import State
from fold_core.timefmt import parse_instant
from fold_host.hostdb import HostDB, host_db_exists, open_host_db
from fold_host.hostdb.calls import COST_UNIT
from fold_host.report.build import attention, gather

__all__ = ["StoreCollector", "registry_for"]

STATUSES = ("pending", "processed", "deferred", "expired")
REJECTED = {("rejected",), ("invalid",)}  # call outcomes of an answer that was refused
EVER = (datetime(1, 1, 2, tzinfo=timezone.utc), datetime(9999, 12, 30, tzinfo=timezone.utc))


class StoreCollector(Collector):
    """Reads host.db and the store at every ``collect``; keeps one host.db connection between scrapes."""

    def __init__(self, store_dir: str, read_state: Callable[[], State]) -> None:
        self.store_dir, self.read_state = store_dir, read_state
        self._db: HostDB | None = None
        self._lock = threading.Lock()
        self._attention: tuple[tuple, dict] | None = None

    def collect(self):
        state = self.read_state()
        yield _gauge("fold_store_event_seq", "The store's last event_seq.", state.event_seq)
        yield _counter("fold_commits_total", "Accepted batches that changed the state (the store's revision).",
                       state.revision)
        with self._lock:
            db = self._open()
            if db is None:
                return
            counters = db.counters()
            statuses = db.status_counts()
            sources = db.source_rows()
            consumers = db.consumer_rows()
            daemon = db.daemon_record()
            figures = self._figures(db, state.event_seq)
        yield from _counted(counters)
        yield from _attention(figures)
        observations = GaugeMetricFamily("fold_observations", "Observations in the inbox by status.",
                                         labels=["status"])
        for status in STATUSES:
            observations.add_metric([status], statuses.get(status, 0))
        yield observations
        yield from _sources(sources)
        lag = GaugeMetricFamily("fold_consumer_lag_events", "Records a consumer has not acknowledged yet.",
                                labels=["consumer"])
        for row in consumers:
            lag.add_metric([row["name"]], max(state.event_seq - row["event_seq"], 0))
        yield lag
        beat = parse_instant((daemon or {}).get("beat_at"))
        if beat is not None:
            yield _gauge("fold_daemon_heartbeat_timestamp_seconds", "When the daemon last showed it was alive.",
                         beat.timestamp())

    def _figures(self, db: HostDB, event_seq: int) -> dict:
        """The all-time attention figures, computed again only when their inputs moved."""
        feedback = db.recent_feedback(1)
        ledgers = [len((db.memory(row["name"]).get("push") or {}).get("ledger") or ())
                   for row in db.consumer_rows()]
        key = (event_seq, feedback[-1]["seq"] if feedback else 0, tuple(ledgers))
        if self._attention is None or self._attention[0] != key:
            self._attention = (key, attention(gather(self.store_dir, db), EVER[0], EVER[1], detail=True))
        return self._attention[1]

    def _open(self) -> HostDB | None:
        if self._db is None and host_db_exists(self.store_dir):
            self._db = open_host_db(self.store_dir)
        return self._db


COUNTERS = {  # host.db counter -> (metric, help, label names)
    "polls": ("fold_polls", "Polls by source and outcome (ok, failed).", ["source", "status"]),
    "windows": ("fold_windows", "Editor windows by outcome (committed, checked, acknowledged, failed).",
                ["outcome"]),
    "agent_calls": ("fold_agent_calls", "Editor calls by backend and outcome.", ["backend", "outcome"]),
    "agent_tokens": ("fold_agent_tokens", "Tokens the editor read (input) and wrote (output).", ["direction"]),
    "deliveries": ("fold_deliveries", "Deliveries to consumers by consumer and outcome (ok, failed).",
                   ["consumer", "outcome"]),
}


def _counted(counters: dict):
    for key, (name, text, labels) in COUNTERS.items():
        family = CounterMetricFamily(name, text, labels=labels)
        for values, value in counters.get(key, ()):
            if len(values) == len(labels):
                family.add_metric(list(values), value)
        if key == "windows":
            seen = {values[0] for values, _ in counters.get(key, ())}
            for outcome in ("committed", "checked", "acknowledged", "failed"):
                if outcome not in seen:
                    family.add_metric([outcome], 0)
        yield family
    tokens = CounterMetricFamily("fold_editor_tokens", "Prompt tokens (in, cached among them) and answer tokens (out) "
                                 "the editor's backend reported.", labels=["kind"])
    counted = {values[0]: value for values, value in counters.get("agent_tokens", ()) if len(values) == 1}
    for kind, key in (("in", "input"), ("cached", "cached"), ("out", "output")):
        tokens.add_metric([kind], counted.get(key, 0))
    yield tokens
    cost = sum(value for _, value in counters.get("agent_cost", ())) / COST_UNIT
    yield _counter("fold_editor_cost", "What the editor's calls cost under [agent] prices.", cost)
    rejected = sum(value for values, value in counters.get("agent_calls", ()) if values[-1:] in REJECTED)
    yield _counter("fold_rejections_total", "Editor answers rejected (no usable JSON, the host's checks, the kernel).",
                   rejected)


def _attention(figures: dict):
    sent = CounterMetricFamily("fold_notifications", "Push notifications sent, by kind (the first rule: created, "
                               "raised, due, decision, deadline, source_failing, …) and mode (interrupt, digest, "
                               "held).", labels=["kind", "mode"])
    for (kind, mode), value in sorted(figures.get("by_kind_mode", {}).items()):
        sent.add_metric([kind, mode], value)
    yield sent
    yield _counter("fold_false_interrupts", "Interrupts the user snoozed or acknowledged without acting within 24 h, "
                   "or whose weight the editor lowered within 24 h.", figures["false_interrupts"])
    yield _counter("fold_missed_escalations", "Items the user acted on, decided or annotated while no interrupt "
                   "had gone out for them.", figures["missed_escalations"])
    decisions = CounterMetricFamily("fold_decisions", "Decisions by outcome (answered before decide_by, late, "
                                    "fell_back, still open).", labels=["status"])
    counted = figures["decisions"]
    for status, key in (("answered", "answered_before_deadline"), ("late", "answered_late"),
                        ("fell_back", "fell_back"), ("open", "open")):
        decisions.add_metric([status], counted[key])
    yield decisions


def _sources(rows: dict):
    last_ok = GaugeMetricFamily("fold_source_last_success_timestamp_seconds",
                                "When each source was last polled successfully (Unix time).", labels=["source"])
    failures = GaugeMetricFamily("fold_source_failures", "Failed polls in a row per source.", labels=["source"])
    for name, row in sorted(rows.items()):
        moment = parse_instant(row["last_ok_at"])
        if moment is not None:
            last_ok.add_metric([name], moment.timestamp())
        failures.add_metric([name], row["failures"])
    yield last_ok
    yield failures


def _gauge(name: str, text: str, value: float) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, text, value=value)


def _counter(name: str, text: str, value: float) -> CounterMetricFamily:
    return CounterMetricFamily(name, text, value=value)


def registry_for(store_dir: str, read_state: Callable[[], State]) -> CollectorRegistry:
    """A registry holding only Fold's collector (no process or platform metrics of the server)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(StoreCollector(store_dir, read_state))
    return registry
