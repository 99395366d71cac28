"""The shape ops: :class:`Shape` (the whole shape, as an int64 vector) and
:class:`Shape_i` (one dimension's length, as an int64 0-d tensor), with the
registries that give them C code per type.

As for :mod:`opweave.compile.ops`, each type registers the C code to use
(:func:`register_shape_c_code`, :func:`register_shape_i_c_code`), a
``%``-format string over ``%(iname)s``, ``%(oname)s`` and ``%(fail)s``;
Shape_i's code may also use ``%(i)s``, the dimension asked for. Lookups use
the exact type class. This module registers the code of
:class:`~opweave.tensor.type.TensorType` when it is imported.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

from opweave.graph.basic import Apply, Variable, is_variable
from opweave.link.c._c_code_registry import (
    fill_code,
    find_entry,
    missing_code,
    registry_version,
    store_entry,
)
from opweave.link.c.op import COp
from opweave.tensor.basic import as_tensor_variable
from opweave.tensor.type import TensorType

__all__ = [
    "Shape",
    "Shape_i",
    "register_shape_c_code",
    "register_shape_i_c_code",
    "shape",
    "shape_i",
]


def register_shape_c_code(type: type, code: str, version: tuple[Any, ...] = ()) -> None:
    """Gives :class:`Shape` the C code ``code`` for variables whose type is
    exactly of the class ``type``. The code must set ``%(oname)s`` to an
    int64 vector of the input's dimensions. ``version`` is the code's cache
    version; ``()`` means unversioned."""
    store_entry(Shape.c_code_and_version, type, (code, version))


def register_shape_i_c_code(
    typ: type, code: str, check_input: str, version: tuple[Any, ...] = ()
) -> None:
    """Gives :class:`Shape_i` the C code ``check_input + code`` for variables
    whose type is exactly of the class ``typ``. ``check_input`` must fail
    (with a Python exception set) when the input has no dimension ``%(i)s``;
    ``code`` sets ``%(oname)s`` to that dimension's length as an int64 0-d
    array. ``version`` is the code's cache version; ``()`` means unversioned."""
    store_entry(Shape_i.c_code_and_version, typ, (code, check_input, version))


def _as_variable(x: Any) -> Variable:
    return x if is_variable(x) else as_tensor_variable(x)


def _static_ndim(x: Variable) -> int | None:
    ndim = getattr(x.type, "ndim", None)
    return ndim if isinstance(ndim, int) else None


class Shape(COp):
    """The shape of its input, as an int64 vector (static length: the
    input's number of dimensions, when its type knows it). Works on any
    variable whose values have a ``shape``; in C, on types registered with
    :func:`register_shape_c_code`."""

    __props__ = ()
    _f16_ok = True
    check_input = False
    c_code_and_version: ClassVar[dict[type, tuple[str, tuple[Any, ...]]]] = {}

    def make_node(self, x: Any) -> Apply:
        """An apply on ``x`` (a variable, or a value made a tensor constant)."""
        x = _as_variable(x)
        ndim = _static_ndim(x)
        return Apply(self, [x], [TensorType("int64", shape=(ndim,))()])

    def perform(self, node: Apply, inputs: Sequence[Any], output_storage: list[list[Any]]) -> None:
        """``np.asarray(x.shape, dtype="int64")``."""
        output_storage[0][0] = np.asarray(inputs[0].shape, dtype="int64")

    def python_constant_folding(self, node: Apply) -> bool:
        """True: folding this op on constants needs no compiled module."""
        return True

    def c_code(
        self, node: Apply, name: str, inputs: list[str], outputs: list[str], sub: dict[str, str]
    ) -> str:
        """The registered code for exactly the input's type class;
        NotImplementedError if there is none."""
        entry = find_entry(self.c_code_and_version, type(node.inputs[0].type), walk_mro=False)
        if entry is None:
            raise missing_code(self, node, "register_shape_c_code")
        values = {"iname": inputs[0], "oname": outputs[0], "fail": sub["fail"], "name": name}
        return fill_code(self, node, entry[0], values)

    def c_code_cache_version(self) -> tuple[Any, ...]:
        """The registered versions, sorted by type, plus a trailing ``1``;
        ``()`` (with a warning) if one of them is unversioned."""
        version = registry_version(self.c_code_and_version, "Shape")
        return (*version, 1) if version else ()


shape = Shape()
"""The :class:`Shape` op: ``shape(x)`` is the int64 vector of ``x``'s shape."""


@functools.cache
def _shape_i_params_type() -> Any:
    # Imported on first use: the params machinery is only needed to compile.
    from opweave.link.c.params_type import ParamsType
    from opweave.scalar.basic import int64

    return ParamsType(i=int64)


class Shape_i(COp):
    """The length of dimension ``i`` of its input, as an int64 0-d tensor.

    In C, ``i`` is passed as the node's params (a :class:`ParamsType` with
    one int64 field ``i``) rather than written into the code as a literal,
    so that every ``Shape_i`` on one type shares one compiled code."""

    __props__ = ("i",)
    _f16_ok = True
    check_input = False
    c_code_and_version: ClassVar[dict[type, tuple[str, str, tuple[Any, ...]]]] = {}

    def __init__(self, i: int) -> None:
        try:
            index = operator.index(i)
        except TypeError:
            raise TypeError(f"Shape_i needs an integer dimension, got {i!r}") from None
        if index < 0:
            raise ValueError(f"Shape_i needs a non-negative dimension, got {index}")
        self.i = int(index)

    @property
    def params_type(self) -> Any:
        """``ParamsType(i=int64)``: the C type of this op's params."""
        return _shape_i_params_type()

    def get_params(self, node: Apply) -> Any:
        """The params value holding ``i``."""
        return self.params_type.get_params(self)

    def make_node(self, x: Any) -> Apply:
        """An apply on ``x`` (a variable, or a value made a tensor constant).
        Raises IndexError when ``x``'s type knows its number of dimensions
        and dimension ``i`` does not exist."""
        x = _as_variable(x)
        ndim = _static_ndim(x)
        if ndim is not None and self.i >= ndim:
            raise IndexError(
                f"{self}: {x} of type {x.type} has {ndim} dimension(s), so it has no "
                f"dimension {self.i}"
            )
        return Apply(self, [x], [TensorType("int64", shape=())()])

    def perform(self, node: Apply, inputs: Sequence[Any], output_storage: list[list[Any]]) -> None:
        """``np.asarray(x.shape[i], dtype="int64")``; IndexError if ``x`` has
        no dimension ``i``."""
        dims = inputs[0].shape
        if self.i >= len(dims):
            raise IndexError(
                f"{self}: the input has {len(dims)} dimension(s), no dimension {self.i}"
            )
        output_storage[0][0] = np.asarray(dims[self.i], dtype="int64")

    def python_constant_folding(self, node: Apply) -> bool:
        """True: folding this op on constants needs no compiled module."""
        return True

    def c_code(
        self, node: Apply, name: str, inputs: list[str], outputs: list[str], sub: dict[str, str]
    ) -> str:
        """The registered ``check_input + code`` for exactly the input's
        type class, with ``%(i)s`` reading ``i`` from the node's params.
        NotImplementedError if the type has no code, or if the linker gives
        no params (``sub["params"]``)."""
        entry = find_entry(self.c_code_and_version, type(node.inputs[0].type), walk_mro=False)
        if entry is None:
            raise missing_code(self, node, "register_shape_i_c_code")
        if "params" not in sub:
            raise NotImplementedError(f"{self}: the C linker passed no params (sub['params'])")
        code, check_input, _ = entry
        values = {
            "iname": inputs[0],
            "oname": outputs[0],
            "fail": sub["fail"],
            "name": name,
            "i": f"{sub['params']}->i",
        }
        return fill_code(self, node, check_input + code, values)

    def c_code_cache_version(self) -> tuple[Any, ...]:
        """The registered versions, sorted by type, plus a trailing ``2``;
        ``()`` (with a warning) if one of them is unversioned."""
        version = registry_version(self.c_code_and_version, "Shape_i")
        return (*version, 2) if version else ()


# --- C code of TensorType -----------------------------------------------------

# Shape and Shape_i turn off input checks, so their tensor code tests that
# the input is an array before reading it: a NULL or non-array input (another
# op's bug) is a TypeError rather than a crash. An existing output is reused
# only when this code's variable holds the only reference to it.
_TENSOR_IS_ARRAY = """
if (%(iname)s == NULL || !PyArray_Check((PyObject*)%(iname)s)) {
    PyErr_SetString(PyExc_TypeError, "expected an ndarray input");
    %(fail)s
}
"""

_TENSOR_SHAPE = (
    _TENSOR_IS_ARRAY
    + """
{
    npy_intp opw_ndim = PyArray_NDIM(%(iname)s);
    if (%(oname)s == NULL || Py_REFCNT(%(oname)s) != 1
            || PyArray_DIMS(%(oname)s)[0] != opw_ndim) {
        Py_XDECREF(%(oname)s);
        %(oname)s = (PyArrayObject*)PyArray_EMPTY(1, &opw_ndim, NPY_INT64, 0);
        if (%(oname)s == NULL) {
            %(fail)s
        }
    }
    npy_int64* opw_out = (npy_int64*)PyArray_DATA(%(oname)s);
    for (npy_intp opw_k = 0; opw_k < opw_ndim; ++opw_k) {
        opw_out[opw_k] = (npy_int64)PyArray_DIMS(%(iname)s)[opw_k];
    }
}
"""
)

_TENSOR_SHAPE_I_CHECK = (
    _TENSOR_IS_ARRAY
    + """
if ((npy_int64)(%(i)s) >= (npy_int64)PyArray_NDIM(%(iname)s)) {
    PyErr_Format(PyExc_IndexError,
                 "Shape_i: dimension %%lld asked of an input with %%d dimension(s)",
                 (long long)(%(i)s), PyArray_NDIM(%(iname)s));
    %(fail)s
}
"""
)


def shape_i(var: Any, i: int) -> Variable:
    """The length of dimension ``i`` of ``var``: ``Shape_i(i)(var)``, an
    int64 0-d tensor (a constant if the static shape knows it)."""
    variable = _as_variable(var)
    static = getattr(variable.type, "shape", None)
    if static is not None and 0 <= i < len(static) and static[i] is not None:
        return as_tensor_variable(np.int64(static[i]))
    return Shape_i(i)(variable)


_TENSOR_SHAPE_I = """
{
    if (%(oname)s == NULL || Py_REFCNT(%(oname)s) != 1) {
        Py_XDECREF(%(oname)s);
        %(oname)s = (PyArrayObject*)PyArray_EMPTY(0, NULL, NPY_INT64, 0);
        if (%(oname)s == NULL) {
            %(fail)s
        }
    }
    *(npy_int64*)PyArray_DATA(%(oname)s) = (npy_int64)PyArray_DIMS(%(iname)s)[%(i)s];
}
"""

register_shape_c_code(TensorType, _TENSOR_SHAPE, version=(1,))
register_shape_i_c_code(TensorType, _TENSOR_SHAPE_I, _TENSOR_SHAPE_I_CHECK, version=(1,))
