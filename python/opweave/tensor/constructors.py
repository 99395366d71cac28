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

from collections.abc import Callable, Sequence
from typing import Any

from opweave.configparser import config
from opweave.scalar.dtypes import normalize_dtype
from opweave.tensor.type import TensorType
from opweave.tensor.variable import TensorVariable

__all__ = [
    "bcol",
    "bcols",
    "bmatrices",
    "bmatrix",
    "brow",
    "brows",
    "bscalar",
    "bscalars",
    "btensor3",
    "btensor3s",
    "btensor4",
    "btensor4s",
    "bvector",
    "bvectors",
    "ccol",
    "ccols",
    "cmatrices",
    "cmatrix",
    "col",
    "cols",
    "crow",
    "crows",
    "cscalar",
    "cscalars",
    "ctensor3",
    "ctensor3s",
    "ctensor4",
    "ctensor4s",
    "cvector",
    "cvectors",
    "dcol",
    "dcols",
    "dmatrices",
    "dmatrix",
    "drow",
    "drows",
    "dscalar",
    "dscalars",
    "dtensor3",
    "dtensor3s",
    "dtensor4",
    "dtensor4s",
    "dvector",
    "dvectors",
    "fcol",
    "fcols",
    "fmatrices",
    "fmatrix",
    "frow",
    "frows",
    "fscalar",
    "fscalars",
    "ftensor3",
    "ftensor3s",
    "ftensor4",
    "ftensor4s",
    "fvector",
    "fvectors",
    "icol",
    "icols",
    "imatrices",
    "imatrix",
    "irow",
    "irows",
    "iscalar",
    "iscalars",
    "itensor3",
    "itensor3s",
    "itensor4",
    "itensor4s",
    "ivector",
    "ivectors",
    "lcol",
    "lcols",
    "lmatrices",
    "lmatrix",
    "lrow",
    "lrows",
    "lscalar",
    "lscalars",
    "ltensor3",
    "ltensor3s",
    "ltensor4",
    "ltensor4s",
    "lvector",
    "lvectors",
    "matrices",
    "matrix",
    "row",
    "rows",
    "scalar",
    "scalars",
    "tensor",
    "tensor3",
    "tensor3s",
    "tensor4",
    "tensor4s",
    "vector",
    "vectors",
    "wcol",
    "wcols",
    "wmatrices",
    "wmatrix",
    "wrow",
    "wrows",
    "wscalar",
    "wscalars",
    "wtensor3",
    "wtensor3s",
    "wtensor4",
    "wtensor4s",
    "wvector",
    "wvectors",
    "zcol",
    "zcols",
    "zmatrices",
    "zmatrix",
    "zrow",
    "zrows",
    "zscalar",
    "zscalars",
    "ztensor3",
    "ztensor3s",
    "ztensor4",
    "ztensor4s",
    "zvector",
    "zvectors",
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


def _plural(make: Callable[..., TensorVariable], plural_name: str) -> Callable[..., Any]:
    """PyTensor's plural constructor of ``make`` (``dvectors``, ``matrices``,
    ...): ``f(3)`` makes three unnamed variables; ``f("x", "y")`` a list of
    named ones; ``f("x")`` one variable; ``f("xyz")`` one per letter."""

    def many(*names: str | int) -> TensorVariable | list[TensorVariable]:
        if names and isinstance(names[0], int):
            if len(names) != 1:
                raise TypeError(f"{plural_name}(n) takes one count")
            return [make() for _ in range(names[0])]
        given: Sequence[str] = names[0] if len(names) == 1 else names  # type: ignore[assignment]
        for name in given:
            if not isinstance(name, str):
                raise TypeError(f"{plural_name}: names must be strings, got {name!r}")
        if len(given) == 1:
            return make(given[0])
        return [make(name) for name in given]

    many.__name__ = many.__qualname__ = plural_name
    return many


scalars = _plural(scalar, "scalars")
vectors = _plural(vector, "vectors")
matrices = _plural(matrix, "matrices")
rows = _plural(row, "rows")
cols = _plural(col, "cols")
tensor3s = _plural(tensor3, "tensor3s")
tensor4s = _plural(tensor4, "tensor4s")
bscalars = _plural(bscalar, "bscalars")
wscalars = _plural(wscalar, "wscalars")
iscalars = _plural(iscalar, "iscalars")
lscalars = _plural(lscalar, "lscalars")
fscalars = _plural(fscalar, "fscalars")
dscalars = _plural(dscalar, "dscalars")
cscalars = _plural(cscalar, "cscalars")
zscalars = _plural(zscalar, "zscalars")
bvectors = _plural(bvector, "bvectors")
wvectors = _plural(wvector, "wvectors")
ivectors = _plural(ivector, "ivectors")
lvectors = _plural(lvector, "lvectors")
fvectors = _plural(fvector, "fvectors")
dvectors = _plural(dvector, "dvectors")
cvectors = _plural(cvector, "cvectors")
zvectors = _plural(zvector, "zvectors")
bmatrices = _plural(bmatrix, "bmatrices")
wmatrices = _plural(wmatrix, "wmatrices")
imatrices = _plural(imatrix, "imatrices")
lmatrices = _plural(lmatrix, "lmatrices")
fmatrices = _plural(fmatrix, "fmatrices")
dmatrices = _plural(dmatrix, "dmatrices")
cmatrices = _plural(cmatrix, "cmatrices")
zmatrices = _plural(zmatrix, "zmatrices")
brows = _plural(brow, "brows")
wrows = _plural(wrow, "wrows")
irows = _plural(irow, "irows")
lrows = _plural(lrow, "lrows")
frows = _plural(frow, "frows")
drows = _plural(drow, "drows")
crows = _plural(crow, "crows")
zrows = _plural(zrow, "zrows")
bcols = _plural(bcol, "bcols")
wcols = _plural(wcol, "wcols")
icols = _plural(icol, "icols")
lcols = _plural(lcol, "lcols")
fcols = _plural(fcol, "fcols")
dcols = _plural(dcol, "dcols")
ccols = _plural(ccol, "ccols")
zcols = _plural(zcol, "zcols")
btensor3s = _plural(btensor3, "btensor3s")
wtensor3s = _plural(wtensor3, "wtensor3s")
itensor3s = _plural(itensor3, "itensor3s")
ltensor3s = _plural(ltensor3, "ltensor3s")
ftensor3s = _plural(ftensor3, "ftensor3s")
dtensor3s = _plural(dtensor3, "dtensor3s")
ctensor3s = _plural(ctensor3, "ctensor3s")
ztensor3s = _plural(ztensor3, "ztensor3s")
btensor4s = _plural(btensor4, "btensor4s")
wtensor4s = _plural(wtensor4, "wtensor4s")
itensor4s = _plural(itensor4, "itensor4s")
ltensor4s = _plural(ltensor4, "ltensor4s")
ftensor4s = _plural(ftensor4, "ftensor4s")
dtensor4s = _plural(dtensor4, "dtensor4s")
ctensor4s = _plural(ctensor4, "ctensor4s")
ztensor4s = _plural(ztensor4, "ztensor4s")
