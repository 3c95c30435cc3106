"""The public surface of fold_core is complete and sorted (STYLE: httpx's test_exported_members)."""

import fold_core


def test_all_is_sorted_and_every_name_resolves():
    assert fold_core.__all__ == sorted(fold_core.__all__)
    for name in fold_core.__all__:
        assert getattr(fold_core, name) is not None, name


def test_unknown_name_is_an_attribute_error():
    try:
        fold_core.no_such_thing  # noqa: B018
    except AttributeError as problem:
        assert "no_such_thing" in str(problem)
    else:
        raise AssertionError("fold_core.no_such_thing should not exist")
