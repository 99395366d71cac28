"""The compile service (opweave/link/c/service.py): every module comes from
it, whoever asks. A single node's thunk (COp.make_c_thunk, constant
folding, DebugMode, DualLinker) is built without constructing a linker;
opweave.function builds no Thunk and no storage cells; the rule between
one module and per-node linking is one (link/c/_layout.py)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from opweave.examples.double_ops import add, double, mul
from support.ops import PyPlusOne, TwoWays

import opweave
from opweave.compile.debugmode import DebugMode
from opweave.graph.fg import FunctionGraph
from opweave.link.c import basic, opwise, service
from opweave.link.c._layout import links_node_by_node
from opweave.link.c.dual import DualLinker
from opweave.link.c.spec import MissingCCode


@pytest.fixture
def no_linker_constructed(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any CLinker or OpWiseCLinker made from here on raises."""

    def refuse(self: Any, *args: Any, **kwargs: Any) -> None:
        raise AssertionError(f"{type(self).__name__} constructed")

    monkeypatch.setattr(basic.CLinker, "__init__", refuse)
    monkeypatch.setattr(opwise.OpWiseCLinker, "__init__", refuse)


def test_a_graph_module_from_the_service_runs_and_is_found_again(tmp_path) -> None:
    x, y = double("x"), double("y")
    graph = FunctionGraph([x, y], [add(mul(x, y), x)])
    with opweave.config.change_flags(compiledir=str(tmp_path)):
        first = service.GraphBuild.of(graph).compile()
        again = service.GraphBuild.of(graph).compile()
    assert first.outcome == "built" and again.outcome == "hit"
    assert again.library == first.library
    from opweave.link.callable import InputBinding, compiled_function

    fn = compiled_function(again, InputBinding(graph.inputs, "test"), single=True)
    assert fn(3.0, 4.0) == 15.0


def test_single_node_thunks_never_construct_a_linker(no_linker_constructed, tmp_path) -> None:
    x = opweave.tensor.dvector("x")
    node = TwoWays()(x).owner  # C: + 1; perform: + 2
    value = np.array([1.0, 2.0])
    with opweave.config.change_flags(compiledir=str(tmp_path)):
        thunk = service.node_thunk(node)
        assert thunk is not None
        np.testing.assert_array_equal(thunk([value])[0], [2.0, 3.0])
        # COp.make_c_thunk
        storage = {v: [None] for v in [*node.inputs, *node.outputs]}
        storage[x][0] = value
        compute = {v: [v is x] for v in storage}
        node.op.make_c_thunk(node, storage, compute, [])()
        np.testing.assert_array_equal(storage[node.outputs[0]][0], [2.0, 3.0])
        # constant folding, by the node's C code (+ 1; its perform adds 2)
        from opweave.compile.rewrite import fold_constants
        from opweave.tensor import constant

        out = TwoWays()(constant(np.array([1.0, 2.0])))
        (folded,) = fold_constants(FunctionGraph([], [out]), [out], "c")
        np.testing.assert_array_equal(folded.data, [2.0, 3.0])


def test_debug_mode_and_the_dual_linker_never_construct_a_linker(
    no_linker_constructed, tmp_path
) -> None:
    x = double("x")
    out = add(mul(x, x), x)
    with opweave.config.change_flags(compiledir=str(tmp_path)):
        f = opweave.function([x], out, mode=DebugMode())
        assert f(3.0) == 12.0
        dual = DualLinker().accept(FunctionGraph([x], [out]))
        thunk, inputs, outputs = dual.make_thunk()
        inputs[0].data = 2.0
        thunk()
        assert outputs[0].data == 6.0


def test_function_builds_no_thunk(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    from opweave.link import thunk as thunk_module

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a Thunk was built")

    monkeypatch.setattr(thunk_module, "thunk_of", refuse)
    x = double("x")
    with opweave.config.change_flags(compiledir=str(tmp_path)):
        for mode in ("c", "c|py", "py"):
            assert opweave.function([x], mul(x, 2.0), mode=mode)(4.0) == 8.0
    with pytest.raises(AssertionError, match="a Thunk was built"):
        basic.CLinker().accept(FunctionGraph([x], [mul(x, 2.0)])).make_thunk()


def test_one_rule_for_one_module_or_node_by_node(tmp_path) -> None:
    v = opweave.tensor.dvector("v")
    in_python = PyPlusOne()(v)
    in_c = TwoWays()(in_python)  # C: + 1; perform: + 2
    assert not links_node_by_node([in_c.owner], python_fallback=True)
    assert links_node_by_node([in_python.owner, in_c.owner], python_fallback=True)
    assert not links_node_by_node([in_python.owner, in_c.owner], python_fallback=False)
    with opweave.config.change_flags(compiledir=str(tmp_path)):
        # The default mode's C linker links it node by node, as c|py does:
        # TwoWays runs its C code (+ 1) after PyPlusOne's perform (+ 1).
        for mode in (None, "c|py"):
            f = opweave.function([v], in_c, mode=mode)
            np.testing.assert_array_equal(f(np.array([1.0, 2.0])), [3.0, 4.0])
        # Strict C mode refuses it.
        with pytest.raises(MissingCCode):
            basic.CLinker().accept(FunctionGraph([v], [in_c])).compile()
