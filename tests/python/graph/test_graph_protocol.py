"""clone_replace, Op.make_node with itypes, the conversions of the tensor and
scalar layers and the shape rewrite take another library's variables by the
graph protocol (``type`` and ``owner``), not by opweave's classes (issue 36):
tests/python/support/foreign_graph.py is that library."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from support.foreign_graph import Graph, Node, Var, add, mul, vector

from opweave.compile._shape_rewrite import _dimension, _same_source
from opweave.graph.basic import Apply
from opweave.graph.op import Op
from opweave.graph.replace import clone_replace
from opweave.link.basic import PerformLinker
from opweave.scalar.basic import ScalarType, as_scalar
from opweave.tensor import dvector
from opweave.tensor.basic import as_tensor_variable, constant
from opweave.tensor.shape import Shape_i
from opweave.tensor.type import TensorType

VECTOR = TensorType("float64", shape=(None,))
INT = TensorType("int64", shape=())


def run(graph: Graph, *values: Any) -> list[Any]:
    thunk, inputs, outputs = PerformLinker().accept(graph).make_thunk()
    for container, value in zip(inputs, values, strict=True):
        container.data = value
    thunk()
    return [c.data for c in outputs]


def test_clone_replace_keeps_the_graphs_own_classes() -> None:
    x, y = vector("x"), vector("y")
    out = add(mul(x, x), x)
    (new,) = clone_replace([out], {x: y})
    assert type(new) is Var and type(new.owner) is Node
    assert new is not out and out.owner.inputs[1] is x  # the original is intact
    got = run(Graph([y], [new]), np.array([2.0, 3.0]))
    np.testing.assert_array_equal(got[0], [6.0, 12.0])
    with pytest.raises(TypeError, match="map variables to variables"):
        clone_replace([out], {x: 1.0})


class ItypesOp(Op):
    """x + 1 on float64 vectors, made from itypes and otypes."""

    itypes = [VECTOR]  # noqa: RUF012
    otypes = [VECTOR]  # noqa: RUF012

    def perform(self, node: Any, inputs: list[Any], outputs: list[list[Any]]) -> None:
        outputs[0][0] = inputs[0] + 1


def test_make_node_from_itypes_takes_a_foreign_variable() -> None:
    x = vector("x")
    node = ItypesOp().make_node(mul(x, x))
    assert type(node.inputs[0]) is Var
    got = run(Graph([x], node.outputs), np.array([1.0, 2.0]))
    np.testing.assert_array_equal(got[0], [2.0, 5.0])
    with pytest.raises(TypeError, match="input 0 must be of type"):
        ItypesOp().make_node(Var(INT))


def test_conversions_take_foreign_variables() -> None:
    x = vector("x")
    assert as_tensor_variable(x) is x
    with pytest.raises(TypeError, match="expects a value"):
        constant(x)
    assert VECTOR.filter_variable(x) is x
    s = Var(ScalarType("float64"))
    assert as_scalar(s) is s


def test_the_shape_rewrite_follows_foreign_shape_nodes() -> None:
    x = vector("x")
    m = mul(x, x)
    length = Node(Shape_i(0), [m], [Var(INT)]).outputs[0]
    assert _same_source((length,)) is m

    class Same(Op):
        def make_node(self, v: Any) -> Apply:
            return Apply(self, [v], [VECTOR()])

        def infer_shape(self, fgraph: Any, node: Any, shapes: Any) -> list[Any]:
            return [(length,)]  # a foreign variable for the dimension

    out = Same().make_node(m).outputs[0]
    dimension = _dimension(Graph([x], [out]), out, 0, 0)
    assert dimension is length or (dimension.owner and isinstance(dimension.owner.op, Shape_i))


@pytest.mark.parametrize(
    ("use", "symbol"),
    [
        (lambda x, y: x + y, "+"),
        (lambda x, y: 2.0 * x, "*"),
        (lambda x, y: np.float64(1.0) - x, "-"),
        (lambda x, y: x @ y, "@"),
        (lambda x, y: -x, "unary -"),
        (lambda x, y: abs(y), "abs()"),
    ],
)
def test_arithmetic_on_variables_says_what_to_do(use, symbol) -> None:
    """opweave has no math library: an operator on its variables raises a
    TypeError that names the operator and the two ways to compute it."""
    x, y = dvector("x"), dvector("y")
    with pytest.raises(TypeError) as caught:
        use(x, y)
    message = str(caught.value)
    assert f"({symbol} on " in message
    assert "Apply an Op" in message and 'mode="OPWEAVE"' in message


def test_dir_lists_the_names_loaded_on_first_use() -> None:
    import opweave

    names = dir(opweave)
    for name in ("function", "Op", "Apply", "Mode", "shared", "tensor", "config", "__version__"):
        assert name in names
    assert names == sorted(names)
