"""opweave._core.StepRunner: a graph run as a table of compiled and Python
steps passing values through slots, on real compiled graph modules."""

from __future__ import annotations

import gc
import sys
import weakref
from typing import Any

import numpy as np
import pytest
from support.step_graphs import Graphs, X, compiled, python, scalar

from opweave._core import StepRunner


def test_a_chain_of_two_compiled_steps(graphs: Graphs) -> None:
    # slots: 0 x, 1 y, 2 x*y, 3 x*y*y
    steps = [compiled(graphs.times, [0, 1], [2]), compiled(graphs.times, [2, 1], [3])]
    runner = StepRunner(2, 4, steps, [3])
    assert (runner.n_inputs, runner.n_steps) == (2, 2)
    np.testing.assert_array_equal(runner(X, scalar(2.0)), [4.0, 8.0, 12.0])
    np.testing.assert_array_equal(runner(X, scalar(3.0)), [9.0, 18.0, 27.0])


def test_a_python_step_between_compiled_steps(graphs: Graphs) -> None:
    seen: list[list[Any]] = []

    def plus_one(values: list[Any]) -> list[Any]:
        seen.append(values)
        return [values[0] + 1]

    steps = [
        compiled(graphs.times, [0, 1], [2]),
        python(plus_one, [2], [3]),
        compiled(graphs.times, [3, 1], [4]),
    ]
    runner = StepRunner(2, 5, steps, [2, 4])
    first, last = runner(X, scalar(2.0))
    np.testing.assert_array_equal(first, [2.0, 4.0, 6.0])
    np.testing.assert_array_equal(last, [6.0, 10.0, 14.0])
    assert len(seen) == 1 and seen[0][0] is first
    runner_single = StepRunner(2, 5, steps, [4], unpack_single=False)
    assert len(runner_single(X, scalar(1.0))) == 1


def test_outputs_are_new_objects_that_later_calls_leave_alone(graphs: Graphs) -> None:
    steps = [
        compiled(graphs.times, [0, 1], [2], [True]),
        compiled(graphs.times, [2, 1], [3], [True]),
    ]
    runner = StepRunner(2, 4, steps, [2, 3], keep=[])
    first = runner(X, scalar(2.0))
    second = runner(X, scalar(10.0))
    assert first[0] is not second[0] and first[1] is not second[1]
    np.testing.assert_array_equal(first[1], [4.0, 8.0, 12.0])
    np.testing.assert_array_equal(second[1], [100.0, 200.0, 300.0])


def storage_seen(graphs: Graphs, offer: bool, keep: list[int]) -> tuple[list[Any], StepRunner]:
    seen: list[Any] = []

    def record(values: list[Any]) -> list[Any]:
        seen.append(values[0])
        return [values[0].sum()]

    steps = [compiled(graphs.times, [0, 1], [2], [offer]), python(record, [2], [3])]
    return seen, StepRunner(2, 4, steps, [3], keep=keep)


def test_an_offered_kept_slot_keeps_its_storage_between_calls(graphs: Graphs) -> None:
    seen, runner = storage_seen(graphs, offer=True, keep=[2])
    assert runner(X, scalar(2.0)) == 12.0
    assert runner(X, scalar(3.0)) == 18.0
    assert seen[0] is seen[1]  # written in place by the second call
    np.testing.assert_array_equal(seen[1], [3.0, 6.0, 9.0])
    # Another length: the op replaces the storage it was offered.
    assert runner(np.ones(2), scalar(1.0)) == 2.0
    assert seen[2] is not seen[1]


@pytest.mark.parametrize(("offer", "keep"), [(False, [2]), (True, [])])
def test_storage_is_fresh_unless_offered_and_kept(
    graphs: Graphs, offer: bool, keep: list[int]
) -> None:
    seen, runner = storage_seen(graphs, offer, keep)
    runner(X, scalar(2.0))
    runner(X, scalar(3.0))
    assert seen[0] is not seen[1]
    np.testing.assert_array_equal(seen[0], [2.0, 4.0, 6.0])


class Box:
    """A value that can be watched through a weak reference."""


def test_gc_empties_slots_after_their_step_and_a_call_empties_the_rest() -> None:
    made: list[weakref.ref[Box]] = []
    alive_at_step_2: list[bool] = []

    def make(values: list[Any]) -> list[Any]:
        box, kept = Box(), Box()
        made.extend([weakref.ref(box), weakref.ref(kept)])
        return [box, kept]

    def check(values: list[Any]) -> list[Any]:
        alive_at_step_2.append(made[-2]() is not None)
        return [1]

    steps = [
        python(make, [0], [1, 2]),  # 1: collected after step 1, 2: kept
        python(lambda values: [values[0]], [1], [3]),  # 3: emptied at the end of the call
        python(check, [0], [4]),
    ]
    for collect, alive in [([[], [1, 3], []], False), (None, True)]:
        runner = StepRunner(1, 5, steps, [4], gc=collect, keep=[2])
        assert runner(0) == 1
        assert alive_at_step_2[-1] is alive
        assert made[-2]() is None  # not kept: gone with the call
        assert made[-1]() is not None  # kept
        del runner
        assert made[-1]() is None


def test_constants_fill_their_slots_for_every_call(graphs: Graphs) -> None:
    three = scalar(3.0)
    runner = StepRunner(1, 3, [compiled(graphs.times, [0, 2], [1])], [1], constants=[(2, three)])
    np.testing.assert_array_equal(runner(X), [3.0, 6.0, 9.0])
    np.testing.assert_array_equal(runner(X), [3.0, 6.0, 9.0])
    # The runner holds the constant.
    assert sys.getrefcount(three) == 3  # three, the runner's slot, getrefcount's argument


def test_a_compiled_steps_orphans_make_its_graph(graphs: Graphs) -> None:
    assert len(graphs.times_three.orphans) == 1
    runner = StepRunner(1, 2, [compiled(graphs.times_three, [0], [1])], [1])
    np.testing.assert_array_equal(runner(X), [3.0, 6.0, 9.0])
    step = (0, graphs.times_three.module.abi, None, [], [0], [1], [False])
    with pytest.raises(ValueError, match="needs 1 orphans, got 0"):
        StepRunner(1, 2, [step], [1])


def test_filtered_positions_go_through_the_filter(graphs: Graphs) -> None:
    calls: list[tuple[int, Any]] = []

    def to_array(position: int, value: Any) -> np.ndarray:
        calls.append((position, value))
        return np.asarray(value, dtype="float64")

    steps = [compiled(graphs.times, [0, 1], [2])]
    runner = StepRunner(2, 3, steps, [2], filtered=[1], filter=to_array)
    np.testing.assert_array_equal(runner(X, 2), [2.0, 4.0, 6.0])
    np.testing.assert_array_equal(runner.call_exact(X, 3), [3.0, 6.0, 9.0])
    assert calls == [(1, 2), (1, 3)]


def test_calls_keep_no_references(graphs: Graphs) -> None:
    x, y, three = X.copy(), scalar(2.0), scalar(3.0)
    steps = [
        compiled(graphs.times, [0, 1], [2], [True]),
        python(lambda values: [values[0] + values[1]], [2, 3], [4]),
        compiled(graphs.times, [4, 1], [5], [True]),
    ]
    calls: list[Any] = []
    runner = StepRunner(2, 6, steps, [2, 5], keep=[], constants=[(3, three)], on_error=calls.append)
    failing = StepRunner(
        2, 6, steps, [5], keep=[2], constants=[(3, three)], on_error=lambda *a: None
    )
    runner(x, y)
    failing(x, y)
    before = [sys.getrefcount(value) for value in (x, y, three)]
    objects = len(gc.get_objects())
    for _ in range(1000):
        runner(x, y)
        runner.call_exact(x, y)
        failing(x, [1.0])
        failing(x)
    assert [sys.getrefcount(value) for value in (x, y, three)] == before
    assert len(gc.get_objects()) - objects < 50


def test_a_runner_in_a_reference_cycle_is_collected(graphs: Graphs) -> None:
    box: list[Any] = []  # box -> runner -> box.append -> box
    box.append(StepRunner(2, 3, [compiled(graphs.times, [0, 1], [2])], [2], on_error=box.append))
    watched = weakref.ref(box[0])
    del box
    gc.collect()
    assert watched() is None
