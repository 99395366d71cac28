"""The module layout (opweave/link/c/spec.py, _cells.py, _node_code.py): one
struct per distinct node code and per distinct type code, a run() that loops
over a table of steps, and the same results, errors and state as before.

Every graph is checked against ``perform`` (mode="py"), in graphs small enough
for run() to call its steps directly and large enough for the table loop."""

from __future__ import annotations

import re

import numpy as np
import pytest
from support.layout_ops import AddScaled, Counter, Increment, chain, values

from opweave.compile.function import function
from opweave.compile.mode import Mode
from opweave.errors import CompileError
from opweave.graph.basic import Apply
from opweave.graph.fg import FunctionGraph
from opweave.link.c.basic import CLinker
from opweave.link.c.op import COp
from opweave.tensor import dvector, fvector


def source(inputs, outputs) -> str:
    return CLinker().accept(FunctionGraph(list(inputs), list(outputs))).get_src_code()


def structs(text: str, kind: str) -> list[str]:
    return re.findall(rf"^struct ({kind}_[0-9a-f]+) \{{", text, re.M)


def same_as_perform(inputs, outputs, args) -> list[np.ndarray]:
    compiled = function(inputs, outputs)(*args)
    expected = function(inputs, outputs, mode=Mode(linker="py"))(*args)
    for got, want in zip(compiled, expected, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-6)
        assert got.dtype == want.dtype
    return compiled


@pytest.mark.parametrize("length", [1, 3, 12, 40])
def test_chains_match_perform(length: int) -> None:
    x, y = dvector("x"), dvector("y")
    out = x
    for k in range(length):
        out = AddScaled(k % 3 + 0.5)(out, y)
    same_as_perform([x, y], [out], [values(5), values(5, seed=1)])


@pytest.mark.parametrize("width", [2, 30])
def test_wide_graphs_match_perform(width: int) -> None:
    xs = [dvector(f"x{i}") for i in range(width)]
    s = dvector("s")
    outs = [AddScaled(2.0)(x, s) for x in xs]
    results = same_as_perform(
        [*xs, s], outs, [values(4, seed=i) for i in range(width)] + [values(4, seed=99)]
    )
    assert len(results) == width


def test_diamonds_and_repeated_outputs_match_perform() -> None:
    x, y = dvector("x"), dvector("y")
    top = AddScaled(1.0)(x, y)
    left, right = AddScaled(2.0)(top, x), AddScaled(3.0)(top, y)
    bottom = AddScaled(0.5)(left, right)
    # An output listed twice, an input as an output, an intermediate as an output.
    outputs = [bottom, left, bottom, x]
    results = same_as_perform([x, y], outputs, [values(3), values(3, seed=2)])
    assert results[0] is not results[2] or np.array_equal(results[0], results[2])


def test_one_op_on_two_dtypes_gets_two_structs_and_right_results() -> None:
    xd, yd, xf, yf = dvector("xd"), dvector("yd"), fvector("xf"), fvector("yf")
    op = AddScaled(1.5)
    outs = [op(xd, yd), op(xf, yf)]
    args = [values(3), values(3, seed=1), values(3, "float32"), values(3, "float32", seed=1)]
    same_as_perform([xd, yd, xf, yf], outs, args)
    text = source([xd, yd, xf, yf], outs)
    assert len(structs(text, "op")) == 2
    assert len(structs(text, "cell")) == 2  # float64 and float32 vectors


def test_identical_nodes_share_one_struct_and_variables_share_cells() -> None:
    x = dvector("x")
    text = source([x], [chain(x, [Increment()] * 200)])
    assert len(structs(text, "op")) == 1
    assert len(structs(text, "cell")) == 1
    # run() does not grow with the graph: a loop over the step table.
    assert "opweave_run_steps(this, opweave_run_table" in text
    # Steps: the input, the output and 200 nodes; at creation, 199 intermediates.
    assert "opweave_run_count = 202;" in text
    assert "opweave_init_count = 199;" in text
    # Different constants in the C text are different code.
    kinds = source([x], [chain(x, [Increment(limit) for limit in (1.0, 2.0, 1.0, 3.0)])])
    assert len(structs(kinds, "op")) == 3


def test_code_does_not_grow_per_node_only_table_data_does() -> None:
    x = dvector("x")
    small = source([x], [chain(x, [Increment()] * 20)])
    large = source([x], [chain(x, [Increment()] * 400)])

    def run_function(text: str) -> str:
        return re.search(r"^int opweave_graph::run\(.*?^\}$", text, re.M | re.S)[0]

    assert run_function(small) == run_function(large)
    for pattern in (r"^static int ", r"^struct ", r"\{\n"):
        assert len(re.findall(pattern, small, re.M)) == len(re.findall(pattern, large, re.M))


def test_a_failing_shared_node_is_named_by_its_position() -> None:
    x = dvector("x")
    f = function([x], chain(x, [Increment(limit=10.0)] * 30))
    np.testing.assert_array_equal(f(np.array([-100.0])), [-70.0])
    # Node i sees 5 + i; node 6 is the first above 10.
    with pytest.raises(ValueError, match="above the limit") as raised:
        f(np.array([5.0]))
    assert any("node 6 (Increment" in note for note in raised.value.__notes__)
    np.testing.assert_array_equal(f(np.array([-50.0])), [-20.0])  # and it still works


def test_a_compile_error_names_the_node_hook_and_line() -> None:
    class Broken(COp):
        __props__ = ()

        def make_node(self, x):
            return Apply(self, [x], [x.type()])

        def c_code(self, node, name, inp, out, sub):
            return "int fine = 1;\nthis is not C;\n"

    x = dvector("x")
    graph = chain(x, [Increment()] * 25 + [Broken()] + [Increment()] * 4)
    with pytest.raises(CompileError) as raised:
        function([x], graph)
    assert "node 25 (Broken" in raised.value.summary
    assert "c_code, line 2 of its code" in raised.value.summary


def test_struct_state_is_kept_per_node_even_when_code_is_shared() -> None:
    x = dvector("x")
    f = function([x], chain(x, [Counter()] * 3))
    # Call k: each of the three nodes adds k.
    for k in (1, 2, 3):
        np.testing.assert_array_equal(f(np.zeros(2)), [3.0 * k] * 2)
    g = function([x], chain(x, [Counter()] * 20))  # the table loop
    for k in (1, 2):
        np.testing.assert_array_equal(g(np.zeros(1)), [20.0 * k])
    code = source([x], [chain(x, [Counter()] * 3)])
    assert len(structs(code, "op")) == 1
    assert re.search(r"^op_[0-9a-f]+ op_[0-9a-f]+_v\[3\];$", code, re.M)


def test_params_nodes_share_code_and_keep_their_own_values() -> None:
    from opweave.examples.quadratic import Quadratic

    x = dvector("x")
    ops = [Quadratic(1.0, 0.0, 0.0), Quadratic(0.0, 2.0, 1.0), Quadratic(1.0, 0.0, 0.0)]
    outs = [op(x) for op in ops]
    got = function([x], outs)(np.array([3.0]))
    np.testing.assert_array_equal(got[0], [9.0])
    np.testing.assert_array_equal(got[1], [7.0])
    np.testing.assert_array_equal(got[2], [9.0])
    assert len(structs(source([x], outs), "op")) == 1
    # Along a chain, past the direct-call limit.
    long = [Quadratic(0.0, 1.0, float(k)) for k in range(20)]
    y = chain(x, long)
    np.testing.assert_array_equal(function([x], y)(np.array([0.5])), [0.5 + sum(range(20))])


def test_external_c_op_shares_code_and_keeps_its_line_directives() -> None:
    from opweave.examples.external_vector_times_vector import VectorTimesVector

    x, y = dvector("x"), dvector("y")
    op = VectorTimesVector()
    outs = [op(x, y), op(op(x, y), y), op(y, y)]
    text = source([x, y], outs)
    # op(y, y) names its repeated input once (V_in0 twice), as PyTensor names
    # inputs by variable: its code differs; the two others share one struct.
    assert len(structs(text, "op")) == 2
    assert len(structs(source([x, y], outs[:2]), "op")) == 1
    assert re.search(r'^#line \d+ ".*vectorTimesVector\.c"$', text, re.M)
    got = function([x, y], outs)(np.array([2.0, 3.0]), np.array([4.0, 5.0]))
    np.testing.assert_array_equal(got[1], [32.0, 75.0])
    np.testing.assert_array_equal(got[2], [16.0, 25.0])


def test_intermediate_storage_is_reused_between_calls() -> None:
    x = dvector("x")
    y = AddScaled(2.0)(x, x)
    z = AddScaled(1.0)(y, x)
    f = function([x], [z, y])
    first = f(np.ones(3))
    second = f(np.ones(3))
    np.testing.assert_array_equal(second[0], [4.0] * 3)
    # Outputs are new objects on every call; the caller owns them.
    assert first[0] is not second[0]
