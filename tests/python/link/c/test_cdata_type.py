"""CDataType: C pointers that cross the graph boundary as capsules."""

from __future__ import annotations

import gc
import sys

import numpy as np
import pytest

from opweave.compile.function import function
from opweave.graph.basic import Apply
from opweave.link.c.op import COp
from opweave.link.c.type import CDataType
from opweave.tensor import dvector
from opweave.tensor.type import TensorType

_DECREF = """
static void release_object(void* p) {
    Py_XDECREF((PyObject*)p);
}
"""
handle = CDataType("void *", "release_object")


class Wrap(COp):
    """Keeps a new reference to the input array as a raw pointer (and
    releases the one its output held, as an op does with an array)."""

    __props__ = ()

    def make_node(self, x):
        return Apply(self, [x], [handle()])

    def c_support_code(self, **kwargs):
        return _DECREF

    def c_code(self, node, name, inp, out, sub):
        (x,), (z,) = inp, out
        return f"release_object({z});\n{z} = (void*){x};\nPy_INCREF({x});\n"


class Unwrap(COp):
    """The array a handle points to, times two."""

    __props__ = ()

    def make_node(self, h):
        return Apply(self, [h], [TensorType("float64", shape=(None,))()])

    def c_support_code(self, **kwargs):
        return _DECREF

    def c_code(self, node, name, inp, out, sub):
        (h,), (z,) = inp, out
        return f"""
        Py_XDECREF({z});
        {z} = (PyArrayObject*)PyNumber_Add((PyObject*){h}, (PyObject*){h});
        if (!{z}) {{ {sub["fail"]} }}
        """


def test_a_pointer_passed_between_nodes_is_freed_with_the_function() -> None:
    x = dvector("x")
    f = function([x], Unwrap()(Wrap()(x)))
    v = np.arange(3.0)
    before = sys.getrefcount(v)
    for _ in range(5):
        np.testing.assert_array_equal(f(v), [0.0, 2.0, 4.0])
    # An intermediate result keeps its value between calls, as in PyTensor.
    assert sys.getrefcount(v) == before + 1
    del f
    gc.collect()
    assert sys.getrefcount(v) == before  # freefunc ran when the function died


def test_an_output_pointer_leaves_as_a_capsule_that_owns_it() -> None:
    x = dvector("x")
    wrap = function([x], Wrap()(x))
    h = handle()
    unwrap = function([h], Unwrap()(h))
    v = np.arange(2.0)
    before = sys.getrefcount(v)
    capsule = wrap(v)
    assert type(capsule).__name__ == "PyCapsule"
    assert sys.getrefcount(v) == before + 1  # the capsule owns one reference
    np.testing.assert_array_equal(unwrap(capsule), [0.0, 2.0])  # borrowed, not freed
    assert sys.getrefcount(v) == before + 1
    del capsule
    gc.collect()
    assert sys.getrefcount(v) == before  # the capsule's destructor called freefunc


def test_filter_accepts_capsules_and_none_only() -> None:
    with pytest.raises(TypeError, match="capsule"):
        handle.filter(3)
    assert handle.filter(None) is None
    h = handle()
    f = function([h], Unwrap()(h))
    with pytest.raises(TypeError, match="capsule"):
        f(np.arange(2.0))


def test_equality_covers_every_setting() -> None:
    assert CDataType("void *", "release_object") == handle
    assert hash(CDataType("void *", "release_object")) == hash(handle)
    assert CDataType("void *") != handle
    assert CDataType("void *", "release_object", version=2) != handle
    with pytest.raises(ValueError, match="function name"):
        CDataType("void *", "free(x)")
