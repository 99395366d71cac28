"""Turning Python and NumPy values into tensor variables:
:func:`as_tensor_variable` and :func:`constant`."""

from __future__ import annotations

from typing import Any

import numpy as np

from opweave.configparser import config
from opweave.graph.basic import Apply, is_variable
from opweave.scalar.dtypes import cast_downcast, normalize_dtype
from opweave.tensor.type import TensorType
from opweave.tensor.variable import TensorConstant, TensorVariable

__all__ = ["as_tensor_variable", "constant"]


def as_tensor_variable(
    x: Any, name: str | None = None, ndim: int | None = None, dtype: Any = None
) -> TensorVariable:
    """``x`` as a tensor variable: a tensor variable passes through (its
    ndim and dtype must match those given, if any), the output of a
    single-output Apply node is taken, and a Python or NumPy value becomes a
    :func:`constant`. Any other Variable raises TypeError."""
    if isinstance(x, Apply):
        if len(x.outputs) != 1:
            raise TypeError(f"cannot convert {x}, which has {len(x.outputs)} outputs, to a tensor")
        x = x.outputs[0]
    if is_variable(x):
        if not isinstance(x.type, TensorType):
            raise TypeError(f"cannot convert {x} of type {x.type} to a tensor variable")
        if ndim is not None and x.type.ndim != ndim:
            raise ValueError(f"{x} has {x.type.ndim} dimensions, expected {ndim}")
        if dtype is not None and x.type.dtype != normalize_dtype(dtype):
            raise TypeError(f"{x} has dtype {x.type.dtype}, expected {normalize_dtype(dtype)}")
        return x
    return constant(x, name=name, ndim=ndim, dtype=dtype)


def constant(
    x: Any, name: str | None = None, ndim: int | None = None, dtype: Any = None
) -> TensorConstant:
    """A tensor constant holding ``x``, with a static shape equal to its
    shape. Without ``dtype``: a Python float becomes ``config.floatX``, a
    Python int int64, anything else keeps NumPy's dtype. With ``dtype`` the
    value is cast (as NumPy casts). ``ndim`` adds leading dimensions of
    length 1, or removes leading ones of length 1."""
    if is_variable(x):
        raise TypeError(f"constant() expects a value, got the variable {x}")
    if dtype is not None:
        array = cast_downcast(x, np.dtype(normalize_dtype(dtype)))
    elif type(x) is float:
        array = np.asarray(x, dtype=config.floatX)
    elif type(x) is int:
        try:
            array = np.asarray(x, dtype=np.int64)
        except OverflowError:
            raise TypeError(f"the Python int {x} does not fit an int64 constant") from None
    else:
        try:
            array = np.asarray(x)
        except (TypeError, ValueError) as error:
            raise TypeError(f"cannot make a tensor constant of {x!r}: {error}") from None
        normalize_dtype(array.dtype)  # TypeError for strings, objects, float128, ...
    if ndim is not None:
        array = _with_ndim(array, ndim)
    tensor_type = TensorType(array.dtype, shape=array.shape)
    return TensorConstant(tensor_type, array, name=name)


def _with_ndim(array: np.ndarray, ndim: int) -> np.ndarray:
    if array.ndim < ndim:
        return array.reshape((1,) * (ndim - array.ndim) + array.shape)
    extra = array.ndim - ndim
    if extra and any(length != 1 for length in array.shape[:extra]):
        raise ValueError(
            f"cannot make a {ndim}-d constant of a value of shape {array.shape}: "
            "only leading dimensions of length 1 can be dropped"
        )
    return array.reshape(array.shape[extra:])
