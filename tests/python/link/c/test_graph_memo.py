"""The process's memo of compiled graphs (link/c/_graph_memo.py): a second
function() of an equal graph asks no op for its code again; an edited C file,
a changed option or an edited header is never served from it."""

from __future__ import annotations

import shutil
import time
from pathlib import Path
from typing import Any

import numpy as np
from opweave.examples.external_vector_times_vector import VectorTimesVector
from opweave.examples.vector_times_scalar import VectorTimesScalar

import opweave
from opweave.configparser import config
from opweave.link.c import _graph_memo, cmodule
from opweave.link.c._context import CONTEXT
from opweave.tensor import dscalar, dvector


class CountingTimesScalar(VectorTimesScalar):
    """VectorTimesScalar that counts the calls of its c_code."""

    calls = 0

    def c_code(self, node, name, inputs, outputs, sub):
        type(self).calls += 1
        return super().c_code(node, name, inputs, outputs, sub)


def _graph() -> tuple[list, object]:
    x, a = dvector("x"), dscalar("a")
    op = CountingTimesScalar()
    return [x, a], op(op(x, a), a)


def test_an_equal_graph_is_not_asked_for_its_code_again() -> None:
    inputs, out = _graph()
    f = opweave.function(inputs, out)
    np.testing.assert_array_equal(f(np.array([1.0, 2.0]), 3.0), [9.0, 18.0])
    calls = CountingTimesScalar.calls
    inputs, out = _graph()  # new variables, nodes and op instances, equal
    g = opweave.function(inputs, out)
    assert CountingTimesScalar.calls == calls
    assert g.cache_outcome == "hit"
    np.testing.assert_array_equal(g(np.array([1.0, 2.0]), 2.0), [4.0, 8.0])
    # f and g hold separate instances of the module's struct.
    np.testing.assert_array_equal(f(np.array([1.0]), 1.0), [1.0])


def test_a_changed_option_is_not_served_from_the_memo() -> None:
    inputs, out = _graph()
    opweave.function(inputs, out)
    calls = CountingTimesScalar.calls
    with config.change_flags(cmodule__remove_gxx_opt=not config.cmodule__remove_gxx_opt):
        inputs, out = _graph()
        opweave.function(inputs, out)
    assert CountingTimesScalar.calls > calls


def test_an_edited_c_file_is_never_served_stale(tmp_path: Path) -> None:
    source = Path(__import__("opweave.examples", fromlist=["x"]).__file__).parent
    c_file = tmp_path / "vectorTimesVector.c"
    shutil.copy(source / "vectorTimesVector.c", c_file)

    class Versioned(VectorTimesVector):
        func_file = str(c_file)

        def c_code_cache_version(self):
            return (1,)

    def run() -> np.ndarray:
        x, y = dvector("x"), dvector("y")
        f = opweave.function([x, y], Versioned()(x, y))
        return f(np.array([2.0, 3.0]), np.array([4.0, 5.0]))

    np.testing.assert_array_equal(run(), [8.0, 15.0])
    np.testing.assert_array_equal(run(), [8.0, 15.0])  # from the memo
    text = c_file.read_text()
    edited = text.replace(
        "x_ptr[i * x_str] * y_ptr[i * y_str]", "x_ptr[i * x_str] + y_ptr[i * y_str]"
    )
    assert edited != text
    c_file.write_text(edited)
    np.testing.assert_array_equal(run(), [6.0, 8.0])


class HeaderScale(VectorTimesScalar):
    """VectorTimesScalar times SCALE, a macro of the header ``scale.h`` in
    ``header_dir``; counts the calls of its c_code."""

    header_dir = ""
    calls = 0

    def c_headers(self, **kwargs):
        return ["scale.h"]

    def c_header_dirs(self, **kwargs):
        return [self.header_dir]

    def c_code(self, node, name, inputs, outputs, sub):
        type(self).calls += 1
        code = super().c_code(node, name, inputs, outputs, sub)
        return code.replace("y_value);", "y_value * SCALE);")


def _scaled(header_dir: Path) -> Any:
    x, a = dvector("x"), dscalar("a")
    HeaderScale.header_dir = str(header_dir)
    return opweave.function([x, a], HeaderScale()(x, a))


def test_an_edited_header_is_never_served_stale(tmp_path: Path) -> None:
    header = tmp_path / "scale.h"
    header.write_text("#define SCALE 2.0\n")
    time.sleep(0.05)  # older than the compile: its content is recorded
    f = _scaled(tmp_path)
    np.testing.assert_array_equal(f(np.array([1.0, 2.0]), 3.0), [6.0, 12.0])
    calls = HeaderScale.calls
    g = _scaled(tmp_path)
    assert HeaderScale.calls == calls and g.cache_outcome == "hit"  # from the memo
    header.write_text("#define SCALE 5.0\n")
    h = _scaled(tmp_path)
    assert h.cache_outcome == "built"
    np.testing.assert_array_equal(h(np.array([1.0, 2.0]), 3.0), [15.0, 30.0])


def test_an_evicted_entry_is_still_used_from_memory() -> None:
    """The memo's module is in memory: an entry evicted (or damaged) on disk
    since it was loaded does not make it stale."""
    inputs, out = _graph()
    f = opweave.function(inputs, out)
    key = next(k for k, (graph, _, _) in CONTEXT.graphs.items() if graph.library == f.library)
    module = _graph_memo.recall(key)[1]
    assert cmodule.get_module_cache().evict(module.key)
    calls = CountingTimesScalar.calls
    inputs, out = _graph()
    g = opweave.function(inputs, out)
    assert CountingTimesScalar.calls == calls
    assert g.cache_outcome == "hit"
    np.testing.assert_array_equal(g(np.array([1.0]), 2.0), [4.0])


def test_ops_without_a_version_are_not_memoised() -> None:
    class Unversioned(VectorTimesScalar):
        def c_code_cache_version(self):
            return ()

    x, a = dvector("x"), dscalar("a")
    for op, memoised in [(Unversioned(), False), (VectorTimesScalar(), True)]:
        fgraph = opweave.graph.fg.FunctionGraph([x, a], [op(x, a)])
        assert _graph_memo.versioned(fgraph.toposort()) == memoised
        f = opweave.function([x, a], op(x, a))
        held = any(graph.library == f.library for graph, _, _ in CONTEXT.graphs.values())
        assert held == memoised


def test_graphs_that_differ_only_in_an_unread_input_or_a_constant_output_differ() -> None:
    from opweave.graph.basic import Constant
    from opweave.tensor import TensorType

    x, a = dvector("x"), dscalar("a")
    out = VectorTimesScalar()(x, a)
    keys = set()
    for unread in (TensorType("int16", (None,))("u"), TensorType("int32", (None,))("u")):
        fgraph = opweave.graph.fg.FunctionGraph([x, a, unread], [out])
        keys.add(_graph_memo.graph_key(fgraph, fgraph.toposort(), set(), None, False).key)
    for value in (1.0, 2.0):
        constant = Constant(TensorType("float64", ()), np.float64(value))
        fgraph = opweave.graph.fg.FunctionGraph([x, a], [out, constant])
        keys.add(_graph_memo.graph_key(fgraph, fgraph.toposort(), set(), None, False).key)
    assert None not in keys and len(keys) == 4


def test_a_large_constant_keys_the_memo_by_its_digest() -> None:
    """A model's data (a constant past 4 KiB) keys the memo by its SHA-256
    digest: equal data is found again without asking for code, and other
    data of the same shape is not served the first graph's module."""
    from opweave.tensor import constant

    data = np.arange(1000.0)  # 8000 bytes
    x = dvector("x")
    op = CountingTimesScalar()

    def graph(values: np.ndarray):
        a = dscalar("a")
        return [x, a], op(VectorTimesVector()(x, constant(values)), a)

    inputs, out = graph(data)
    f = opweave.function(inputs, out)
    calls = CountingTimesScalar.calls
    inputs, out = graph(data.copy())  # equal data, another array
    g = opweave.function(inputs, out)
    assert CountingTimesScalar.calls == calls and g.cache_outcome == "hit"
    other = data.copy()
    other[500] = -1.0
    inputs, out = graph(other)
    h = opweave.function(inputs, out)
    np.testing.assert_array_equal(h(np.ones(1000), 1.0), other)
    np.testing.assert_array_equal(g(np.ones(1000), 2.0), data * 2.0)
    np.testing.assert_array_equal(f(np.ones(1000), 3.0), data * 3.0)
