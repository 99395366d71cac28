"""A name defined by two different texts (a header of one op, the support
code of another) is an error that names both, whether the graph is one
translation unit or several, at every optimisation level: units never link
it with one definition winning (issue 36). The same piece of support code
compiled in several units still links."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from support.ops import copy_and_update
from support.unit_hook_ops import _Affine, hook_chain

import opweave
from opweave.compile.function import function
from opweave.compile.mode import Mode
from opweave.errors import CompileError
from opweave.tensor import dvector

HEADER_DIR = Path(__file__).parent / "data" / "clash_header"


class HeaderClash(_Affine):
    """Calls ``opw_header_clash``, defined in its header: ``z = 3x``."""

    def a_b_of(self) -> tuple[float, float]:
        return 3.0, 0.0

    def c_header_dirs(self, **kwargs):
        return [str(HEADER_DIR)]

    def c_headers(self, **kwargs):
        return ["opw_clash.h"]

    def c_code(self, node, name, inp, out, sub):
        update = "*value = opw_header_clash(*value);"
        return copy_and_update(inp[0], out[0], sub["fail"], update)


class SupportClash(_Affine):
    """Defines ``opw_header_clash`` again, differently, in its support
    code: ``z = x``."""

    def c_support_code(self, **kwargs):
        return "double opw_header_clash(double v) { return v; }\n"

    def c_code(self, node, name, inp, out, sub):
        update = "*value = opw_header_clash(*value);"
        return copy_and_update(inp[0], out[0], sub["fail"], update)


class SharedTwice(_Affine):
    """Defines ``opw_shared_twice`` in its support code (one piece, in
    every unit that holds one of its nodes): ``z = 2x + k``."""

    def a_b_of(self) -> tuple[float, float]:
        return 2.0, self.k

    def c_support_code(self, **kwargs):
        return "double opw_shared_twice(double v) { return 2.0 * v; }\n"

    def c_code(self, node, name, inp, out, sub):
        update = f"*value = opw_shared_twice(*value) + {self.k!r};"
        return copy_and_update(inp[0], out[0], sub["fail"], update)


def constants(n: int, seed: int) -> list[float]:
    return list(np.random.default_rng(seed).uniform(0.5, 1.5, n))


@pytest.mark.parametrize("threshold", [24, 0])
@pytest.mark.parametrize("debug", [False, True])
def test_a_name_from_a_header_and_from_support_code_is_an_error_naming_both(
    threshold: int, debug: bool
) -> None:
    x = dvector("x")
    graph = SupportClash(2.0)(hook_chain(HeaderClash(1.0)(x), constants(40, seed=8)))
    flags = {"cmodule__unit_threshold": threshold, "cmodule__remove_gxx_opt": debug}
    with opweave.config.change_flags(**flags):
        with pytest.raises(CompileError) as raised:
            function([x], graph)
    summary = raised.value.summary
    assert "SupportClash c_support_code" in summary
    assert "opw_clash.h" in summary  # the other definition: the header, its line


def test_one_piece_in_several_units_links_and_computes_right() -> None:
    x = dvector("x")
    ks = constants(48, seed=9)
    out = x
    for i, k in enumerate(ks[:4]):  # nodes of one op, spread through the graph
        out = hook_chain(SharedTwice(k)(out), ks[4 + 11 * i : 15 + 11 * i])
    with opweave.config.change_flags(cmodule__unit_threshold=24):
        f = function([x], out)
    want = function([x], out, mode=Mode(linker="py"))(np.arange(3.0))
    np.testing.assert_allclose(f(np.arange(3.0)), want, rtol=1e-12)
    (module,) = [m for m in f.compile_profile["modules"]]
    assert module["units_compiled"] + module["units_reused"] >= 2  # built from units
    assert module["whole_because"] == ""
