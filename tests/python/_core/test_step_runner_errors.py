"""StepRunner's errors: keyword and count mistakes, failed compiled and Python
steps and filters go to on_error with their step and block; bad step
results, empty slots, re-entrant calls and bad constructor arguments raise
clear exceptions."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from support.step_graphs import Graphs, X, compiled, python, scalar

from opweave._core import StepRunner


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
