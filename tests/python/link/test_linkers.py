"""Linker objects as PyTensor users drive them: accept(fgraph).make_thunk()
returns (thunk, input containers, output containers); constants and repeated
variables as graph inputs; NominalVariable; the dual linker."""

from __future__ import annotations

import numpy as np
import pytest
from opweave.examples.double_ops import add, double, mul, sub
from support.api_ops import Plus

from opweave.graph.basic import Constant, NominalVariable
from opweave.graph.fg import FunctionGraph
from opweave.link._debug_errors import BadThunkOutput
from opweave.link.basic import PerformLinker
from opweave.link.c.basic import CLinker, DualLinker, OpWiseCLinker
from opweave.link.thunk import Container
from opweave.link.vm import VMLinker
from opweave.tensor import dvector

LINKERS = [CLinker, OpWiseCLinker, PerformLinker, lambda: VMLinker(use_cloop=True), DualLinker]


def run(linker, *values):
    thunk, inputs, outputs = linker.make_thunk()
    for container, value in zip(inputs, values, strict=True):
        container.data = value
    assert thunk() is None
    return [c.data for c in outputs]


@pytest.mark.parametrize("make", LINKERS)
def test_every_linker_runs_a_graph_through_containers(make) -> None:
    x, y, z = double("x"), double("y"), double("z")
    graph = FunctionGraph([x, y, z], [add(mul(x, y), z), sub(x, z)])
    linker = make().accept(graph)
    assert run(linker, 2.0, 3.0, 4.0) == [10.0, -2.0]
    assert run(linker, 1.0, 2.0, 3.0) == [5.0, -2.0]  # the thunk can be run again


def test_given_storage_cells_are_the_containers_storage() -> None:
    x, y = double("x"), double("y")
    cells_in, cells_out = [[1.5], [2.0]], [[None]]
    thunk, inputs, outputs = (
        CLinker()
        .accept(FunctionGraph([x, y], [add(x, y)]))
        .make_thunk(input_storage=cells_in, output_storage=cells_out)
    )
    thunk()
    assert cells_out[0][0] == 3.5 and outputs[0].storage is cells_out[0]
    assert inputs[0].storage is cells_in[0]
    assert str(thunk).startswith("_CThunk(module ") and thunk.lazy is False


def test_container_data_goes_through_the_type_filter() -> None:
    container = Container(dvector("v"))
    container.data = [1, 2]
    assert container.data.dtype == np.float64 and container[0] is container.data
    with pytest.raises(TypeError):
        container.data = "text"


def test_constants_as_inputs_take_the_value_passed() -> None:
    x = Constant(double("x").type, 999.0, name="x")
    one = Constant(double("one").type, 1.0)
    difference = sub(x, one)
    for make in (CLinker, OpWiseCLinker):
        assert run(make().accept(FunctionGraph([x, one], [difference])), 10.0, 1.0) == [9.0]
        assert run(make().accept(FunctionGraph([x, one], [difference])), 10.0, 0.0) == [10.0]
        assert run(make().accept(FunctionGraph([x], [difference])), 10.0) == [9.0]


def test_keys_tell_input_orders_and_constant_values_apart() -> None:
    t = double("t").type
    x, one, two = Constant(t, 5.0), Constant(t, 1.0), Constant(t, 2.0)
    keys = [
        CLinker().accept(FunctionGraph(inputs, [output])).cmodule_key()
        for inputs, output in (
            ([x, one], sub(x, one)),
            ([one, x], sub(x, one)),
            ([x, two], sub(x, two)),
        )
    ]
    assert len(set(keys)) == 3
    assert keys[0][1] == keys[2][1]  # one module for every value of the input constants
    assert {name for name, _ in keys[0][0]} >= {"BinaryDoubleOp", "Double"}


def test_nominal_variables_are_interned_by_id_and_type() -> None:
    t = double("t").type
    a = NominalVariable(0, t, name="a")
    assert NominalVariable(0, t) is a and a.name == "a"
    assert NominalVariable(1, t) is not a
    assert NominalVariable(0, dvector("v").type) is not a
    b = NominalVariable(1, t)
    graph1 = FunctionGraph([a, b], [sub(a, b)])
    graph2 = FunctionGraph([a, b], [sub(a, b)])
    key = CLinker().accept(graph1).cmodule_key()
    assert key == CLinker().accept(graph2).cmodule_key()
    assert key != CLinker().accept(FunctionGraph([b, a], [sub(a, b)])).cmodule_key()
    assert run(CLinker().accept(graph1), 5.0, 2.0) == [3.0]


def test_repeated_inputs_and_inputs_found_from_the_outputs() -> None:
    x, y = double("x"), double("y")
    assert run(CLinker().accept(FunctionGraph([x, x], [add(x, x)])), 2.0, 2.0) == [4.0]
    graph = FunctionGraph(outputs=[add(x, mul(y, Constant(x.type, 3.0)))])
    assert graph.inputs == [x, y]  # constants are not inputs
    assert run(CLinker().accept(graph), 1.0, 2.0) == [7.0]


def test_dual_linker_checks_each_node_with_the_checker() -> None:
    x, y = dvector("x"), dvector("y")
    graph = FunctionGraph([x, y], [Plus(wrong=True)(Plus()(x, y), y)])
    seen = []

    def checker(perform_cell, c_cell):
        seen.append((perform_cell[0].tolist(), c_cell[0].tolist()))

    assert run(DualLinker(checker=checker).accept(graph), [1.0], [2.0])[0].tolist() == [5.0]
    assert seen == [([3.0], [3.0]), ([6.0], [5.0])]
    with pytest.raises(BadThunkOutput, match="perform and c_code disagree"):
        run(DualLinker().accept(graph), [1.0], [2.0])


def test_code_gen_is_the_module_source() -> None:
    x = dvector("x")
    linker = CLinker().accept(FunctionGraph([x], [Plus()(x, x)]))
    assert "PyNumber_Add" in linker.code_gen()
    assert linker.code_gen() == linker.get_src_code()


def test_to_return_values_unpacks_a_single_value() -> None:
    from opweave.link.utils import to_return_values

    assert to_return_values([3]) == 3
    assert to_return_values((1, 2)) == [1, 2]


# C that doubles %(x)s in place and returns it as %(z)s (destroy_map {0: [0]}).
_DOUBLE_IN_PLACE = """
{
    for (npy_intp i = 0; i < PyArray_DIMS(%(x)s)[0]; ++i)
        *(double*)PyArray_GETPTR1(%(x)s, i) *= 2;
    Py_XDECREF(%(z)s);
    %(z)s = %(x)s;
    Py_INCREF(%(z)s);
}
"""


def _double_in_place(node, inputs, outputs):
    inputs[0] *= 2
    outputs[0][0] = inputs[0]


def test_the_dual_linkers_two_sides_never_share_a_destroyed_input() -> None:
    from support.debug_ops import DebugOp

    x = dvector("x")
    op = DebugOp("double in place", _DOUBLE_IN_PLACE, _double_in_place, destroy_map={0: [0]})
    graph = FunctionGraph([x], [op(x)])
    seen = []
    checker = lambda a, b: seen.append((a[0].tolist(), b[0].tolist()))  # noqa: E731
    (result,) = run(DualLinker(checker=checker).accept(graph), np.array([1.0, 2.0]))
    assert seen == [([2.0, 4.0], [2.0, 4.0])]  # each side doubled its own copy once
    assert result.tolist() == [2.0, 4.0]
