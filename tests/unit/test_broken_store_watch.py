"""kvtui.bench.engines.BrokenStoreWatch: the benches' one rule for results that a broken store answered."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from kvtui.bench.engines import BrokenStoreWatch
from kvtui.core.codes import BROKEN_STORE_CODES, NO_SPACE, OBJECT_NOT_FOUND, code_name
from kvtui.mooncake.client import StoreError


def _result(codes):
    return SimpleNamespace(codes=codes)


def test_misses_and_a_full_store_are_measured_not_broken():
    watch = BrokenStoreWatch()
    assert not watch.add(_result({OBJECT_NOT_FOUND: 3, NO_SPACE: 1})) and not watch.add(_result({}))
    watch.check("the step")  # nothing raised


@pytest.mark.parametrize("code", sorted(BROKEN_STORE_CODES))
def test_a_broken_answer_stops_the_step_naming_it_and_the_most_common_code(code):
    watch = BrokenStoreWatch()
    assert watch.add(_result({code: 2, OBJECT_NOT_FOUND: 5}))
    watch.add(_result({code: 1}))
    with pytest.raises(StoreError,
                       match=rf"^the headless side's round 1 met a broken store \(3 {code_name(code)} answers"):
        watch.check("the headless side's round 1")
