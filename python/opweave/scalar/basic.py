"""Scalar types: :class:`ScalarType` (a C primitive ``npy_<dtype>``), its
variables and constants, the module-level instances (``float64``, ``int8``,
...) and :func:`upcast`.

This module defines ``bool`` as a ScalarType (as PyTensor does), so the code
below spells the builtin ``builtins.bool``.
"""

from __future__ import annotations

import builtins
import functools
import math
from typing import Any

import numpy as np

from opweave.configparser import config
from opweave.graph.basic import Constant, Variable, is_variable
from opweave.link.c.type import CType
from opweave.scalar.dtypes import (
    ALL_DTYPES,
    COMPLEX_DTYPES,
    DISCRETE_DTYPES,
    FLOAT_DTYPES,
    INTEGER_DTYPES,
    cast_downcast,
    cast_exactly,
    dtype_info,
    normalize_dtype,
    tolerance,
)

__all__ = [
    "ScalarConstant",
    "ScalarType",
    "ScalarVariable",
    "all_types",
    "as_scalar",
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

# PyTensor's names for the dtype groups.
discrete_dtypes = DISCRETE_DTYPES
integer_dtypes = INTEGER_DTYPES
float_dtypes = FLOAT_DTYPES
complex_dtypes = COMPLEX_DTYPES
continuous_dtypes = FLOAT_DTYPES + COMPLEX_DTYPES


def upcast(dtype: Any, *dtypes: Any) -> str:
    """The dtype NumPy gives an operation on 0-d arrays of all these dtypes,
    e.g. ``upcast("int8", "float32") == "float32"`` and
    ``upcast("int64", "float32") == "float64"``. Accepts names (including
    ``"floatX"``) and ``np.dtype`` objects."""
    return _upcast(tuple(normalize_dtype(d) for d in (dtype, *dtypes)))


@functools.lru_cache(maxsize=1024)
def _upcast(names: tuple[str, ...]) -> str:
    return np.result_type(*(np.zeros((), dtype=name) for name in names)).name


class ScalarVariable(Variable):
    """A variable of a :class:`ScalarType`."""

    type: ScalarType

    @property
    def dtype(self) -> str:
        """The dtype name of the type."""
        return self.type.dtype


class ScalarConstant(ScalarVariable, Constant):
    """A constant of a :class:`ScalarType`; ``data`` is a NumPy scalar. It
    compares by identity, like every graph node; use :meth:`signature` to
    compare values."""

    def __init__(self, type: ScalarType, data: Any, name: str | None = None) -> None:
        Constant.__init__(self, type, data, name)

    @property
    def value(self) -> Any:
        """The constant's value (``data``)."""
        return self.data


class ScalarType(CType):
    """A scalar of one NumPy dtype. In C it is a plain ``npy_<dtype>`` value;
    in Python a NumPy scalar (``np.float64(1.0)``)."""

    variable_type = ScalarVariable
    constant_type = ScalarConstant
    ndim = 0

    def __init__(self, dtype: Any) -> None:
        self.dtype = normalize_dtype(dtype)
        self.numpy_dtype = np.dtype(self.dtype)
        self._info = dtype_info(self.dtype)

    # --- Python side ----------------------------------------------------------

    def filter(
        self, data: Any, strict: builtins.bool = False, allow_downcast: builtins.bool | None = None
    ) -> Any:
        """``data`` as a NumPy scalar of this dtype.

        ``strict``: ``data`` must already be one (TypeError otherwise).
        Otherwise Python and NumPy numbers and 0-d arrays are converted;
        a conversion that changes the value (1.5 to int64, 300 to int8) raises
        TypeError unless ``allow_downcast`` is true. A Python float is
        accepted as is when this dtype is ``config.floatX`` and
        ``allow_downcast`` is None."""
        scalar_class = self.numpy_dtype.type
        if isinstance(data, scalar_class):
            return data
        if strict:
            raise TypeError(
                f"{self} (strict) expects a numpy.{self.dtype} scalar, got "
                f"{type(data).__name__} ({data!r})"
            )
        if isinstance(data, np.ndarray) and data.ndim != 0:
            raise TypeError(f"{self} expects a scalar, got an array of shape {data.shape}")
        converted: np.ndarray | None
        if allow_downcast:
            converted = cast_downcast(data, self.numpy_dtype)
        elif type(data) is float and allow_downcast is None and self.dtype == config.floatX:
            converted = np.asarray(data, dtype=self.numpy_dtype)
        else:
            converted = cast_exactly(data, self.numpy_dtype)
            if converted is None:
                raise TypeError(
                    f"{self} cannot store {data!r} ({type(data).__name__}) without loss of "
                    f"precision; cast it first (numpy.{self.dtype}(value)) or allow the "
                    "downcast (allow_input_downcast=True in opweave.function)"
                )
        if converted.ndim != 0:
            raise TypeError(f"{self} expects a scalar, got a value of shape {converted.shape}")
        if converted.dtype.type is not scalar_class:
            # An equal dtype with another type number (NumPy makes 2**64 - 1
            # an unsigned long long): give the scalar class C code checks for.
            converted = converted.view(self.numpy_dtype)
        return converted[()]

    def values_eq(self, a: Any, b: Any) -> builtins.bool:
        """True if ``a`` and ``b`` are the same value (NaN equals NaN)."""
        return builtins.bool(np.array_equal(a, b, equal_nan=self.dtype not in DISCRETE_DTYPES))

    def values_eq_approx(self, a: Any, b: Any) -> builtins.bool:
        """True if ``a`` and ``b`` are equal up to this dtype's rounding."""
        if self.dtype in DISCRETE_DTYPES:
            return self.values_eq(a, b)
        rtol, atol = tolerance(self.dtype)
        return builtins.bool(np.allclose(a, b, rtol=rtol, atol=atol, equal_nan=True))

    def dtype_specs(self) -> tuple[type, str, str]:
        """``(NumPy scalar class, C element type, type number macro)``."""
        return (self.numpy_dtype.type, self._info.c_type, self._info.typenum)

    def __eq__(self, other: object) -> builtins.bool:
        return type(self) is type(other) and self.dtype == other.dtype  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash((type(self), self.dtype))

    def __str__(self) -> str:
        return self.dtype

    def __repr__(self) -> str:
        return f"ScalarType({self.dtype})"

    # --- C side ---------------------------------------------------------------

    def c_headers(self, **kwargs: Any) -> list[str]:
        """NumPy's array and scalar headers (in that order), and math.h for
        NAN and INFINITY."""
        return ["<numpy/arrayobject.h>", "<numpy/arrayscalars.h>", "<math.h>"]

    def c_init_code(self, **kwargs: Any) -> list[str]:
        """Initialises NumPy's C API in the module."""
        return ["import_array();"]

    def c_element_type(self) -> str:
        """The C type of the value, e.g. ``npy_float64``."""
        return self._info.c_type

    def c_declare(self, name: str, sub: dict[str, str], check_input: builtins.bool = True) -> str:
        """``npy_<dtype> <name>;`` and, when checking, ``dtype_<name>``."""
        c_type = self._info.c_type
        typedef = f"typedef {c_type} dtype_{name};\n" if check_input else ""
        return f"{c_type} {name};\n{typedef}"

    def c_init(self, name: str, sub: dict[str, str]) -> str:
        """Sets ``<name>`` to zero (both parts for complex dtypes)."""
        if self.dtype in COMPLEX_DTYPES:
            return f"memset(&{name}, 0, sizeof({name}));\n"
        return f"{name} = 0;\n"

    def c_extract(
        self, name: str, sub: dict[str, str], check_input: builtins.bool = True, **kwargs: Any
    ) -> str:
        """Reads ``py_<name>``, which must be a NumPy scalar of exactly this
        dtype when checking (TypeError otherwise)."""
        check = ""
        if check_input:
            check = (
                f"if (!PyObject_TypeCheck(py_{name}, &{self._info.scalar_type_object})) {{\n"
                f"    PyErr_Format(PyExc_TypeError, "
                f'"expected a numpy.{self.dtype} scalar, got %s", Py_TYPE(py_{name})->tp_name);\n'
                f"    {sub['fail']}\n"
                "}\n"
            )
        return f"{check}PyArray_ScalarAsCtype(py_{name}, &{name});\n"

    def c_sync(self, name: str, sub: dict[str, str]) -> str:
        """Replaces ``py_<name>`` by a new NumPy scalar holding ``<name>``."""
        return (
            "{\n"
            f"    PyArray_Descr* descr_{name} = PyArray_DescrFromType({self._info.typenum});\n"
            f"    Py_XDECREF(py_{name});\n"
            f"    py_{name} = descr_{name} ? PyArray_Scalar(&{name}, descr_{name}, NULL) : NULL;\n"
            f"    Py_XDECREF(descr_{name});\n"
            f"    if (!py_{name}) {{\n"
            "        Py_INCREF(Py_None);\n"
            f"        py_{name} = Py_None;\n"
            f"        {sub['fail']}\n"
            "    }\n"
            "}\n"
        )

    def c_cleanup(self, name: str, sub: dict[str, str]) -> str:
        """Nothing: a C scalar owns no resource."""
        return ""

    def c_literal(self, data: Any) -> str | None:
        """A C expression of type ``npy_<dtype>`` equal to ``data``, or None
        for complex dtypes. float16 literals are ``npy_half`` bit patterns."""
        if self.dtype in COMPLEX_DTYPES:
            return None
        value = self.filter(data)
        c_type = self._info.c_type
        if self.dtype == "bool":
            return f"(({c_type}){int(value)})"
        if self.dtype in INTEGER_DTYPES:
            return f"(({c_type}){_integer_literal(int(value), self.dtype)})"
        if self.dtype == "float16":
            bits = int(np.asarray(value, dtype=np.float16).view(np.uint16))
            return f"(({c_type})0x{bits:04x})"
        number = float(value)
        if math.isnan(number):
            return f"(({c_type})NAN)"
        if math.isinf(number):
            return f"(({c_type}){'-' if number < 0 else ''}INFINITY)"
        return f"(({c_type}){number!r})"

    def c_code_cache_version(self) -> tuple[int, ...]:
        """The version of this type's C code."""
        return (1,)


def _integer_literal(value: int, dtype: str) -> str:
    if dtype.startswith("u"):
        return f"{value}ULL"
    if value == -(2**63):
        # 9223372036854775808LL does not fit a long long, so negating it is not valid C.
        return "(-9223372036854775807LL - 1)"
    return f"{value}LL"


_shared_types: dict[str, ScalarType] = {}


def get_scalar_type(dtype: Any) -> ScalarType:
    """The shared ScalarType of ``dtype`` (e.g. ``get_scalar_type("int8") is int8``)."""
    name = normalize_dtype(dtype)
    shared = _shared_types.get(name)
    if shared is None:
        shared = _shared_types[name] = ScalarType(name)
    return shared


def as_scalar(x: Any, name: str | None = None) -> ScalarVariable:
    """``x`` as a scalar variable: a variable of a :class:`ScalarType` as it
    is, a Python or NumPy number as a constant of its NumPy dtype (``3`` is
    int64, ``2.5`` float64). Raises TypeError for anything else, including a
    0-d tensor variable (opweave has no op turning a tensor into a scalar)."""
    if is_variable(x):
        if isinstance(x.type, ScalarType):
            return x  # type: ignore[return-value]
        raise TypeError(f"as_scalar: {x} has type {x.type}, not a ScalarType")
    value = np.asarray(x)
    if value.ndim != 0 or value.dtype.kind not in "biufc":
        raise TypeError(f"as_scalar: cannot make a scalar of {x!r}")
    return get_scalar_type(value.dtype).make_constant(value[()], name=name)  # type: ignore[return-value]


bool = get_scalar_type("bool")  # PyTensor's name; shadows the builtin in this module
int8 = get_scalar_type("int8")
int16 = get_scalar_type("int16")
int32 = get_scalar_type("int32")
int64 = get_scalar_type("int64")
uint8 = get_scalar_type("uint8")
uint16 = get_scalar_type("uint16")
uint32 = get_scalar_type("uint32")
uint64 = get_scalar_type("uint64")
float16 = get_scalar_type("float16")
float32 = get_scalar_type("float32")
float64 = get_scalar_type("float64")
complex64 = get_scalar_type("complex64")
complex128 = get_scalar_type("complex128")

all_types: tuple[ScalarType, ...] = tuple(get_scalar_type(name) for name in ALL_DTYPES)
"""Every ScalarType instance, one per supported dtype."""
