"""Cached units reused by an edit (link/c/_unit_reuse.py): after an edit of
a few ops spread over a large graph, only the edited structs are compiled,
in one new unit, and the units that held their old code are linked as they
are. The graph's meaning never depends on it: every test compares with
``perform`` and with the same graph compiled into an empty compile dir."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from support.counting_cxx import counting_compiler, runs
from support.inplace_ops import InplaceAddOne, View, g
from support.ops import SameObject, copy_and_update
from support.unit_hook_ops import ApplyStatic, CleanupCode, GlobalHelper, _Affine

import opweave
from opweave.compile.function import function
from opweave.compile.mode import Mode
from opweave.graph.basic import Apply
from opweave.link.c.op import COp
from opweave.link.c.params_type import ParamsType
from opweave.scalar.basic import float64
from opweave.tensor import dvector

X = np.linspace(-2.0, 2.0, 7)
N = 60
SPREAD = (2, 31, 57)  # the edited positions


def chain(kinds, ks, x):
    out = x
    for position, k in enumerate(ks):
        out = kinds[position % len(kinds)](k)(out)
    return out


def constants(seed: int) -> list[float]:
    return [round(0.5 + 0.01 * k + 0.0001 * seed, 6) for k in range(N)]


def edited(ks: list[float]) -> list[float]:
    return [k + 7.0 if position in SPREAD else k for position, k in enumerate(ks)]


def check(f, kinds, ks, mode: str, tmp_path: Path) -> None:
    """``f`` computes what ``perform`` does, and what the same graph
    compiled into an empty compile dir does."""
    x = dvector("x")
    want = function([x], chain(kinds, ks, x), mode=Mode(linker="py"))(X)
    with opweave.config.change_flags(compiledir=str(tmp_path / "empty")):
        oracle = function([x], chain(kinds, ks, x), mode=mode)(X)
    for _ in range(2):
        np.testing.assert_allclose(f(X), want, rtol=1e-12)
    np.testing.assert_array_equal(f(X), oracle)


def test_a_spread_edit_compiles_one_unit_of_the_edited_structs(tmp_path: Path) -> None:
    cxx, log = counting_compiler(tmp_path)
    kinds = (GlobalHelper, CleanupCode)  # a piece of support code all units share
    ks = constants(seed=1)
    x = dvector("x")
    with opweave.config.change_flags(cxx=cxx, cmodule__precompiled_header=False):
        cold = function([x], chain(kinds, ks, x))
        units = cold.compile_profile["modules"][0]["units_compiled"]
        assert units >= 3 and runs(log)[0] == units + 1  # links: once more to merge
        f = function([x], chain(kinds, edited(ks), x))
        module = f.compile_profile["modules"][0]
        # One new unit (the three edited structs) and the module's own source.
        assert runs(log)[0] == 2
        assert module["units_compiled"] == 1 and module["units_reused"] >= 2
        assert module["whole_because"] == ""
    check(f, kinds, edited(ks), "c", tmp_path)


@pytest.mark.parametrize("mode", ["c", "c|py"])
def test_edits_again_and_again_stay_right(tmp_path: Path, mode: str) -> None:
    kinds = (GlobalHelper, CleanupCode)
    ks = constants(seed=2)
    x = dvector("x")
    function([x], chain(kinds, ks, x), mode=mode)
    for step in range(3):  # each edit reuses units that hold older edits' structs
        ks = [k + 1.0 if position == 10 * step + 5 else k for position, k in enumerate(ks)]
        f = function([x], chain(kinds, ks, x), mode=mode)
        # One new unit; in c|py the body too: its exports name the structs.
        most = 1 if mode == "c" else 2
        assert sum(m["units_compiled"] for m in f.compile_profile["modules"]) <= most
        check(f, kinds, ks, mode, tmp_path / str(step))
    back = function([x], chain(kinds, constants(seed=2), x), mode=mode)  # the first graph
    assert sum(m["units_compiled"] for m in back.compile_profile["modules"]) == 0
    check(back, kinds, constants(seed=2), mode, tmp_path / "back")


class Counted(_Affine):
    """``z = x * 1 + k``; its ``c_init_code_apply`` counts its runs in
    ``builtins.opw_init_runs`` (by node)."""

    def a_b_of(self) -> tuple[float, float]:
        return 1.0, self.k

    def c_init_code_apply(self, node, name):
        return (
            'if (PyRun_SimpleString("import builtins; '
            "builtins.opw_init_runs = getattr(builtins, 'opw_init_runs', 0) + 1\") != 0) "
            "{ return NULL; }\n"
        )

    def c_code(self, node, name, inp, out, sub):
        return copy_and_update(inp[0], out[0], sub["fail"], f"*value += {self.k!r};")


def test_the_init_code_of_a_node_the_graph_no_longer_has_never_runs(tmp_path: Path) -> None:
    import builtins

    kinds = (Counted, CleanupCode, ApplyStatic)  # init code of their own: no unit reused
    ks = constants(seed=3)
    x = dvector("x")
    function([x], chain(kinds, ks, x))
    builtins.opw_init_runs = 0
    f = function([x], chain(kinds, edited(ks), x))
    assert builtins.opw_init_runs == len(range(0, N, 3))  # one per Counted node
    assert f.compile_profile["modules"][0]["units_compiled"] >= 2  # the units the edit touched
    check(f, kinds, edited(ks), "c", tmp_path)


class Clashing(_Affine):
    """``z = 2 x + k``: ``opw_clash_twice`` (external linkage) defined by
    support code that changes with the class's ``version``."""

    version = 1

    def a_b_of(self) -> tuple[float, float]:
        return 2.0, self.k

    def c_support_code(self, **kwargs):
        return f"double opw_clash_twice(double v) {{ /* v{self.version} */ return 2.0 * v; }}\n"

    def c_code(self, node, name, inp, out, sub):
        return copy_and_update(
            inp[0], out[0], sub["fail"], f"*value = opw_clash_twice(*value) + {self.k!r};"
        )


def test_reused_units_that_do_not_link_give_way_to_the_graphs_own(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # The cached units hold the Clashing structs of version 1, whose
    # support code defines opw_clash_twice; the new unit defines it again.
    kinds = (CleanupCode, CleanupCode, CleanupCode, Clashing)
    ks = constants(seed=4)
    x = dvector("x")
    function([x], chain(kinds, ks, x))
    Clashing.version = 2
    try:
        with caplog.at_level(logging.INFO, logger="opweave"):
            f = function([x], chain(kinds, ks, x))
        assert "compiled from its own units" in caplog.text
        assert "opw_clash_twice" in caplog.text  # what the link found defined twice
        module = f.compile_profile["modules"][0]
        assert module["whole_because"] == ""  # its own units linked
        check(f, kinds, ks, "c", tmp_path)
    finally:
        Clashing.version = 1


class ParamsShift(COp):
    """``z = x + shift``, ``shift`` read from its params."""

    __props__ = ("shift",)
    params_type = ParamsType(shift=float64)

    def __init__(self, shift: float) -> None:
        self.shift = float(shift)

    def make_node(self, x: Any) -> Apply:
        return Apply(self, [x], [x.type()])

    def perform(self, node: Any, inputs: Any, output_storage: Any, params: Any = None) -> None:
        output_storage[0][0] = inputs[0] + self.shift

    def c_code(self, node: Any, name: str, inp: Any, out: Any, sub: Any) -> str:
        update = f"*value += {sub['params']}->shift;"
        return copy_and_update(inp[0], out[0], sub["fail"], update)


def mixed(ks: list[float], x: Any) -> list[Any]:
    """Two chains of distinct ops around a node reading ``py_x``, a view,
    a node whose params shift it, and an in-place node with a second reader
    of what it destroys."""
    kinds = (GlobalHelper, CleanupCode)
    half = len(ks) // 2
    mid = ParamsShift(0.25)(View()(SameObject()(chain(kinds, ks[:half], x))))
    destroyed, read = InplaceAddOne()(mid), g(mid)
    return [chain(kinds, ks[half:], destroyed), read]


@pytest.mark.parametrize("mode", ["c", "c|py"])
def test_py_objects_views_params_and_inplace_nodes_in_reused_units(mode: str) -> None:
    ks = constants(seed=5)
    x = dvector("x")
    function([x], mixed(ks, x), mode=mode)
    f = function([x], mixed(edited(ks), x), mode=mode)
    assert sum(m["units_reused"] for m in f.compile_profile["modules"]) >= 2
    assert sum(m["units_compiled"] for m in f.compile_profile["modules"]) <= 2
    want = function([x], mixed(edited(ks), x), mode=Mode(linker="py"))(X)
    for _ in range(2):
        for got, expected in zip(f(X), want, strict=True):
            np.testing.assert_allclose(got, expected, rtol=1e-12)
