"""opweave._core.StepRunner: a graph run as a table of compiled and Python
steps passing values through slots, on real compiled graph modules."""

from __future__ import annotations

import gc
import sys
import weakref
from collections.abc import Iterator
from typing import Any, NamedTuple

import numpy as np
import pytest
from opweave.examples.vector_times_scalar import VectorTimesScalar

import opweave
from opweave._core import StepRunner
from opweave.graph.fg import FunctionGraph
from opweave.link.c.basic import CLinker, CompiledGraph
from opweave.tensor import constant, dscalar, dvector


class Graphs(NamedTuple):
    times: CompiledGraph  # z = x * y, for a dvector x and a dscalar y
    times_three: CompiledGraph  # z = x * 3.0, the 3.0 an orphan


@pytest.fixture(scope="module")
def graphs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Graphs]:
    """The graphs, compiled once for the module, in a cache and with compile
    slots of their own (as conftest's isolated_cache does per test)."""
    root = tmp_path_factory.mktemp("step-runner")
    runtime = root / "xdg-runtime"
    runtime.mkdir(mode=0o700)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("XDG_CACHE_HOME", str(root / "xdg-cache"))
        patch.setenv("XDG_RUNTIME_DIR", str(runtime))
        with opweave.config.change_flags(compiledir=str(root / "opweave")):
            x, y = dvector("x"), dscalar("y")
            yield Graphs(
                compile_graph([x, y], [VectorTimesScalar()(x, y)]),
                compile_graph([x], [VectorTimesScalar()(x, constant(3.0))]),
            )


def compile_graph(inputs: list[Any], outputs: list[Any]) -> CompiledGraph:
    return CLinker().accept(FunctionGraph(inputs, outputs)).compile()


def compiled(
    graph: CompiledGraph, inputs: list[int], outputs: list[int], offer: list[bool] | None = None
) -> tuple[Any, ...]:
    offered = offer if offer is not None else [False] * len(outputs)
    return (0, graph.module.abi, graph.module, graph.orphans, inputs, outputs, offered)


def python(callable: Any, inputs: list[int], outputs: list[int]) -> tuple[Any, ...]:
    return (1, callable, inputs, outputs)


def scalar(value: float) -> np.ndarray:
    return np.array(value)


X = np.array([1.0, 2.0, 3.0])


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


def on_error_records(calls: list[tuple[Any, ...]]) -> Any:
    def on_error(*args: Any) -> str:
        calls.append(args)
        return "handled"

    return on_error


def test_keywords_and_wrong_argument_counts_go_to_on_error(graphs: Graphs) -> None:
    calls: list[tuple[Any, ...]] = []
    steps = [compiled(graphs.times, [0, 1], [2])]
    runner = StepRunner(2, 3, steps, [2], on_error=on_error_records(calls))
    y = scalar(1.0)
    assert runner(X) == "handled"
    assert runner(X, y=2.0) == "handled"
    assert runner(X, y, 5) == "handled"
    assert [call[1:] for call in calls] == [
        (None, None, -1, 0),
        ({"y": 2.0}, None, -1, 0),
        (None, None, -1, 0),
    ]
    assert [call[0] for call in calls] == [(X,), (X,), (X, y, 5)]
    plain = StepRunner(2, 3, steps, [2])
    with pytest.raises(TypeError, match="expected 2 positional arguments, got 1"):
        plain(X)
    with pytest.raises(TypeError, match="keyword"):
        plain(X, y=2.0)
    with pytest.raises(TypeError, match="expected 2 arguments, got 1"):
        runner.call_exact(X)


def test_a_failed_compiled_step_calls_on_error_with_its_step_and_block(graphs: Graphs) -> None:
    calls: list[tuple[Any, ...]] = []
    steps = [compiled(graphs.times, [0, 1], [2]), compiled(graphs.times, [2, 1], [3])]
    runner = StepRunner(2, 4, steps, [3], on_error=on_error_records(calls))
    assert runner(X, [2.0]) == "handled"  # a list where the graph checks for an array
    [(args, kwargs, error, step, block)] = calls
    assert args[0] is X and args[1] == [2.0] and kwargs is None
    assert isinstance(error, TypeError) and step == 0 and block > 0
    # The runner works on after a failure.
    np.testing.assert_array_equal(runner(X, scalar(1.0)), X)
    # Without on_error, and with call_exact, the error propagates.
    plain = StepRunner(2, 4, steps, [3])
    with pytest.raises(TypeError):
        plain(X, [2.0])
    with pytest.raises(TypeError):
        runner.call_exact(X, [2.0])
    assert len(calls) == 1


def test_a_failed_python_step_passes_its_exception_on(graphs: Graphs) -> None:
    raised = ValueError("from the step")

    def fail(values: list[Any]) -> list[Any]:
        raise raised

    calls: list[tuple[Any, ...]] = []
    steps = [compiled(graphs.times, [0, 1], [2]), python(fail, [2], [3])]
    runner = StepRunner(2, 4, steps, [3], on_error=on_error_records(calls))
    assert runner(X, scalar(1.0)) == "handled"
    [(_, kwargs, error, step, block)] = calls
    assert (kwargs, error, step, block) == (None, raised, 1, 0)
    assert error.__traceback__ is not None
    with pytest.raises(ValueError) as caught:
        StepRunner(2, 4, steps, [3])(X, scalar(1.0))
    assert caught.value is raised


def test_a_filter_failure_goes_to_on_error_as_step_minus_one() -> None:
    def refuse(position: int, value: Any) -> Any:
        raise KeyError(position)

    calls: list[tuple[Any, ...]] = []
    runner = StepRunner(
        1, 1, [], [0], filtered=[0], filter=refuse, on_error=on_error_records(calls)
    )
    assert runner(7) == "handled"
    assert isinstance(calls[0][2], KeyError) and calls[0][3:] == (-1, 0)


@pytest.mark.parametrize(
    ("returned", "error", "message"),
    [
        (5, TypeError, r"step 0 \(a Python step\) returned int, not a sequence of 2 values"),
        ([1], ValueError, r"step 0 \(a Python step\) returned 1 values, expected 2"),
    ],
)
def test_a_bad_python_step_result_names_the_step(returned: Any, error: type, message: str) -> None:
    runner = StepRunner(1, 3, [python(lambda values: returned, [0], [1, 2])], [1, 2])
    with pytest.raises(error, match=message):
        runner(0)


def test_reading_an_empty_slot_is_a_system_error() -> None:
    runner = StepRunner(1, 3, [python(lambda values: values, [1], [2])], [2])
    with pytest.raises(SystemError, match="step 0 reads slot 1, which is empty"):
        runner(0)


def test_a_re_entrant_call_raises_runtime_error() -> None:
    runner: StepRunner | None = None

    def again(values: list[Any]) -> list[Any]:
        assert runner is not None
        return [runner(values[0])]

    runner = StepRunner(1, 2, [python(again, [0], [1])], [1])
    with pytest.raises(RuntimeError, match="already running"):
        runner(1)
    # A re-entrant call in on_error is not one: the runner has finished.
    retried: list[Any] = []

    def retry(args: tuple[Any, ...], kwargs: Any, error: Any, step: int, block: int) -> Any:
        retried.append(error)
        return fine(*args[:1])

    fine = StepRunner(1, 2, [python(lambda values: [values[0] * 2], [0], [1])], [1], on_error=retry)
    assert fine(1, 2) == 2  # a wrong count: on_error calls the runner again
    assert retried == [None]


def step_of(graphs: Graphs, **changes: Any) -> tuple[Any, ...]:
    fields = dict(
        abi=graphs.times.module.abi,
        owner=graphs.times.module,
        orphans=(),
        inputs=[0, 1],
        outputs=[2],
        offer=[True],
    )
    fields.update(changes)
    return (0, *fields.values())


@pytest.mark.parametrize(
    ("arguments", "error", "message"),
    [
        ({"n_slots": 1}, ValueError, "n_inputs <= n_slots"),
        ({"steps": [(0,)]}, ValueError, "step 0: expected"),
        ({"steps": [(2, None, [], [])]}, ValueError, "step 0: expected"),
        ({"steps": "step"}, TypeError, "integer"),
        ({"steps": [(1, 5, [0], [2])]}, TypeError, "not callable"),
        (
            {"steps": [(1, len, [0], [9])]},
            ValueError,
            r"step 0: a step's slot: 9 is not in \[0, 4\)",
        ),
        ({"steps": [(1, len, [0], [1])]}, ValueError, "writes slot 1, an argument slot"),
        ({"steps": [(1, len, [2], [2])]}, ValueError, "writes slot 2, a slot it reads"),
        ({"steps": [(1, len, [0], [2, 2])]}, ValueError, "writes slot 2, a slot it writes twice"),
        ({"outputs": [4]}, ValueError, "outputs"),
        ({"keep": [3]}, ValueError, "output slot 3 is kept"),
        ({"keep": [0]}, ValueError, "keep: slot 0 is an argument slot"),
        ({"constants": [(0, 1)]}, ValueError, "constant slot"),
        ({"constants": [(2, 1), (2, 1)]}, ValueError, "constant slot 2 is given twice"),
        ({"constants": [(2, 1)]}, ValueError, "writes slot 2, a constant slot"),
        ({"constants": [5]}, TypeError, r"\(slot, value\)"),
        ({"gc": [[]]}, ValueError, "gc has 1 entries for 2 steps"),
        ({"gc": [[2], [7]]}, ValueError, "gc"),
        ({"filtered": [2]}, ValueError, "filtered"),
        ({"filtered": [1]}, TypeError, "need a filter"),
        ({"filter": 5}, TypeError, "filter must be callable"),
        ({"on_error": 5}, TypeError, "on_error must be callable"),
    ],
)
def test_bad_constructor_arguments(
    graphs: Graphs, arguments: dict[str, Any], error: type, message: str
) -> None:
    base: dict[str, Any] = {
        "n_inputs": 2,
        "n_slots": 4,
        "steps": [step_of(graphs), compiled(graphs.times, [2, 1], [3])],
        "outputs": [3],
    }
    base.update(arguments)
    with pytest.raises(error, match=message):
        StepRunner(
            base.pop("n_inputs"),
            base.pop("n_slots"),
            base.pop("steps"),
            base.pop("outputs"),
            **base,
        )


@pytest.mark.parametrize(
    ("changes", "error", "message"),
    [
        ({"abi": object()}, TypeError, "abi must be a capsule named opweave.graph_abi"),
        ({"inputs": [0]}, ValueError, "the graph has 2 inputs and 1 outputs, the step 1 and 1"),
        (
            {"outputs": [2, 3], "offer": [True, True]},
            ValueError,
            "the graph has 2 inputs and 1 outputs",
        ),
        ({"offer": []}, ValueError, "offer has 0 flags for 1 outputs"),
        ({"orphans": [1]}, ValueError, "needs 0 orphans, got 1"),
    ],
)
def test_bad_compiled_steps(
    graphs: Graphs, changes: dict[str, Any], error: type, message: str
) -> None:
    with pytest.raises(error, match=message):
        StepRunner(2, 4, [step_of(graphs, **changes)], [2])


def test_read_only_attributes(graphs: Graphs) -> None:
    runner = StepRunner(2, 3, [step_of(graphs)], [2])
    with pytest.raises(AttributeError):
        runner.n_steps = 3  # type: ignore[misc]
    assert not hasattr(runner, "__dict__")


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
