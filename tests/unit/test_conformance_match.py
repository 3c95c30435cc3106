"""The conformance runner's matching and checking rules (contract §14).

Subset matching for ``expect``, exact values for ``expect_paths``, JSON number
semantics (1 == 1.0, true != 1), missing paths versus null, path parsing,
case-file checking and the per-mode checks — all without a kernel or a CLI.
"""

from __future__ import annotations

import pytest

from conformance.case import CaseError, parse_case
from conformance.match import (
    MISSING, PathError, exact_mismatch, format_path, json_equal, lookup, parse_path, subset_mismatch,
)
from conformance.modes import StepOutcome
from conformance.runner import check_outcomes, compare_modes, resolve_modes

# -- subset matching (expect) ------------------------------------------------


def test_subset_ignores_extra_keys_at_every_depth():
    actual = {"ok": True, "type": "commit", "changes": [{"item": "visa", "op": "created", "share": 24}]}
    assert subset_mismatch({"ok": True, "changes": [{"item": "visa"}]}, actual) is None


def test_subset_reports_the_missing_key_with_its_path():
    mismatch = subset_mismatch({"root": {"items": [{"id": "a", "rank": 1}]}}, {"root": {"items": [{"id": "a"}]}})
    assert mismatch.path == ("root", "items", 0, "rank")
    assert mismatch.actual is MISSING
    assert "root.items[0].rank" in mismatch.describe()


def test_subset_arrays_need_the_same_length():
    mismatch = subset_mismatch({"items": [{"id": "a"}]}, {"items": [{"id": "a"}, {"id": "b"}]})
    assert mismatch.path == ("items",)
    assert "length 2, expected 1" in mismatch.reason


def test_subset_arrays_match_element_wise_in_order():
    mismatch = subset_mismatch([{"id": "a"}, {"id": "b"}], [{"id": "b"}, {"id": "a"}])
    assert mismatch.path == (0, "id")
    assert (mismatch.expected, mismatch.actual) == ("a", "b")


def test_empty_expected_object_matches_any_object_but_not_an_array():
    assert subset_mismatch({}, {"anything": 1}) is None
    assert subset_mismatch({}, []) is not None
    assert subset_mismatch([], []) is None


@pytest.mark.parametrize(("expected", "actual"), [(1, 1.0), (1.0, 1), (0, -0.0), (24, 24)])
def test_numbers_compare_as_json_numbers(expected, actual):
    assert subset_mismatch(expected, actual) is None
    assert exact_mismatch({"n": expected}, {"n": actual}) is None


@pytest.mark.parametrize(("expected", "actual"), [(True, 1), (1, True), (False, 0), (0.0, False)])
def test_booleans_are_not_numbers(expected, actual):
    mismatch = subset_mismatch(expected, actual)
    assert mismatch is not None
    assert "boolean" in mismatch.reason


def test_null_matches_only_null():
    assert subset_mismatch({"summary": None}, {"summary": None}) is None
    assert subset_mismatch({"summary": None}, {"summary": ""}) is not None
    assert subset_mismatch({"summary": None}, {}).reason == "missing key"


def test_strings_compare_by_code_points():
    assert subset_mismatch("签证", "签证") is None
    assert subset_mismatch("签证", "签证 ") is not None


# -- exact matching (expect_paths values, kernel/CLI agreement) ---------------


def test_exact_reports_extra_keys_that_subset_allows():
    assert subset_mismatch({"a": 1}, {"a": 1, "b": 2}) is None
    mismatch = exact_mismatch({"a": 1}, {"a": 1, "b": 2})
    assert mismatch.path == ("b",)
    assert mismatch.reason == "unexpected key"


def test_json_equal_ignores_key_order_but_not_array_order():
    assert json_equal({"a": 1, "b": [1, 2]}, {"b": [1.0, 2], "a": 1})
    assert not json_equal([1, 2], [2, 1])
    assert not json_equal({"flag": True}, {"flag": 1})


# -- paths ---------------------------------------------------------------------


@pytest.mark.parametrize(("path", "segments"), [
    ("root.used", ("root", "used")),
    ("root.items[0].id", ("root", "items", 0, "id")),
    ("errors[1].code", ("errors", 1, "code")),
    ("a[0][2]", ("a", 0, 2)),
    ("[0].id", (0, "id")),
    ("records[-1].type", ("records", -1, "type")),
    ("not_active_total", ("not_active_total",)),
])
def test_parse_path(path, segments):
    assert parse_path(path) == segments
    assert format_path(segments) == path


@pytest.mark.parametrize("path", ["", "a..b", "a.", ".a", "a[", "a[x]", "a]", "a.[0]", "a[0]b", 3])
def test_parse_path_rejects_malformed_paths(path):
    with pytest.raises(PathError):
        parse_path(path)


def test_lookup_missing_path_is_not_null():
    document = {"root": {"items": [{"id": "visa", "children": None}]}}
    assert lookup(document, "root.items[0].children") is None
    assert lookup(document, "root.items[0].due_at") is MISSING
    assert lookup(document, "root.items[1].id") is MISSING
    assert lookup(document, "root.items.id") is MISSING  # a key on an array
    assert lookup(document, "root[0]") is MISSING  # an index on an object
    mismatch = exact_mismatch(None, lookup(document, "root.items[0].due_at"), parse_path("root.items[0].due_at"))
    assert mismatch is not None and mismatch.reason == "missing"


def test_lookup_indexes_from_the_end():
    assert lookup({"records": [{"n": 1}, {"n": 2}]}, "records[-1].n") == 2
    assert lookup({"records": [{"n": 1}]}, "records[-2].n") is MISSING


# -- case files ------------------------------------------------------------------


def _case(*steps, **top):
    return {"name": "t", "about": "", "budget": 64, "steps": list(steps), **top}


COMMIT = {"op": "commit", "now": "2026-10-09T08:00:00Z", "actor": "agent",
          "batch": {"batch_id": "b1", "declarations": []}}


def test_parse_case_defaults_and_labels():
    case = parse_case(_case(COMMIT, {"op": "state", "now": "2026-10-09T08:00:00Z",
                                     "expect_paths": {"root.used": 0}}))
    assert [step.label for step in case.steps] == ["steps[0] (commit)", "steps[1] (state)"]
    assert case.steps[1].expect_paths == (("root.used", 0),)
    assert not case.steps[0].has_expect


@pytest.mark.parametrize(("document", "message"), [
    ([], "JSON object"),
    ({"name": "t", "budget": 64, "steps": [COMMIT]}, "missing key 'about'"),
    (_case(COMMIT, colour="red"), "unknown key 'colour'"),
    (_case(), "non-empty array"),
    (_case({"op": "comit"}), 'unknown op "comit"'),
    (_case({"now": "x"}), "missing key 'op'"),
    (_case({"op": "annotate", "now": "x", "item": "a"}), "missing key 'text'"),
    (_case({**COMMIT, "expect_path": {}}), "unknown key 'expect_path'"),
    (_case({"op": "state", "now": "x", "depth": True}), "'depth' must be an integer"),
    (_case({"op": "state", "now": "x", "not_active": "some"}), "'not_active' must be"),
    (_case({"op": "tear_tail", "bytes": 0}), "positive integer"),
    (_case({"op": "delete_snapshot", "exit": 0}), "prints nothing"),
    (_case({"op": "crash", "fault": "mid_air", "committed": True, "step": COMMIT}), "'fault' must be"),
    (_case({"op": "crash", "fault": "after_fsync", "committed": True,
            "step": {**COMMIT, "op": "state"}}), "runs a commit step"),
    (_case({**COMMIT, "exit": "0"}), "'exit' must be an integer"),
    (_case({**COMMIT, "expect_paths": {"a[x]": 1}}), "bad path"),
])
def test_malformed_cases_are_reported_not_raised(document, message):
    with pytest.raises(CaseError, match=message.replace("[", r"\[").replace("(", r"\(")):
        parse_case(document)


def test_crash_step_defaults_its_inner_op_to_commit():
    inner = {key: value for key, value in COMMIT.items() if key != "op"}
    case = parse_case(_case({"op": "crash", "fault": "mid_append", "committed": False, "step": inner}))
    assert case.steps[0].args["step"].op == "commit"


# -- per-mode checks ---------------------------------------------------------------


def _steps(*steps):
    return parse_case(_case(*steps)).steps


def test_kernel_mode_checks_exit_expect_and_paths():
    (step,) = _steps({**COMMIT, "exit": 0, "expect": {"ok": True}, "expect_paths": {"revision": 1}})
    rejected = {"ok": False, "errors": [{"code": "item_exists", "item": "a"}]}
    failures = check_outcomes("kernel", [StepOutcome(step, rejected, 1)])
    messages = [failure.message for failure in failures]
    assert messages[0] == "exit: expected 0, got 1 (errors: item_exists a)"
    assert messages[1].startswith("expect: ok: expected true, got false")
    assert messages[2] == "expect_paths: revision: expected 1, got <missing> (missing)"
    assert check_outcomes("kernel", [StepOutcome(step, {"ok": True, "revision": 1.0}, 0)]) == []


def test_cli_mode_without_exit_accepts_only_0_and_1():
    (step,) = _steps(COMMIT)
    assert check_outcomes("cli", [StepOutcome(step, {"ok": False}, 1)]) == []
    (failure,) = check_outcomes("cli", [StepOutcome(step, {"ok": False}, 3)])
    assert "got 3, expected 0 or 1" in failure.message


def test_crash_step_ignores_expect_needs_137_and_checks_committed():
    (step,) = _steps({"op": "crash", "fault": "after_fsync", "committed": True, "step": COMMIT,
                      "expect": {"never": "checked"}})
    survived = {"found": True, "record": {"event_seq": 1}}
    assert check_outcomes("cli", [StepOutcome(step, survived, 137)]) == []
    assert check_outcomes("kernel", [StepOutcome(step, survived, None)]) == []
    failures = check_outcomes("cli", [StepOutcome(step, {"found": False, "record": None}, 0)])
    assert "expected 137" in failures[0].message and "not reached" in failures[0].message
    assert "committed is true, but history --batch says found false" in failures[1].message


def test_skipped_steps_are_not_checked_and_errors_are():
    first, second = _steps({**COMMIT, "exit": 0}, {"op": "state", "now": "x", "exit": 4})
    outcomes = [StepOutcome(first, error="kernel raised KeyError: 'x'"),
                StepOutcome(second, skipped="kernel mode ends the case")]
    (failure,) = check_outcomes("kernel", outcomes)
    assert failure.step is first and "KeyError" in failure.message


def test_modes_must_agree_on_documents_and_exit_codes():
    first, second = _steps(COMMIT, {"op": "state", "now": "x"})
    kernel = [StepOutcome(first, {"ok": True, "revision": 1}, 0), StepOutcome(second, {"root": {"used": 6}}, 0)]
    same = [StepOutcome(first, {"revision": 1.0, "ok": True}, 0), StepOutcome(second, {"root": {"used": 6}}, 0)]
    assert compare_modes(kernel, same) is None
    differ = [StepOutcome(first, {"ok": True, "revision": 1}, 0), StepOutcome(second, {"root": {"used": 7}}, 0)]
    failure = compare_modes(kernel, differ)
    assert failure.step is second and failure.mode == "both"
    assert failure.message == "the documents differ: root.used: kernel 6, cli 7"
    exits = [StepOutcome(first, {"ok": True, "revision": 1}, 1), *same[1:]]
    assert "kernel 0, cli 1" in compare_modes(kernel, exits).message


def test_resolve_modes():
    assert resolve_modes("both") == ("kernel", "cli")
    assert resolve_modes(["cli", "kernel"]) == ("kernel", "cli")
    assert resolve_modes("cli") == ("cli",)
    with pytest.raises(ValueError):
        resolve_modes(["host"])
