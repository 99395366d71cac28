"""Graphs built by another graph library (tests/python/support/foreign_graph.py:
its own variables, constants, apply nodes, function graph, ops and "not
defined" exception) through opweave's linker objects, in py, C and c|py:
constants, params, a node with two clients, outputs that are inputs or
copies of them, nodes without C code, single-node thunks."""

from __future__ import annotations

import numpy as np
import pytest
from support.foreign_graph import (
    Const,
    ForeignOp,
    Graph,
    Node,
    NotDefined,
    PyOnly,
    Scale,
    Var,
    add,
    mul,
    vector,
)

import opweave
from opweave.compile.io import Out
from opweave.compile.ops import deep_copy_op, view_op
from opweave.compile.sharedvalue import shared
from opweave.graph.basic import (
    Apply,
    Constant,
    NominalVariable,
    fresh_variable,
    graph_clients,
    graph_variables,
    is_constant,
    is_variable,
    make_apply,
)
from opweave.graph.fg import FunctionGraph
from opweave.graph.utils import MethodNotDefined, not_defined_errors, register_not_defined
from opweave.link.basic import PerformLinker
from opweave.link.c._node_keys import single_node_graph as _single_node_graph
from opweave.link.c.basic import CLinker, DualLinker, OpWiseCLinker
from opweave.link.c.spec import MissingCCode
from opweave.link.vm import VMLinker
from opweave.tensor import dvector

register_not_defined(NotDefined)

ALL_LINKERS = {
    "C": CLinker,
    "c|py": OpWiseCLinker,
    "py": PerformLinker,
    "vm": lambda: VMLinker(use_cloop=True),
}


def run(linker, *values):
    thunk, inputs, outputs = linker.make_thunk()
    for container, value in zip(inputs, values, strict=True):
        container.data = value
    assert thunk() is None
    return [c.data for c in outputs]


def a_graph():
    """``m = x*y`` used twice (``m + c``, with the constant ``c``, and
    ``Scale(3)(m)``, with params); ``x`` itself and a copy of ``y`` are outputs."""
    x, y = vector("x"), vector("y")
    c = Const(x.type, [1.0, 2.0, 3.0], name="c")
    m = mul(x, y)
    copy = deep_copy_op(y)
    return Graph([x, y], [add(m, c), Scale(3.0)(m), x, copy]), copy


def expected(x, y):
    return [x * y + [1.0, 2.0, 3.0], 3.0 * x * y, x, y]


@pytest.mark.parametrize("mode", ALL_LINKERS)
def test_a_foreign_graph_runs_through_every_linker(mode) -> None:
    graph, _ = a_graph()
    linker = ALL_LINKERS[mode]().accept(graph)
    for x, y in ((np.ones(3), np.full(3, 2.0)), (np.arange(3.0), np.array([5.0, -1.0, 0.5]))):
        results = run(linker, x, y)
        for got, want in zip(results, expected(x, y), strict=True):
            np.testing.assert_array_equal(got, want)
        assert results[3] is not y  # the copy is one


def test_the_graph_library_is_not_opweaves() -> None:
    graph, copy = a_graph()
    assert isinstance(graph.clients, dict) and not isinstance(graph, FunctionGraph)
    for node in graph.toposort():
        assert all(isinstance(v, Var) for v in [*node.inputs, *node.outputs])
        if isinstance(node, Node):
            assert isinstance(node.op, ForeignOp)
    # The copy of an input is a variable of the input's library.
    assert type(copy) is Var and copy.owner.inputs == [graph.inputs[1]]
    with pytest.raises(TypeError, match="keyed by variables"):
        graph.clients.get(id(graph.inputs[0]))


@pytest.mark.parametrize("mode", ["c|py", "vm"])
def test_nodes_without_c_code_run_perform_between_compiled_regions(mode) -> None:
    x, y = vector("x"), vector("y")
    middle = PyOnly()(add(x, y))  # its c_code raises the library's NotDefined
    graph = Graph([x, y], [mul(middle, Scale(2.0)(middle))])
    x_value, y_value = np.array([1.0, 2.0]), np.array([3.0, 4.0])
    (result,) = run(ALL_LINKERS[mode]().accept(graph), x_value, y_value)
    np.testing.assert_array_equal(result, 2.0 * (x_value + y_value - 1.0) ** 2)
    (result,) = run(PerformLinker().accept(graph), x_value, y_value)
    np.testing.assert_array_equal(result, 2.0 * (x_value + y_value - 1.0) ** 2)
    with pytest.raises(MissingCCode, match="PyOnly"):
        run(CLinker().accept(graph), x_value, y_value)


@pytest.mark.parametrize("mode", ALL_LINKERS)
def test_constant_and_view_outputs(mode) -> None:
    x = vector("x")
    c = Const(x.type, [4.0, 5.0])
    graph = Graph([x], [view_op(x), c, add(x, c)])
    value = np.array([1.0, -1.0])
    viewed, constant, total = run(ALL_LINKERS[mode]().accept(graph), value)
    np.testing.assert_array_equal(viewed, value)
    np.testing.assert_array_equal(constant, [4.0, 5.0])
    np.testing.assert_array_equal(total, [5.0, 4.0])


def test_single_node_thunks_and_the_dual_linker() -> None:
    graph, _ = a_graph()
    scale = next(n for n in graph.toposort() if isinstance(n.op, Scale))
    alone, positions = _single_node_graph(scale)
    assert positions == [0]
    assert type(alone.inputs[0]) is Var and alone.inputs[0].owner is None
    assert type(alone.outputs[0]) is Var and type(alone.outputs[0].owner) is Node
    thunk = OpWiseCLinker().node_thunk(scale, 0)
    assert getattr(thunk, "outcome", None) is not None  # its own compiled module
    np.testing.assert_array_equal(thunk([np.array([1.0, 2.0])])[0], [3.0, 6.0])
    seen = []
    linker = DualLinker(checker=lambda a, b: seen.append(np.array_equal(a[0], b[0])))
    x, y = np.array([1.0, 2.0, 3.0]), np.array([2.0, 2.0, 2.0])
    results = run(linker.accept(graph), x, y)
    for got, want in zip(results, expected(x, y), strict=True):
        np.testing.assert_array_equal(got, want)
    assert seen and all(seen)


def test_a_not_defined_exception_counts_only_once_registered() -> None:
    class Unregistered(Exception):
        pass

    class Mul2(ForeignOp):
        def get_params(self, node):
            raise Unregistered("no params")

        def c_code_cleanup(self, *args, **kwargs):
            raise Unregistered("no cleanup")

        def c_code(self, node, name, inputs, outputs, sub):
            return mul.c_code(node, name, [inputs[0], inputs[0]], outputs, sub)

    x = vector("x")
    graph = Graph([x], [Mul2()(x)])
    with pytest.raises(Unregistered):
        run(CLinker().accept(graph), np.array([3.0]))
    assert Unregistered not in not_defined_errors()
    register_not_defined(Unregistered)
    register_not_defined(Unregistered)  # twice is harmless
    assert not_defined_errors().count(Unregistered) == 1
    assert not_defined_errors()[0] is MethodNotDefined
    assert not_defined_errors(NotImplementedError)[:2] == (NotImplementedError, MethodNotDefined)
    np.testing.assert_array_equal(run(CLinker().accept(graph), np.array([3.0]))[0], [9.0])
    with pytest.raises(TypeError, match="exception class"):
        register_not_defined(ValueError("not a class"))  # type: ignore[arg-type]


def test_constants_are_recognised_by_protocol() -> None:
    x = vector("x")
    assert is_constant(Const(x.type, [1.0])) and not is_constant(x)
    assert is_constant(Constant(dvector().type, [1.0]))
    assert not is_constant(dvector("v")) and not is_constant(NominalVariable(7, x.type))
    assert not is_constant(shared(np.zeros(2)))
    assert is_variable(x) and not is_variable(np.zeros(2))


def test_users_are_computed_from_the_nodes() -> None:
    graph, _ = a_graph()
    x, y = graph.inputs
    clients = graph_clients(graph)
    (m,) = {id(n.outputs[0]): n for n in graph.toposort() if n.op is mul}.values()
    assert [type(n.op).__name__ for n, _ in clients[id(m.outputs[0])]] == ["Add", "Scale"]
    assert [position for _, position in clients[id(y)]] == [1, 0]  # mul, then the copy
    variables = graph_variables(graph)
    assert variables[:2] == [x, y] and len({id(v) for v in variables}) == len(variables)
    assert sum(is_constant(v) for v in variables) == 1


def test_fresh_variables_and_nodes_are_of_the_graphs_classes() -> None:
    x = vector("x")
    x.name = "x"
    fresh = fresh_variable(x)
    assert type(fresh) is Var and fresh is not x and fresh.owner is None
    assert fresh.name is None and fresh.type == x.type
    # A constant's class cannot make a variable: the type's own class does.
    assert not is_constant(fresh_variable(Const(x.type, [1.0])))
    own = dvector("v")
    assert type(fresh_variable(own)) is type(own)
    node = mul.make_node(x, x)
    again = make_apply(mul, [x, x], [fresh_variable(x)], like=node)
    assert type(again) is Node and again.outputs[0].owner is again
    assert type(make_apply(view_op, [node.outputs[0]], [fresh_variable(x)])) is Node
    assert type(make_apply(view_op, [x], [fresh_variable(x)])) is Apply


@pytest.mark.parametrize("mode", ["py", "C", "c|py"])
def test_opweave_function_takes_a_foreign_graph(mode) -> None:
    x, y = vector("x"), vector("y")
    c, d = Const(x.type, [1.0, 2.0]), Const(x.type, [10.0, 20.0])
    m = mul(x, y)
    outputs = [add(m, add(c, d)), Scale(2.0)(m), x, Out(y)]  # add(c, d) is folded
    if mode != "C":
        outputs.append(PyOnly()(m))
    f = opweave.function([x, y], outputs, mode=mode)
    x_value, y_value = np.array([1.0, 2.0]), np.array([3.0, -1.0])
    results = f(x_value, y_value)
    want = [x_value * y_value + [11.0, 22.0], 2.0 * x_value * y_value, x_value, y_value]
    if mode != "C":
        want.append(x_value * y_value - 1.0)
    for got, expected_value in zip(results, want, strict=True):
        np.testing.assert_array_equal(got, expected_value)
    assert results[2] is not x_value and results[3] is not y_value  # copies
