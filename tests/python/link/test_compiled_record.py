"""A Function's record of how it was compiled (opweave.link.compiled).

One typed record, written once; the attributes users read (``source``,
``cache_outcome``, ``compiled_parts``, ``compile_profile``, ...) are
read-only views of it, and wrappers and pickling carry the record itself.
"""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from support.ops import PyPlusOne, TwoWays

import opweave
from opweave import _core
from opweave.compile import shared
from opweave.link.compiled import Compiled, ModulePart
from opweave.tensor import vector

VIEWS = (
    "source",
    "library",
    "cache_outcome",
    "compile_seconds",
    "compile_units",
    "whole_because",
    "compiled_parts",
    "node_outcomes",
    "compile_profile",
    "recipe",
)


def test_a_c_mode_function_shows_its_one_module_from_the_record() -> None:
    x = vector("x")
    fn = opweave.function([x], TwoWays()(x))
    record = fn.compiled
    assert isinstance(record, Compiled) and record.whole
    (part,) = record.parts
    assert isinstance(part, ModulePart)
    assert fn.source == part.source and fn.source.endswith(".cpp")
    assert fn.library == part.library and fn.library.endswith(".so")
    assert fn.cache_outcome == part.outcome in {"hit", "built", "built_by_other"}
    assert fn.compile_seconds is part.seconds and fn.compiled_parts == [part]
    assert fn.compile_profile is record.profile and fn.compile_profile["modules"][0]["outcome"] == (
        part.outcome
    )
    assert fn.recipe is record.recipe and fn.recipe.outputs is not None
    np.testing.assert_array_equal(fn(np.arange(3.0)), [1.0, 2.0, 3.0])


@pytest.mark.parametrize("name", VIEWS)
def test_the_views_are_read_only(name: str) -> None:
    x = vector("x")
    fn = opweave.function([x], TwoWays()(x))
    with pytest.raises(AttributeError, match="not writable"):
        setattr(fn, name, "planted")
    assert fn.compiled.recipe is not None and fn(np.zeros(1))[0] == 1.0


def test_a_node_by_node_function_shows_its_parts_and_node_outcomes() -> None:
    x = vector("x")
    fn = opweave.function([x], TwoWays()(PyPlusOne()(x)))  # perform, then C
    record = fn.compiled
    assert not record.whole and record.parts
    assert fn.compiled_parts == list(record.parts)
    assert fn.node_outcomes == [None, record.parts[-1].outcome]
    with pytest.raises(AttributeError, match="no single module"):
        _ = fn.source
    assert not hasattr(fn, "cache_outcome")
    np.testing.assert_array_equal(fn(np.zeros(2)), [2.0, 2.0])


def test_a_wrapper_carries_the_inner_functions_record() -> None:
    x = vector("x")
    total = shared(np.zeros(2), name="total")
    fn = opweave.function([x], TwoWays()(x), updates=[(total, TwoWays()(x))])
    inner = fn.inner
    assert fn.compiled.parts == inner.compiled.parts and fn.source == inner.source
    assert fn.compiled.recipe is not None and inner.compiled.recipe is None
    np.testing.assert_array_equal(fn(np.ones(2)), [2.0, 2.0])
    np.testing.assert_array_equal(total.get_value(), [2.0, 2.0])


def test_pickling_replays_the_records_recipe() -> None:
    x = vector("x")
    fn = opweave.function([x], TwoWays()(x), name="plus")
    again = pickle.loads(pickle.dumps(fn))
    assert again.compiled.recipe.name == "plus" and again.cache_outcome == "hit"
    np.testing.assert_array_equal(again(np.arange(2.0)), [1.0, 2.0])


def test_a_python_mode_function_has_a_record_without_modules() -> None:
    x = vector("x")
    fn = opweave.function([x], PyPlusOne()(x), mode="py")
    assert fn.compiled.parts == () and fn.compile_profile["modules"] == []
    assert not hasattr(fn, "source") and not hasattr(fn, "node_outcomes")


def test_a_function_made_by_hand_has_no_record_and_does_not_pickle() -> None:
    fn = _core.Function(impl=lambda v: v + 1)
    with pytest.raises(AttributeError, match="no record of how it was compiled"):
        _ = fn.source
    with pytest.raises(TypeError, match=r"only functions made by opweave\.function pickle"):
        pickle.dumps(fn)
    assert fn(1) == 2
