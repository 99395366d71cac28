"""``cmodule__fastmath`` (issue 37): off by default; on, the module is built
with the flags closest to Numba's fastmath, in its own cache key, and
without -ffinite-math-only, so a -inf log-density stays -inf and NaN stays
NaN."""

from __future__ import annotations

from typing import Any

import numpy as np

import opweave
from opweave.compile.function import function
from opweave.graph.basic import Apply
from opweave.link.c._compile_job import FASTMATH_FLAGS
from opweave.link.c.op import COp
from opweave.scalar import float64
from opweave.tensor import dvector


class SumLog(COp):
    """``sum(log(x))`` and whether it is -inf, in one float64 scalar:
    ``s`` when finite, ``-inf`` when ``std::isinf(s) && s < 0`` is seen in C,
    else NaN."""

    __props__ = ()

    def make_node(self, x: Any) -> Apply:
        return Apply(self, [x], [float64()])

    def perform(self, node: Any, inputs: list[Any], outputs: list[list[Any]]) -> None:
        with np.errstate(divide="ignore", invalid="ignore"):
            outputs[0][0] = np.float64(np.sum(np.log(inputs[0])))

    def c_headers(self, **kwargs: Any) -> list[str]:
        return ["<cmath>"]

    def c_code_cache_version(self) -> tuple[int, ...]:
        return (1,)

    def c_code(self, node: Any, name: str, inp: list[str], out: list[str], sub: dict) -> str:
        x, z = inp[0], out[0]
        return f"""
        double s = 0.0;
        for (npy_intp i = 0; i < PyArray_DIMS({x})[0]; ++i)
            s += std::log(*(double*)PyArray_GETPTR1({x}, i));
        {z} = std::isnan(s) ? NAN : (std::isinf(s) && s < 0 ? -INFINITY : s);
        """


def test_fastmath_is_off_by_default_and_on_it_is_in_the_flags_and_the_key() -> None:
    assert opweave.config.cmodule__fastmath is False
    x = dvector("x")
    strict = function([x], SumLog()(x), mode="C")
    with opweave.config.change_flags(cmodule__fastmath=True):
        fast = function([x], SumLog()(x), mode="C")
    assert fast.library != strict.library  # another key, another module
    assert fast.compile_profile["compiled"] == 1  # its own module, not the strict one's
    value = np.array([1.0, 2.0, 3.0])
    np.testing.assert_allclose(fast(value), strict(value), rtol=1e-12)


def test_infinities_and_nans_survive_fastmath() -> None:
    x = dvector("x")
    with opweave.config.change_flags(cmodule__fastmath=True):
        f = function([x], SumLog()(x), mode="C")
    assert f(np.array([1.0, 0.0, 2.0])) == -np.inf
    assert np.isnan(f(np.array([1.0, -1.0])))
    assert np.isnan(f(np.array([0.0, np.inf])))  # -inf + inf


def test_the_flags_are_numbas_but_finite_math() -> None:
    assert "-ffinite-math-only" not in FASTMATH_FLAGS and "-ffast-math" not in FASTMATH_FLAGS
    assert {"-fassociative-math", "-freciprocal-math", "-fno-signed-zeros"} <= set(FASTMATH_FLAGS)
