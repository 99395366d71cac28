"""Making tensor variables: :func:`tensor`, :func:`scalar`, :func:`vector`,
:func:`matrix`, :func:`row`, :func:`col`, :func:`tensor3`, :func:`tensor4`,
and the typed shortcuts (``dscalar``, ``fvector``, ``imatrix``, ...).

The shortcuts are :class:`TensorType` instances, as in PyTensor: call one to
make a variable (``dvector("x")``) or use it as a type (``itypes=[dmatrix]``).
Their prefixes name the dtype: b int8, w int16, i int32, l int64, f float32,
d float64, c complex64, z complex128. ``scalar`` and ``dscalar`` are 0-d
tensors (``PyArrayObject*`` in C), not :class:`~opweave.scalar.ScalarType`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from opweave.configparser import config
from opweave.scalar.dtypes import normalize_dtype
from opweave.tensor.type import TensorType
from opweave.tensor.variable import TensorVariable

__all__ = [
    "bcol",
    "bmatrix",
    "brow",
    "bscalar",
    "btensor3",
    "btensor4",
    "bvector",
    "ccol",
    "cmatrix",
    "col",
    "crow",
    "cscalar",
    "ctensor3",
    "ctensor4",
    "cvector",
    "dcol",
    "dmatrix",
    "drow",
    "dscalar",
    "dtensor3",
    "dtensor4",
    "dvector",
    "fcol",
    "fmatrix",
    "frow",
    "fscalar",
    "ftensor3",
    "ftensor4",
    "fvector",
    "icol",
    "imatrix",
    "irow",
    "iscalar",
    "itensor3",
    "itensor4",
    "ivector",
    "lcol",
    "lmatrix",
    "lrow",
    "lscalar",
    "ltensor3",
    "ltensor4",
    "lvector",
    "matrix",
    "row",
    "scalar",
    "tensor",
    "tensor3",
    "tensor4",
    "vector",
    "wcol",
    "wmatrix",
    "wrow",
    "wscalar",
    "wtensor3",
    "wtensor4",
    "wvector",
    "zcol",
    "zmatrix",
    "zrow",
    "zscalar",
    "ztensor3",
    "ztensor4",
    "zvector",
]

ShapeArg = Sequence[int | bool | None] | None


def tensor(
    *args: Any,
    dtype: Any = None,
    shape: ShapeArg = None,
    name: str | None = None,
    broadcastable: Sequence[bool] | None = None,
) -> TensorVariable:
    """A new tensor variable: ``tensor(dtype=None, shape=None, name=None,
    broadcastable=None)``; ``dtype`` defaults to ``config.floatX``.

    PyTensor's spelling ``tensor("x", dtype=..., shape=...)``, whose only
    positional argument is the name, is accepted too: a first positional
    string is the name when ``dtype`` is also given or when it names no
    dtype."""
    pytensor_style = len(args) == 1 and isinstance(args[0], str)
    if pytensor_style and (dtype is not None or not _is_dtype(args[0])):
        if name is not None:
            raise TypeError("tensor() got multiple values for argument 'name'")
        name, args = args[0], ()
    if len(args) > 4:
        raise TypeError(f"tensor() takes at most 4 positional arguments ({len(args)} given)")
    given = {"dtype": dtype, "shape": shape, "name": name, "broadcastable": broadcastable}
    for key, value in zip(("dtype", "shape", "name", "broadcastable"), args, strict=False):
        if given[key] is not None:
            raise TypeError(f"tensor() got multiple values for argument {key!r}")
        given[key] = value
    tensor_type = TensorType(
        _dtype_or_floatx(given["dtype"]),
        shape=given["shape"],
        broadcastable=given["broadcastable"],
    )
    return tensor_type(given["name"])


def scalar(name: str | None = None, dtype: Any = None) -> TensorVariable:
    """A new 0-d tensor variable (``dtype`` defaults to ``config.floatX``)."""
    return TensorType(_dtype_or_floatx(dtype), shape=())(name)


def vector(name: str | None = None, dtype: Any = None, *, shape: ShapeArg = None) -> TensorVariable:
    """A new 1-d tensor variable; ``shape`` defaults to ``(None,)``."""
    return _make(name, dtype, shape, (None,))


def matrix(name: str | None = None, dtype: Any = None, *, shape: ShapeArg = None) -> TensorVariable:
    """A new 2-d tensor variable; ``shape`` defaults to ``(None, None)``."""
    return _make(name, dtype, shape, (None, None))


def row(name: str | None = None, dtype: Any = None, *, shape: ShapeArg = None) -> TensorVariable:
    """A new 2-d tensor variable of one row: ``shape=(1, None)``."""
    return _make(name, dtype, shape, (1, None))


def col(name: str | None = None, dtype: Any = None, *, shape: ShapeArg = None) -> TensorVariable:
    """A new 2-d tensor variable of one column: ``shape=(None, 1)``."""
    return _make(name, dtype, shape, (None, 1))


def tensor3(
    name: str | None = None, dtype: Any = None, *, shape: ShapeArg = None
) -> TensorVariable:
    """A new 3-d tensor variable; ``shape`` defaults to all None."""
    return _make(name, dtype, shape, (None, None, None))


def tensor4(
    name: str | None = None, dtype: Any = None, *, shape: ShapeArg = None
) -> TensorVariable:
    """A new 4-d tensor variable; ``shape`` defaults to all None."""
    return _make(name, dtype, shape, (None, None, None, None))


def _make(
    name: str | None, dtype: Any, shape: ShapeArg, default: tuple[int | None, ...]
) -> TensorVariable:
    if shape is None:
        shape = default
    elif len(shape) != len(default):
        raise ValueError(f"expected a shape of length {len(default)}, got {tuple(shape)}")
    return TensorType(_dtype_or_floatx(dtype), shape=shape)(name)


def _dtype_or_floatx(dtype: Any) -> str:
    return str(config.floatX) if dtype is None else normalize_dtype(dtype)


def _is_dtype(text: str) -> bool:
    try:
        normalize_dtype(text)
    except TypeError:
        return False
    return True


bscalar = TensorType("int8", shape=())
wscalar = TensorType("int16", shape=())
iscalar = TensorType("int32", shape=())
lscalar = TensorType("int64", shape=())
fscalar = TensorType("float32", shape=())
dscalar = TensorType("float64", shape=())
cscalar = TensorType("complex64", shape=())
zscalar = TensorType("complex128", shape=())

bvector = TensorType("int8", shape=(None,))
wvector = TensorType("int16", shape=(None,))
ivector = TensorType("int32", shape=(None,))
lvector = TensorType("int64", shape=(None,))
fvector = TensorType("float32", shape=(None,))
dvector = TensorType("float64", shape=(None,))
cvector = TensorType("complex64", shape=(None,))
zvector = TensorType("complex128", shape=(None,))

bmatrix = TensorType("int8", shape=(None, None))
wmatrix = TensorType("int16", shape=(None, None))
imatrix = TensorType("int32", shape=(None, None))
lmatrix = TensorType("int64", shape=(None, None))
fmatrix = TensorType("float32", shape=(None, None))
dmatrix = TensorType("float64", shape=(None, None))
cmatrix = TensorType("complex64", shape=(None, None))
zmatrix = TensorType("complex128", shape=(None, None))

brow = TensorType("int8", shape=(1, None))
wrow = TensorType("int16", shape=(1, None))
irow = TensorType("int32", shape=(1, None))
lrow = TensorType("int64", shape=(1, None))
frow = TensorType("float32", shape=(1, None))
drow = TensorType("float64", shape=(1, None))
crow = TensorType("complex64", shape=(1, None))
zrow = TensorType("complex128", shape=(1, None))

bcol = TensorType("int8", shape=(None, 1))
wcol = TensorType("int16", shape=(None, 1))
icol = TensorType("int32", shape=(None, 1))
lcol = TensorType("int64", shape=(None, 1))
fcol = TensorType("float32", shape=(None, 1))
dcol = TensorType("float64", shape=(None, 1))
ccol = TensorType("complex64", shape=(None, 1))
zcol = TensorType("complex128", shape=(None, 1))

btensor3 = TensorType("int8", shape=(None, None, None))
wtensor3 = TensorType("int16", shape=(None, None, None))
itensor3 = TensorType("int32", shape=(None, None, None))
ltensor3 = TensorType("int64", shape=(None, None, None))
ftensor3 = TensorType("float32", shape=(None, None, None))
dtensor3 = TensorType("float64", shape=(None, None, None))
ctensor3 = TensorType("complex64", shape=(None, None, None))
ztensor3 = TensorType("complex128", shape=(None, None, None))

btensor4 = TensorType("int8", shape=(None, None, None, None))
wtensor4 = TensorType("int16", shape=(None, None, None, None))
itensor4 = TensorType("int32", shape=(None, None, None, None))
ltensor4 = TensorType("int64", shape=(None, None, None, None))
ftensor4 = TensorType("float32", shape=(None, None, None, None))
dtensor4 = TensorType("float64", shape=(None, None, None, None))
ctensor4 = TensorType("complex64", shape=(None, None, None, None))
ztensor4 = TensorType("complex128", shape=(None, None, None, None))
