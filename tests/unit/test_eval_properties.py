"""The skill evaluation's mechanical checks and metrics (contract §15), on hand-made runs."""

from __future__ import annotations

import json

import pytest

from fold_core.errors import ConfigError
from fold_host.evaluation.properties import Run, check
from fold_host.evaluation.report import Result, build_report, render_markdown
from fold_host.evaluation.scenarios import Scenario, load_scenarios


def scenario(**overrides) -> Scenario:
    data = {"name": "s", "now": "2026-10-09T08:00:00+08:00",
            "events": [{"id": "e-1", "channel": "email", "title": "签证", "text": "缺流水"}],
            "expect": {"outcome": "committed", "surface": [{"match": "签证", "min_weight": "high", "kind": "needs-you"}],
                       "absent": [{"match": "促销"}], "forbidden": ["已完成"], "dispositions": {"e-1": ["used"]},
                       "acknowledge_all": True, "restored": ["reading"], "max_attempts": 2}}
    data.update(overrides)
    return Scenario.model_validate(data)


def item(id_, title, weight, kind="needs-you", refs=("event:e-1",)):
    return {"id": id_, "title": title, "summary": None, "weight": weight, "kind": kind,
            "sources": [{"channel": "email", "ref": r} for r in refs], "children": None}


def state(*items, pending=()):
    return {"root": {"items": list(items)}, "pending_annotations": [{"id": a} for a in pending]}


def test_every_property_passes_on_a_good_run():
    run = Run(outcome="committed", before=state(pending=["ann-1"]),
              after=state(item("visa", "签证材料缺银行流水", "critical"), item("reading", "分布式快照", "low", "fyi", ())),
              declarations=[{"id": "visa", "title": "签证材料缺银行流水", "summary": "12日前送到"}],
              dispositions={"e-1": "used"}, receipt={"changes": [{"item": "reading", "op": "restored"}]}, attempts=1)
    findings = check(scenario(), run)
    assert [f.passed for f in findings] == [True] * len(findings)
    assert len(findings) == 8


def test_each_property_fails_where_a_user_would_see_the_problem():
    run = Run(outcome="failed", before=state(pending=["ann-1"]),
              after=state(item("visa", "签证材料缺银行流水", "normal"), item("promo", "双十一促销", "trace", "fyi"),
                          item("reading-2", "分布式快照", "low", "fyi"), pending=["ann-1"]),
              declarations=[{"id": "visa", "title": "签证", "summary": "材料已完成"}],
              dispositions={"e-1": "noise"}, receipt={"changes": [{"item": "reading-2", "op": "created"}]}, attempts=3)
    findings = {f.property.split(" ")[0]: f for f in check(scenario(), run)}
    assert not any(f.passed for f in findings.values()), findings
    assert "visa (normal, needs-you)" in findings["surface"].detail
    assert "promo" in findings["absent"].detail
    assert "材料已完成" in findings["forbidden"].detail


def test_pairs_give_weight_stability_and_context_sensitivity():
    a = scenario(name="a", pair={"with": "b", "kind": "paraphrase"})
    b = scenario(name="b")
    c = scenario(name="c", pair={"with": "d", "kind": "context", "expect_change": "up"})
    d = scenario(name="d")
    runs = {
        "a": state(item("x", "签证", "high")), "b": state(item("y", "签证", "high")),
        "c": state(item("x", "告警", "low")), "d": state(item("x", "告警", "critical")),
    }
    results = [Result(s, Run(outcome="committed", before=state(), after=runs[s.name],
                             accepted_declarations=[{"id": "x", "weight": "high", "share": 10}, {"id": "z"}]), [])
               for s in (a, b, c, d)]
    report = build_report(results, backend="test")
    assert report["metrics"]["weight_stability"]["value"] == 1.0
    assert report["metrics"]["context_sensitivity"]["value"] == 1.0
    assert report["metrics"]["share_override_rate"] == {"numerator": 4, "denominator": 8, "value": 0.5}
    assert "weight stability" in render_markdown(report)


def test_the_bundled_suite_loads_and_a_malformed_scenario_names_file_and_field(tmp_path):
    loaded = load_scenarios("eval")
    assert len(loaded) >= 20
    pairs = [s.pair for _, s in loaded if s.pair is not None]
    assert sum(p.kind == "paraphrase" for p in pairs) >= 4 and sum(p.kind == "context" for p in pairs) >= 2
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"name": "bad", "now": "2026-10-09 08:00", "events": []}))
    with pytest.raises(ConfigError) as caught:
        load_scenarios(tmp_path)
    assert "bad.json" in str(caught.value) and "'now'" in str(caught.value)


def test_missing_context_old_version_repeats_and_per_batch_overrides():
    full = scenario(name="full", pair={"with": "bare", "kind": "missing-context", "expect_change": "down"})
    bare = scenario(name="bare")
    fresh = scenario(name="fresh", pair={"with": "late", "kind": "old-version", "items": ["pay"]})
    late = scenario(name="late")
    after = {
        "full": state(item("x", "告警", "critical")), "bare": state(item("x", "告警", "normal")),
        "fresh": state(item("pay", "还款成功", "low", "done")), "late": state(item("pay", "还款处理中", "normal",
                                                                                   "in-progress", ())),
    }
    declared = {"full": [{"id": "x", "weight": "critical", "share": 30}], "bare": [{"id": "x", "weight": "normal"}],
                "fresh": [], "late": [{"id": "pay", "relation": "withdraw"}]}
    results = []
    for repeat in (1, 2):
        for s in (full, bare, fresh, late):
            weight_drift = s.name == "bare" and repeat == 2  # the second run of "bare" disagrees with its first
            document = state(item("x", "告警", "high")) if weight_drift else after[s.name]
            results.append(Result(s, Run(outcome="committed", before=state(), after=document,
                                         accepted_declarations=declared[s.name]), [], repeat=repeat))
    report = build_report(results, backend="test", model="m-1", skill={"zh": "sha256:abc"})
    metrics = report["metrics"]
    assert report["model"] == "m-1" and report["skill"] == {"zh": "sha256:abc"} and report["repeat"] == 2
    assert metrics["missing_context"] == {"numerator": 2, "denominator": 2, "value": 1.0}  # critical → normal, → high
    assert metrics["old_version"] == {"numerator": 0, "denominator": 2, "value": 0.0}  # the late hint won: a finding
    assert metrics["repeat_stability"] == {"numerator": 2, "denominator": 3, "value": 0.6667}
    per_batch = {(b["scenario"], b["repeat"]): b["value"] for b in metrics["share_override_per_batch"]}
    assert per_batch[("full", 1)] == 1.0 and per_batch[("bare", 1)] == 0.0 and per_batch[("fresh", 1)] is None
    assert metrics["share_override_batch_mean"] == 0.5 and metrics["share_override_rate"]["value"] == 0.5
    markdown = render_markdown(report)
    assert "missing context" in markdown and "Old-version pairs" in markdown and "m-1" in markdown


def test_pair_kinds_are_validated(tmp_path):
    base = {"now": "2026-10-09T08:00:00+08:00", "events": []}
    (tmp_path / "a.json").write_text(json.dumps({**base, "name": "a", "pair": {"with": "b", "kind": "old-version"}}))
    (tmp_path / "b.json").write_text(json.dumps({**base, "name": "b"}))
    with pytest.raises(ConfigError) as caught:
        load_scenarios(tmp_path)
    assert "pair.items" in str(caught.value)
    (tmp_path / "a.json").write_text(json.dumps({**base, "name": "a", "pair": {"with": "b", "kind": "missing-context"}}))
    with pytest.raises(ConfigError) as caught:
        load_scenarios(tmp_path)
    assert "pair.expect_change" in str(caught.value)


def test_mentions_and_not_prefix_read_what_the_item_says():
    bill = {"id": "e-1", "channel": "email", "title": "电费账单", "text": "您本月电费 236.40 元，请于 11 月 12 日前缴清。"}
    written = Scenario.model_validate({"name": "w", "now": "2026-10-09T08:00:00+08:00", "events": [bill], "expect": {
        "mentions": [{"match": "电费", "states": "236\\.40"}, {"match": "电费", "states": "11月12日"}],
        "not_prefix": True}})

    def run_with(summary):
        view = {**item("bill", "电费 236.40元，11月12日到期", "high"), "summary": summary}
        return Run(outcome="committed", before=state(), after=state(view))

    findings = check(written, run_with("电费账单 236.40 元；请在11月12日前缴费。"))
    assert [(f.property, f.passed) for f in findings] == [
        ("mentions /电费/ states /236\\.40/", True), ("mentions /电费/ states /11月12日/", True), ("not_prefix", True)]
    # The text's first characters, cut with "…", is what the property exists to catch.
    copied = check(written, run_with("您本月电费 236.40 元，请于 11 月 12 …"))
    assert copied[-1].passed is False and "bill" in copied[-1].detail
    missing = check(written, run_with(None))
    assert missing[-1].passed is True  # no summary at all is not a copied one


def test_seen_reads_an_item_at_the_weight_its_parent_lets_it_be_seen():
    seen = Scenario.model_validate({"name": "v", "now": "2026-10-09T08:00:00+08:00", "expect": {
        "surface": [{"match": "包裹", "min_weight": "high", "seen": True}]}})
    plain = Scenario.model_validate({"name": "p", "now": "2026-10-09T08:00:00+08:00", "expect": {
        "surface": [{"match": "包裹", "min_weight": "high"}]}})

    def under(parent_weight):
        parcel = item("parcel", "显示器包裹", "high", "in-progress")
        parent = {**item("updates", "其他动态", parent_weight, "fyi", ()),
                  "children": {"items": [parcel]}}
        return Run(outcome="committed", before=state(), after=state(parent))

    assert check(plain, under("low"))[0].passed is True  # its own weight says high …
    finding = check(seen, under("low"))[0]
    assert finding.passed is False and "seen at low" in finding.detail  # … but a low parent shows it as low
    assert check(seen, under("high"))[0].passed is True


def test_kind_stability_counts_paraphrases_that_keep_the_weight_but_change_the_kind():
    a = scenario(name="a", pair={"with": "b", "kind": "paraphrase"})
    b = scenario(name="b")
    runs = {"a": state(item("x", "会话超时修复", "normal", "in-progress")),
            "b": state(item("y", "会话超时修复", "normal", "done"))}
    results = [Result(s, Run(outcome="committed", before=state(), after=runs[s.name]), []) for s in (a, b)]
    report = build_report(results, backend="test")
    assert report["metrics"]["weight_stability"]["value"] == 1.0
    assert report["metrics"]["kind_stability"] == {"numerator": 0, "denominator": 1, "value": 0.0}
    assert report["metrics"]["weight_stability_pairs"][0]["kinds"] == ["in-progress", "done"]
    assert "| kind stability | 0.00 (0 / 1) |" in render_markdown(report)
