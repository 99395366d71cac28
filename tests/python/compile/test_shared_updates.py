"""Shared variables, updates, givens, Out and on_unused_input in
opweave.function."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from support.api_ops import plus

import opweave
from opweave.compile import Out, SharedVariable, shared
from opweave.compile._function_args import UnusedInputError
from opweave.compile.function import function
from opweave.compile.maker import function as maker_function
from opweave.tensor import dvector, iscalar, lscalar

MODES = ["C", "c|py", "py"]


@pytest.mark.parametrize("mode", MODES)
def test_an_update_is_written_after_each_call(mode: str) -> None:
    inc = lscalar("inc")
    state = shared(0, name="state")
    f = function([inc], state, updates=[(state, plus(state, inc))], mode=mode)
    assert f(2) == 0  # the value before the update
    assert f(0) == 2 and state.get_value() == 2
    state.set_value(10)
    assert f(5) == 10 and state.get_value() == 15


@pytest.mark.parametrize("mode", MODES)
def test_two_functions_share_one_state(mode: str) -> None:
    inc = lscalar("inc")
    vector_state = shared(np.zeros(3, dtype="int64"), name="v")
    f = function([inc], vector_state, updates={vector_state: plus(vector_state, inc)}, mode=mode)
    g = function([inc], vector_state, updates=[(vector_state, plus(vector_state, inc))])
    f(2)
    np.testing.assert_array_equal(g(3), [2, 2, 2])
    np.testing.assert_array_equal(f(0), [5, 5, 5])
    returned = f(0)
    returned[0] = 99  # a returned value is the caller's: the state does not change
    np.testing.assert_array_equal(vector_state.get_value(), [5, 5, 5])


def test_a_failed_call_leaves_the_state_as_it_was() -> None:
    x = dvector("x")
    total = shared(np.zeros(2), name="total")
    f = function([x], [], updates=[(total, plus(total, x))])
    f(np.ones(2))
    with pytest.raises(ValueError):  # shapes (2,) and (3,) do not broadcast
        f(np.ones(3))
    np.testing.assert_array_equal(total.get_value(), [1.0, 1.0])


def test_shared_values_are_read_at_each_call_and_inputs_bind_by_name() -> None:
    x = dvector("x")
    offset = shared(np.array([1.0, 2.0]), name="offset")
    f = function([x], plus(x, offset))
    np.testing.assert_array_equal(f(np.zeros(2)), [1.0, 2.0])
    offset.set_value([10.0, 20.0])
    np.testing.assert_array_equal(f(x=np.zeros(2)), [10.0, 20.0])
    assert isinstance(offset, SharedVariable) and opweave.shared is shared


def test_givens_replace_variables() -> None:
    x, y = dvector("x"), dvector("y")
    state = shared(np.array([5.0]), name="s")
    f = function([y], plus(x, x), givens=[(x, plus(y, state))])
    np.testing.assert_array_equal(f(np.array([1.0])), [12.0])
    g = function([y], plus(x, y), givens={x: y})
    np.testing.assert_array_equal(g(np.array([2.0])), [4.0])
    with pytest.raises(TypeError, match="cannot replace"):
        function([y], plus(x, y), givens={x: lscalar("n")})


def test_out_and_the_maker_spelling() -> None:
    x = dvector("x")
    f = maker_function([x], [Out(plus(x, x), borrow=True)])
    np.testing.assert_array_equal(f(np.ones(1))[0], [2.0])
    g = function([x], Out(plus(x, x)))
    np.testing.assert_array_equal(g(np.ones(1)), [2.0])


def test_unused_inputs_raise_warn_or_are_ignored() -> None:
    x, unused = dvector("x"), dvector("unused")
    with pytest.raises(UnusedInputError, match="input 1 \\(unused\\) is not used"):
        function([x, unused], plus(x, x))
    with pytest.warns(UserWarning, match="not used"):
        f = function([x, unused], plus(x, x), on_unused_input="warn")
    np.testing.assert_array_equal(f(np.ones(1), np.ones(5)), [2.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        function([x, unused], plus(x, x), on_unused_input="ignore")
    with opweave.config.change_flags(on_unused_input="ignore"):
        function([x, unused], plus(x, x))
    with pytest.raises(ValueError, match="on_unused_input"):
        function([x], plus(x, x), on_unused_input="sometimes")


def test_bad_updates_are_refused() -> None:
    x = dvector("x")
    state = shared(np.zeros(1), name="s")
    with pytest.raises(TypeError, match="only shared variables"):
        function([x], x, updates=[(x, plus(x, x))])
    with pytest.raises(TypeError, match="must be the same"):
        function([x], x, updates=[(state, iscalar("i"))], on_unused_input="ignore")
    with pytest.raises(TypeError, match="leave it out of the inputs"):
        function([state], plus(state, state))


def test_maker_shows_the_graph_and_mode() -> None:
    x = dvector("x")
    f = function([x], plus(x, x), mode="c|py")
    assert f.maker.fgraph is f.fgraph and f.maker.mode == f.mode
    assert f.maker.inputs == [x] and len(f.maker.outputs) == 1
