"""Scalar types (:class:`ScalarType`, ``float64``, ``int8``, ...) and
:func:`upcast`, NumPy's dtype promotion."""

from __future__ import annotations

from opweave.scalar.basic import (
    ScalarConstant,
    ScalarType,
    ScalarVariable,
    all_types,
    complex64,
    complex128,
    complex_dtypes,
    continuous_dtypes,
    discrete_dtypes,
    float16,
    float32,
    float64,
    float_dtypes,
    get_scalar_type,
    int8,
    int16,
    int32,
    int64,
    integer_dtypes,
    uint8,
    uint16,
    uint32,
    uint64,
    upcast,
)
from opweave.scalar.basic import (
    bool as bool,
)

# ``bool`` is importable (opweave.scalar.bool) but left out of __all__, so
# that ``from opweave.scalar import *`` does not shadow the builtin.
__all__ = [
    "ScalarConstant",
    "ScalarType",
    "ScalarVariable",
    "all_types",
    "complex64",
    "complex128",
    "complex_dtypes",
    "continuous_dtypes",
    "discrete_dtypes",
    "float16",
    "float32",
    "float64",
    "float_dtypes",
    "get_scalar_type",
    "int8",
    "int16",
    "int32",
    "int64",
    "integer_dtypes",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "upcast",
]
