"""Compile units keep PyTensor's hook contract (docs/op-authors.md, section
1): a node's ``c_init_code_apply`` runs in the translation unit that holds
its code, ``c_init_code`` once per unit that holds its op's code, a node
sees its own unit's statics, and struct hooks keep per-node state; a name
defined by two different pieces of code is an error naming both, one that
nothing defines is reported when the module is built. The graph's meaning
never depends on how it is cut: every test compares with ``perform``."""

from __future__ import annotations

import numpy as np
import pytest
from support.ops import copy_and_update
from support.unit_hook_ops import KINDS, _Affine, hook_chain

import opweave
from opweave.compile.function import function
from opweave.compile.mode import Mode
from opweave.errors import CompileError
from opweave.tensor import dvector

X = np.linspace(-2.0, 2.0, 7)


def constants(n: int, seed: int = 0) -> list[float]:
    """``n`` distinct constants: one distinct node code each."""
    return [round(0.5 + 0.01 * k + 0.001 * seed, 6) for k in range(n)]


def expected(ks: list[float], python_at: int | None = None) -> np.ndarray:
    x = dvector("x")
    return function([x], hook_chain(x, ks, python_at), mode=Mode(linker="py"))(X)


def build(ks: list[float], mode: str = "c", python_at: int | None = None):
    x = dvector("x")
    return function([x], hook_chain(x, ks, python_at), mode=mode)


def module_profiles(f) -> list[dict]:
    return f.compile_profile["modules"]


@pytest.mark.parametrize("n", [40, 100])
def test_every_hook_runs_in_the_unit_that_holds_its_node(n: int) -> None:
    ks = constants(n)
    f = build(ks)
    (module,) = module_profiles(f)
    assert module["units_compiled"] + module["units_reused"] >= 2
    assert module["whole_because"] == ""
    for _ in range(2):  # state and statics hold call after call
        np.testing.assert_allclose(f(X), expected(ks), rtol=1e-12)


def test_the_same_graph_as_one_unit_agrees() -> None:
    ks = constants(40, seed=1)
    with opweave.config.change_flags(cmodule__unit_threshold=0):
        whole = build(ks)
    assert module_profiles(whole)[0]["units_compiled"] == 0
    np.testing.assert_allclose(whole(X), build(ks)(X), rtol=1e-12)
    np.testing.assert_allclose(whole(X), expected(ks), rtol=1e-12)


def test_c_or_py_regions_in_units_run_every_hook() -> None:
    ks = constants(90, seed=2)
    f = build(ks, mode="c|py", python_at=45)
    modules = module_profiles(f)
    assert len(modules) == 2  # a region on each side of the Python node
    assert all(m["units_compiled"] + m["units_reused"] >= 2 for m in modules)
    np.testing.assert_allclose(f(X), expected(ks, python_at=45), rtol=1e-12)


@pytest.mark.parametrize("mode", ["c", "c|py"])
@pytest.mark.parametrize("where", ["first", "middle", "last"])
def test_an_edit_anywhere_keeps_the_hooks_right(where: str, mode: str) -> None:
    # In c|py, a node without C code cuts the chain into two regions of 30
    # node codes, each compiled in units.
    python_at = 30 if mode == "c|py" else None
    ks = constants(61, seed=3)
    build(ks, mode, python_at)
    position = {"first": 0, "middle": 45, "last": 60}[where]
    edited = list(ks)
    edited[position] = 9.25
    f = build(edited, mode, python_at)
    modules = module_profiles(f)
    assert sum(m["units_reused"] for m in modules) >= 1  # the units the edit did not touch
    if KINDS[position % len(KINDS)].__name__ != "StructState":  # those stay in the module
        assert sum(m["units_compiled"] for m in modules) >= 1
    np.testing.assert_allclose(f(X), expected(edited, python_at), rtol=1e-12)


class ClashOne(_Affine):
    """Defines ``opw_clash`` (external linkage): ``z = x + 1``."""

    def a_b_of(self) -> tuple[float, float]:
        return 1.0, 1.0

    def c_support_code(self, **kwargs):
        return "double opw_clash(double v) { return v + 1.0; }\n"

    def c_code(self, node, name, inp, out, sub):
        return copy_and_update(inp[0], out[0], sub["fail"], "*value = opw_clash(*value);")


class ClashTwo(ClashOne):
    """Defines ``opw_clash`` differently, with the same node code."""

    def c_support_code(self, **kwargs):
        return "double opw_clash(double v) { return v + 2.0; }\n"


class UsesNothing(_Affine):
    """Calls a function that nothing defines."""

    def c_support_code(self, **kwargs):
        return "double opw_nowhere(double v);\n"

    def c_code(self, node, name, inp, out, sub):
        return copy_and_update(inp[0], out[0], sub["fail"], "*value = opw_nowhere(*value);")


@pytest.mark.parametrize("threshold", [24, 0])
def test_one_name_defined_by_two_pieces_of_code_is_an_error_naming_both(threshold: int) -> None:
    x = dvector("x")
    graph = ClashTwo(3.0)(hook_chain(ClashOne(1.0)(x), constants(40, seed=4)))
    with opweave.config.change_flags(cmodule__unit_threshold=threshold):
        with pytest.raises(CompileError) as raised:
            function([x], graph)
    summary = raised.value.summary
    assert "ClashOne c_support_code" in summary
    assert "ClashTwo c_support_code" in summary


@pytest.mark.parametrize("threshold", [24, 0])
def test_a_name_that_nothing_defines_is_reported_at_build(threshold: int) -> None:
    x = dvector("x")
    graph = UsesNothing(3.0)(hook_chain(x, constants(40, seed=5)))
    with opweave.config.change_flags(cmodule__unit_threshold=threshold):
        with pytest.raises(CompileError) as raised:
            function([x], graph)
    summary = raised.value.summary
    assert "'opw_nowhere(double)'" in summary
    assert "UsesNothing c_support_code: uses 'opw_nowhere(double)'" in summary


class DeclaresHelper(_Affine):
    """Declares GlobalHelper's ``opw_global_twice`` and calls it: ``z = 2x``.
    Two pieces of code now name it, so a link that finds it in two units
    cannot tell that one piece defines it, and the graph is built as one
    unit, where it compiles."""

    def a_b_of(self) -> tuple[float, float]:
        return 2.0, 0.0

    def c_support_code(self, **kwargs):
        return "double opw_global_twice(double v);\n"

    def c_code(self, node, name, inp, out, sub):
        update = "*value = opw_global_twice(*value);"
        return copy_and_update(inp[0], out[0], sub["fail"], update)


def test_a_graph_whose_units_do_not_link_is_one_unit_and_says_why() -> None:
    x = dvector("x")
    ks = constants(48, seed=6)
    graph = DeclaresHelper(0.0)(hook_chain(x, ks))
    f = function([x], graph)
    (module,) = module_profiles(f)
    assert "its units did not compile or link" in module["whole_because"]
    assert "opw_global_twice" in module["whole_because"]
    want = function([x], graph, mode=Mode(linker="py"))(X)
    np.testing.assert_allclose(f(X), want, rtol=1e-12)


@pytest.mark.parametrize("mode", ["c", "c|py"])
def test_py_objects_and_inplace_nodes_inside_units(mode: str) -> None:
    # A node reading py_x of an intermediate, and an in-place node with a
    # second reader of what it destroys, in the middle of 48 node codes.
    from support.inplace_ops import g, inplace_add_one
    from support.ops import SameObject

    x = dvector("x")
    ks = constants(48, seed=7)
    mid = SameObject()(hook_chain(x, ks[:24]))
    destroyed, read = inplace_add_one(mid), g(mid)
    outputs = [hook_chain(destroyed, ks[24:]), read]
    f = function([x], outputs, mode=mode)
    assert sum(m["units_compiled"] + m["units_reused"] for m in module_profiles(f)) >= 2
    want = function([x], outputs, mode=Mode(linker="py"))(X)
    for _ in range(2):
        for got, expected_value in zip(f(X), want, strict=True):
            np.testing.assert_allclose(got, expected_value, rtol=1e-12)
