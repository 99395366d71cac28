"""What function() does to a graph: constant folding and DeepCopyOp on
outputs that would alias an input, a constant or another output."""

from __future__ import annotations

import numpy as np
import pytest
from opweave.examples.double_ops import add, double
from support.ops import TwoWays

import opweave
from opweave.compile.ops import DeepCopyOp
from opweave.graph.basic import Apply, Constant
from opweave.graph.op import Op
from opweave.tensor import constant, dvector

MODES = ["c", "c|py", "py"]


def ops_of(fn):
    return [type(node.op).__name__ for node in fn.fgraph.toposort()]


@pytest.mark.parametrize("mode", MODES)
def test_output_that_is_an_input_is_a_copy(mode: str) -> None:
    x = dvector("x")
    f = opweave.function([x], x, mode=mode)
    assert ops_of(f) == ["DeepCopyOp"]
    data = np.array([1.0, 2.0])
    out = f(data)
    np.testing.assert_array_equal(out, data)
    assert not np.shares_memory(out, data)


@pytest.mark.parametrize("mode", MODES)
def test_repeated_and_constant_outputs_are_copies(mode: str) -> None:
    x = dvector("x")
    y = TwoWays()(x)
    k = constant(np.array([5.0, 6.0]))
    f = opweave.function([x], [y, y, k], mode=mode)
    first, second, const = f(np.zeros(2))
    assert not np.shares_memory(first, second)
    np.testing.assert_array_equal(first, second)
    const[0] = -1.0  # the caller may write to what it got
    np.testing.assert_array_equal(f(np.zeros(2))[2], [5.0, 6.0])
    assert ops_of(f).count("DeepCopyOp") == 2


def test_types_without_c_deep_copy_are_copied_in_python_in_c_mode() -> None:
    a = double("a")
    assert type(double) not in DeepCopyOp.c_code_and_version
    f = opweave.function([a], [a, add(a, a)])
    assert f(1.5) == [1.5, 3.0]
    assert "DeepCopyOp" not in ops_of(f)


class Counted(TwoWays):
    """TwoWays that counts how often each implementation ran."""

    runs = 0

    def perform(self, node, inputs, outputs):
        Counted.runs += 1
        super().perform(node, inputs, outputs)


class PythonFolded(Counted):
    def python_constant_folding(self, node):
        return True


class NeverFolded(Counted):
    def do_constant_folding(self, fgraph, node):
        return False


@pytest.mark.parametrize("mode", ["c", "c|py"])
def test_all_constant_nodes_are_folded_with_their_c_code(mode: str) -> None:
    x = dvector("x")
    k = constant(np.array([1.0, 2.0]))
    folded = TwoWays()(k)
    f = opweave.function([x], [folded, TwoWays()(x)], mode=mode)
    assert sorted(ops_of(f)) == ["DeepCopyOp", "TwoWays"]
    out, other = f(np.zeros(2))
    np.testing.assert_array_equal(out, [2.0, 3.0])  # C: + 1
    np.testing.assert_array_equal(other, [1.0, 1.0])
    assert isinstance(f.fgraph.outputs[0].owner.inputs[0], Constant)


def test_python_constant_folding_runs_perform_and_do_constant_folding_can_refuse() -> None:
    k = constant(np.array([1.0, 2.0]))
    Counted.runs = 0
    f = opweave.function([], PythonFolded()(k))
    assert Counted.runs == 1 and ops_of(f) == ["DeepCopyOp"]
    np.testing.assert_array_equal(f(), [3.0, 4.0])  # perform: + 2
    g = opweave.function([], NeverFolded()(k))
    assert ops_of(g) == ["NeverFolded"]
    np.testing.assert_array_equal(g(), [2.0, 3.0])  # computed by C at each call
    assert Counted.runs == 1


def test_nodes_downstream_of_a_folded_node_are_rebuilt_on_constants() -> None:
    class Add(Op):
        __props__ = ()

        def make_node(self, a, b):
            return Apply(self, [a, b], [a.type()])

        def perform(self, node, inputs, outputs):
            outputs[0][0] = inputs[0] + inputs[1]

    x = dvector("x")
    k = constant(np.array([1.0, 1.0]))
    out = Add()(PythonFolded()(k), x)
    f = opweave.function([x], out, mode="py")
    assert ops_of(f) == ["Add"]
    [node] = f.fgraph.toposort()
    assert isinstance(node.inputs[0], Constant)
    np.testing.assert_array_equal(node.inputs[0].data, [3.0, 3.0])
    np.testing.assert_array_equal(f(np.array([1.0, 2.0])), [4.0, 5.0])
    assert f.outputs == [out]  # the caller's variables, not the rewritten ones


def test_errors_while_folding_name_the_node() -> None:
    class Fails(Op):
        __props__ = ()

        def make_node(self, a):
            return Apply(self, [a], [a.type()])

        def perform(self, node, inputs, outputs):
            raise ArithmeticError("no")

        def python_constant_folding(self, node):
            return True

    with pytest.raises(ArithmeticError) as info:
        opweave.function([], Fails()(constant(np.ones(1))))
    assert any("folding the constant node" in note for note in info.value.__notes__)


class AsView(Op):
    """Returns a NumPy view of its input (declared in view_map)."""

    __props__ = ()
    view_map = {0: [0]}  # noqa: RUF012

    def make_node(self, x):
        return Apply(self, [x], [x.type()])

    def perform(self, node, inputs, outputs):
        outputs[0][0] = inputs[0].view()


@pytest.mark.parametrize("mode", ["c|py", "py"])
def test_views_of_inputs_and_of_each_other_are_copied(mode: str) -> None:
    from opweave.compile.ops import view_op

    x = dvector("x")
    data = np.array([1.0, 2.0])
    f = opweave.function([x], [AsView()(x), view_op(x), view_op(x)], mode=mode)
    first, second, third = f(data)
    for result in (first, second, third):
        np.testing.assert_array_equal(result, data)
        assert not np.shares_memory(result, data)
    assert not np.shares_memory(second, third)


def test_a_view_of_an_intermediate_is_not_recycled_in_c_mode() -> None:
    from opweave.examples.vector_times_vector import VectorTimesVector

    from opweave.compile.ops import view_op

    x, y = dvector("x"), dvector("y")
    # VectorTimesVector would reuse its output array between calls in the
    # whole-graph module; the caller's result must not change with it. No
    # copy: the module empties that intermediate at every call (no_recycling).
    f = opweave.function([x, y], view_op(VectorTimesVector()(x, y)))
    assert ops_of(f) == ["VectorTimesVector", "ViewOp"]
    first = f(np.ones(3), np.ones(3))
    f(np.full(3, 2.0), np.ones(3))
    np.testing.assert_array_equal(first, [1.0, 1.0, 1.0])


def test_optimizer_none_turns_folding_off_but_keeps_copies() -> None:
    from opweave.compile.mode import Mode

    k = constant(np.array([1.0, 2.0]))
    f = opweave.function([], TwoWays()(k), mode=Mode(linker="c", optimizer=None))
    assert ops_of(f) == ["TwoWays"]
    np.testing.assert_array_equal(f(), [2.0, 3.0])
    x = dvector("x")
    g = opweave.function([x], x, mode=Mode(linker="py", optimizer="None"))
    assert ops_of(g) == ["DeepCopyOp"]
    assert Mode("c", optimizer=None) != Mode("c") and not Mode("c", None).folds_constants
