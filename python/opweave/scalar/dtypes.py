"""The dtypes opweave types support, their C names, and value conversion.

One table maps each dtype name to its C spellings (``npy_float64``,
``NPY_FLOAT64``, the NumPy scalar type object ``PyFloat64ArrType_Type``).
:func:`normalize_dtype` turns what users pass (``"floatX"``, ``np.float32``,
``np.dtype("int8")``) into a name of that table, and :func:`cast_exactly` /
:func:`cast_downcast` convert values, refusing or accepting a loss of
precision. Both :mod:`opweave.scalar` and :mod:`opweave.tensor` use them.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from opweave._namedtuple import NamedTuple
from opweave.configparser import config

__all__ = [
    "ALL_DTYPES",
    "COMPLEX_DTYPES",
    "DISCRETE_DTYPES",
    "FLOAT_DTYPES",
    "INTEGER_DTYPES",
    "DTypeInfo",
    "cast_downcast",
    "cast_exactly",
    "dtype_info",
    "normalize_dtype",
    "tolerance",
]


class DTypeInfo(NamedTuple):
    """The C spellings of one dtype: element type (``npy_float64``), type
    number macro (``NPY_FLOAT64``) and NumPy scalar type object
    (``PyFloat64ArrType_Type``)."""

    name: str
    c_type: str
    typenum: str
    scalar_type_object: str


def _info(name: str, scalar_type_object: str) -> DTypeInfo:
    return DTypeInfo(name, f"npy_{name}", f"NPY_{name.upper()}", scalar_type_object)


_TABLE: dict[str, DTypeInfo] = {
    info.name: info
    for info in (
        _info("bool", "PyBoolArrType_Type"),
        _info("int8", "PyInt8ArrType_Type"),
        _info("int16", "PyInt16ArrType_Type"),
        _info("int32", "PyInt32ArrType_Type"),
        _info("int64", "PyInt64ArrType_Type"),
        _info("uint8", "PyUInt8ArrType_Type"),
        _info("uint16", "PyUInt16ArrType_Type"),
        _info("uint32", "PyUInt32ArrType_Type"),
        _info("uint64", "PyUInt64ArrType_Type"),
        # NumPy has no sized alias for the half-precision scalar type object.
        _info("float16", "PyHalfArrType_Type"),
        _info("float32", "PyFloat32ArrType_Type"),
        _info("float64", "PyFloat64ArrType_Type"),
        _info("complex64", "PyComplex64ArrType_Type"),
        _info("complex128", "PyComplex128ArrType_Type"),
    )
}

ALL_DTYPES: tuple[str, ...] = tuple(_TABLE)
"""Every supported dtype name."""
INTEGER_DTYPES: tuple[str, ...] = tuple(n for n in ALL_DTYPES if "int" in n)
"""Signed and unsigned integer dtypes."""
DISCRETE_DTYPES: tuple[str, ...] = ("bool", *INTEGER_DTYPES)
"""bool and the integer dtypes."""
FLOAT_DTYPES: tuple[str, ...] = ("float16", "float32", "float64")
"""Real floating-point dtypes."""
COMPLEX_DTYPES: tuple[str, ...] = ("complex64", "complex128")
"""Complex dtypes."""

_NUMERIC_KINDS = frozenset("biufc")


def normalize_dtype(dtype: Any) -> str:
    """The name of a supported dtype: accepts a name, ``"floatX"`` (read from
    ``config.floatX``), an ``np.dtype`` or a scalar type such as ``np.int8``.
    Raises TypeError, listing the valid names, for anything else."""
    if isinstance(dtype, str):
        if dtype in _TABLE:
            return dtype
        if dtype == "floatX":
            return str(config.floatX)
    try:
        name = np.dtype(dtype).name
    except (TypeError, ValueError):
        name = None
    if name not in _TABLE:
        raise TypeError(f"unsupported dtype {dtype!r}; valid dtypes: {', '.join(ALL_DTYPES)}")
    return name


def dtype_info(dtype: Any) -> DTypeInfo:
    """The C spellings of ``dtype`` (see :func:`normalize_dtype`)."""
    return _TABLE[normalize_dtype(dtype)]


def tolerance(dtype: Any) -> tuple[float, float]:
    """``(rtol, atol)`` for comparing values computed in ``dtype``; a less
    precise dtype gives larger (looser) values, an exact one ``(0, 0)``."""
    name = np.dtype(dtype).name
    if name == "float16":
        return 5e-3, 1e-3
    if name in ("float32", "complex64"):
        return 1e-4, 1e-6
    if name in ("float64", "complex128"):
        return 1e-5, 1e-8
    return 0.0, 0.0


def cast_exactly(value: Any, dtype: np.dtype) -> np.ndarray | None:
    """``value`` as an array of ``dtype`` if the conversion changes no element
    (NaN stays NaN), else None. Raises TypeError for values that are not
    numbers (None, strings, ragged lists)."""
    array = _numeric_array(value, dtype)
    if array.dtype == dtype:
        return array
    if array.dtype.kind == "c" and dtype.kind != "c":
        if np.any(array.imag != 0):
            return None
        array = array.real
    with np.errstate(all="ignore"):
        try:
            converted = array.astype(dtype)
            # Compare both ways: the round trip catches values that compare
            # equal after promotion (2**53 + 1 against a float64), the direct
            # comparison catches wrapped values (uint64 2**64 - 1 to int64 -1).
            if dtype.kind == "c" and array.dtype.kind != "c":
                back = converted.real.astype(array.dtype)
            else:
                back = converted.astype(array.dtype)
            same = np.asarray((back == array) & (converted == array), dtype=bool)
        except (TypeError, ValueError, OverflowError):
            return None
        if array.dtype.kind in "fc" and dtype.kind in "fc":
            same = same | (np.isnan(array) & np.isnan(converted))
    return converted if bool(np.all(same)) else None


def cast_downcast(value: Any, dtype: np.dtype) -> np.ndarray:
    """``value`` as an array of ``dtype``, accepting a loss of precision
    (out-of-range integers wrap, NaN becomes an arbitrary integer). Raises
    TypeError for values that are not numbers."""
    array = _numeric_array(value, dtype)
    with np.errstate(all="ignore"):
        try:
            return array.astype(dtype, copy=False)
        except (TypeError, ValueError, OverflowError) as error:
            raise TypeError(f"cannot convert {value!r} to {dtype.name}: {error}") from None


def _numeric_array(value: Any, dtype: np.dtype) -> np.ndarray:
    """``np.asarray(value)``, or TypeError if that is not an array of numbers."""
    if value is None:
        raise TypeError(f"expected a number or an array of {dtype.name}, got None")
    try:
        array = np.asarray(value)
    except (TypeError, ValueError, OverflowError) as error:
        raise TypeError(f"cannot convert {value!r} to an array of {dtype.name}: {error}") from None
    if array.dtype.kind not in _NUMERIC_KINDS and array.dtype.kind != "O":
        raise TypeError(
            f"expected a number or an array of {dtype.name}, got "
            f"{type(value).__name__} of dtype {array.dtype}"
        )
    return array
