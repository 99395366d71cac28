"""Functions pickle, with their shared values, and rebuild from the cache."""

from __future__ import annotations

import multiprocessing
import pickle

import numpy as np
import pytest
from opweave.examples.vector_times_vector import VectorTimesVector
from support.api_ops import call_in_worker, plus, split_signs

from opweave.compile import shared
from opweave.compile.function import function
from opweave.graph.fg import FunctionGraph
from opweave.link.c.basic import CLinker
from opweave.tensor import dvector, lscalar


@pytest.mark.parametrize("mode", [None, "C", "c|py", "py", "DebugMode"])
def test_a_function_pickles_in_every_mode(mode: str | None) -> None:
    x, y = dvector("x"), dvector("y")
    f = function([x, y], plus(x, y), mode=mode, name="sum")
    again = pickle.loads(pickle.dumps(f))
    np.testing.assert_array_equal(again(np.ones(2), np.ones(2)), [2.0, 2.0])
    assert again.name == "sum" and again.mode == f.mode
    if mode in (None, "C"):
        assert again.cache_outcome == "hit"  # rebuilt from the cache, not compiled


def test_shared_values_travel_with_the_function() -> None:
    inc = lscalar("inc")
    count = shared(0, name="count")
    f = function([inc], count, updates=[(count, plus(count, inc))])
    f(5)
    again = pickle.loads(pickle.dumps(f))
    assert again(1) == 5 and again(0) == 6  # its own copy of the state
    assert count.get_value() == 5


def test_python_ops_and_external_ops_pickle() -> None:
    x = dvector("x")
    g = pickle.loads(pickle.dumps(function([x], split_signs(x))))
    positive, _ = g(np.array([-1.0, 1.0]))
    np.testing.assert_array_equal(positive, [0.0, 1.0])
    a, b = dvector("a"), dvector("b")
    h = pickle.loads(pickle.dumps(function([a, b], VectorTimesVector()(a, b))))
    np.testing.assert_array_equal(h(np.array([2.0]), np.array([3.0])), [6.0])


def test_a_function_not_made_by_function_says_why_it_does_not_pickle() -> None:
    x = dvector("x")
    thunk, _, _ = CLinker().accept(FunctionGraph([x], [plus(x, x)])).make_thunk()
    inner = thunk.function
    with pytest.raises(TypeError, match=r"only functions made by opweave\.function"):
        pickle.dumps(inner)


@pytest.mark.slow
def test_a_pickled_function_runs_in_a_spawn_worker_pool() -> None:
    x, y = dvector("x"), dvector("y")
    f = function([x, y], plus(x, y))
    context = multiprocessing.get_context("spawn")
    with context.Pool(2) as pool:
        results = pool.starmap(
            call_in_worker, [(f, np.full(2, float(i)), np.ones(2)) for i in range(4)]
        )
    for i, (value, outcome) in enumerate(results):
        np.testing.assert_array_equal(value, [i + 1.0, i + 1.0])
        assert outcome == "hit"  # the worker found the module the parent built
