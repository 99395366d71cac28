"""The linkers on PyTensor's contract: accept(fgraph, no_recycling=...,
profile=...), then make_thunk(input_storage=..., output_storage=...,
storage_map=...) -> (thunk, input containers, output containers), with the
thunk carrying what PyTensor's Function reads; opweave.function runs the
same Function as the thunk, and a Mode keeps its linker object with its
settings."""

from __future__ import annotations

import numpy as np
import pytest
from opweave.examples.double_ops import add, double, mul
from support.layout_ops import AddScaled, Increment

import opweave
from opweave import _core
from opweave.compile.mode import Mode
from opweave.graph.fg import FunctionGraph
from opweave.graph.op import Op
from opweave.link.basic import PerformLinker
from opweave.link.c.basic import CLinker, OpWiseCLinker
from opweave.link.vm import VMLinker
from opweave.tensor import dvector

LINKERS = [CLinker, OpWiseCLinker, PerformLinker, VMLinker]


class Fails(Op):
    """An op whose perform raises (no C code)."""

    __props__ = ()

    def make_node(self, x):
        return opweave.graph.basic.Apply(self, [x], [x.type()])

    def perform(self, node, inputs, outputs):
        raise ValueError("this op fails")


@pytest.mark.parametrize("make", LINKERS)
def test_the_thunk_carries_what_pytensors_function_reads(make) -> None:
    x, y = double("x"), double("y")
    graph = FunctionGraph([x, y], [add(mul(x, y), y)])
    cells = {x: [2.0], y: [3.0]}
    thunk, inputs, outputs = (
        make().accept(graph, no_recycling=[], profile=None).make_thunk(storage_map=cells)
    )
    out = graph.outputs[0]
    assert inputs[0].storage is cells[x] and outputs[0].storage is thunk.storage_map[out]
    thunk()
    assert outputs[0].data == 9.0 and thunk.storage_map[graph.outputs[0]][0] == 9.0
    assert thunk.nodes == [out.owner.inputs[0].owner, out.owner]
    assert len(thunk.thunks) == len(thunk.nodes) and thunk.position_of_error == -1
    assert thunk.need_update_inputs is True
    assert thunk.allow_gc is (make is not CLinker)  # the C module keeps its storage
    assert isinstance(thunk.function, _core.Function)


@pytest.mark.parametrize("make", [OpWiseCLinker, PerformLinker])
def test_position_of_error_names_the_node_that_raised(make) -> None:
    x = dvector("x")
    graph = FunctionGraph([x], [Fails()(Increment()(x))])
    thunk, inputs, _ = make().accept(graph).make_thunk()
    inputs[0].data = np.ones(2)
    with pytest.raises(ValueError, match="this op fails"):
        thunk()
    assert thunk.position_of_error == 1
    assert type(thunk.nodes[thunk.position_of_error].op) is Fails


def test_allow_gc_is_a_setting_of_the_per_node_linkers() -> None:
    assert VMLinker(allow_gc=False).allow_gc is False
    assert OpWiseCLinker(allow_gc=False).allow_gc is False
    assert PerformLinker().allow_gc is True


def test_function_runs_the_thunks_function_and_keeps_the_linkers_schedule() -> None:
    x = dvector("x")
    seen = []

    def schedule(fgraph):
        seen.append(fgraph)
        return fgraph.toposort()

    y = AddScaled(2.0)(Increment()(x), x)
    expected = opweave.function([x], y, mode="py")(np.array([1.0, 2.0]))
    for make in (CLinker, OpWiseCLinker, PerformLinker):
        seen.clear()
        mode = Mode(linker=make(schedule=schedule))
        assert mode.linker.schedule is schedule
        f = opweave.function([x], y, mode=mode)
        np.testing.assert_array_equal(f(np.array([1.0, 2.0])), expected)
        assert seen, make  # the mode's own linker object linked the graph
        assert mode.linker.fgraph is None  # and stays unbound, reusable
        assert f.mode.linker_name == make.kind


def test_a_mode_of_a_linker_object_equals_the_mode_of_its_name() -> None:
    assert Mode(linker=CLinker()) == Mode("c")
    assert Mode(linker=OpWiseCLinker()) == Mode("cvm")
    assert Mode(linker=CLinker(schedule=len)) != Mode("c")
    with pytest.raises(TypeError, match="a name or a Linker"):
        Mode(linker=object())


def test_the_default_mode_runs_nodes_whose_c_code_is_missing_in_python() -> None:
    from support.debug_ops import DebugOp, double_perform, vector

    from opweave.link.c.spec import MissingCCode

    x = dvector("x")
    y = DebugOp("no C for this node", body=None, perform=double_perform)(Increment()(x))
    with pytest.raises(MissingCCode):
        opweave.function([x], y, mode="C")
    f = opweave.function([x], y)
    np.testing.assert_array_equal(f(vector([1.0, 2.0])), [4.0, 6.0])
    assert f.node_outcomes[1] is None  # ran perform
