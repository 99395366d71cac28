"""The tensor type, :class:`TensorType`: NumPy arrays of one dtype and number
of dimensions, optionally with static lengths. In C a tensor is a
``PyArrayObject*`` (its C code is in :mod:`opweave.tensor._type_c_code`).

The typed shortcuts (``dvector``, ``fmatrix``, ...) are TensorType instances,
as in PyTensor, so ``itypes = [dvector]`` works in an Op.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from opweave.configparser import config
from opweave.graph.basic import Variable, is_variable
from opweave.link.c.type import CType
from opweave.scalar.basic import upcast
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
from opweave.tensor import _type_c_code
from opweave.tensor.variable import TensorConstant, TensorVariable

__all__ = [
    "TensorType",
    "all_dtypes",
    "complex_dtypes",
    "continuous_dtypes",
    "discrete_dtypes",
    "float_dtypes",
    "int_dtypes",
    "integer_dtypes",
    "uint_dtypes",
]

# PyTensor's groups of dtype names (lists of strings).
all_dtypes: list[str] = list(ALL_DTYPES)
int_dtypes: list[str] = [d for d in INTEGER_DTYPES if not d.startswith("uint")]
uint_dtypes: list[str] = [d for d in INTEGER_DTYPES if d.startswith("uint")]
integer_dtypes: list[str] = int_dtypes + uint_dtypes
discrete_dtypes: list[str] = list(DISCRETE_DTYPES)
float_dtypes: list[str] = list(FLOAT_DTYPES)
complex_dtypes: list[str] = list(COMPLEX_DTYPES)
continuous_dtypes: list[str] = float_dtypes + complex_dtypes

StaticShape = tuple[int | None, ...]


class TensorType(CType):
    """Arrays of ``dtype`` with ``len(shape)`` dimensions.

    ``shape`` holds, per dimension, None (any length) or a static length
    (PyTensor code mostly uses 1, a "broadcastable" dimension). The older
    spelling ``broadcastable=[False, True]`` means ``shape=(None, 1)``; bools
    inside ``shape`` are read the same way. ``dtype`` may be a name,
    ``"floatX"`` or an ``np.dtype``. Types are equal when dtype and shape are;
    ``name`` only changes how the type prints.
    """

    variable_type = TensorVariable
    constant_type = TensorConstant

    if TYPE_CHECKING:
        # Type's methods, which make variables of variable_type.
        def make_variable(self, name: str | None = None) -> TensorVariable: ...
        def __call__(self, name: str | None = None) -> TensorVariable: ...

    def __init__(
        self,
        dtype: Any,
        shape: Sequence[int | bool | None] | None = None,
        name: str | None = None,
        broadcastable: Sequence[bool] | None = None,
    ) -> None:
        if shape is not None and broadcastable is not None:
            raise ValueError("give TensorType either shape= or broadcastable=, not both")
        if shape is None and broadcastable is None:
            raise TypeError(
                "TensorType needs shape= (a tuple of None or lengths, () for a scalar) "
                "or broadcastable="
            )
        self.dtype: str = normalize_dtype(dtype)
        self.shape: StaticShape = _static_shape(shape if shape is not None else broadcastable)
        self.name = name
        self.numpy_dtype = np.dtype(self.dtype)
        self._info = dtype_info(self.dtype)

    @property
    def ndim(self) -> int:
        """The number of dimensions."""
        return len(self.shape)

    @property
    def broadcastable(self) -> tuple[bool, ...]:
        """Per dimension, True when its static length is 1."""
        return tuple(length == 1 for length in self.shape)

    def clone(
        self, dtype: Any = None, shape: Sequence[int | bool | None] | None = None, **kwargs: Any
    ) -> TensorType:
        """A type like this one with another dtype and/or shape."""
        if "broadcastable" in kwargs:
            shape = kwargs.pop("broadcastable")
        if kwargs:
            raise TypeError(f"unexpected arguments: {', '.join(kwargs)}")
        return type(self)(
            self.dtype if dtype is None else dtype,
            self.shape if shape is None else shape,
            name=self.name,
        )

    # --- values ----------------------------------------------------------------

    def filter(self, data: Any, strict: bool = False, allow_downcast: bool | None = None) -> Any:
        """``data`` as an ndarray of this type, or TypeError.

        ``strict``: ``data`` must already be an aligned, native-order ndarray
        of exactly this dtype and number of dimensions. Otherwise an ndarray
        of this dtype is kept; other values are converted when
        ``allow_downcast`` is true, when the conversion is an upcast, when
        ``data`` is a Python float and the dtype is ``config.floatX`` (and
        ``allow_downcast`` is None), or when it changes no value. Then the
        number of dimensions and the static lengths must match; a misaligned
        or byte-swapped array is copied."""
        if strict:
            if not isinstance(data, np.ndarray):
                raise TypeError(
                    f"{self} (strict) expects a numpy.ndarray, got {type(data).__name__}"
                )
            if data.dtype != self.numpy_dtype:
                raise TypeError(f"{self} (strict) expects dtype {self.dtype}, got {data.dtype}")
        elif not (isinstance(data, np.ndarray) and data.dtype == self.numpy_dtype):
            data = self._convert(data, allow_downcast)
        if data.ndim != self.ndim:
            raise TypeError(
                f"Wrong number of dimensions: expected {self.ndim}, got {data.ndim} with "
                f"shape {data.shape} (for {self})."
            )
        if self.shape.count(None) != len(self.shape) and any(
            s is not None and s != d for s, d in zip(self.shape, data.shape, strict=True)
        ):
            raise TypeError(
                f"{self}: static shape {_shape_text(self.shape)} does not match the "
                f"value's shape {data.shape}"
            )
        if not (data.flags.aligned and data.dtype.isnative):
            if strict:
                raise TypeError(f"{self} (strict) expects an aligned array in native byte order")
            data = np.array(data, dtype=self.numpy_dtype)
        return data

    def _convert(self, data: Any, allow_downcast: bool | None) -> np.ndarray:
        ours = self.numpy_dtype
        if allow_downcast:
            return cast_downcast(data, ours)
        if isinstance(data, np.ndarray):
            # An array's dtype says what it may hold: only an upcast is safe,
            # whatever the values happen to be (as in PyTensor).
            if _upcasts_to(data.dtype, self.dtype):
                return data.astype(ours)
            raise self._precision_error(data.dtype)
        if type(data) is float and allow_downcast is None and self.dtype == config.floatX:
            return np.asarray(data, dtype=ours)
        converted = cast_exactly(data, ours)
        if converted is None:
            raise self._precision_error(np.asarray(data).dtype)
        return converted

    def _precision_error(self, theirs: Any) -> TypeError:
        return TypeError(
            f"{self} cannot store a value of dtype {theirs} without loss of precision. "
            f"Cast it first (numpy.asarray(value, dtype='{self.dtype}')), or allow the "
            "downcast: allow_input_downcast=True in opweave.function "
            "(allow_downcast=True in filter)."
        )

    def values_eq(self, a: Any, b: Any) -> bool:
        """True if ``a`` and ``b`` have the same shape, dtype and values (NaN
        equals NaN at the same position)."""
        a, b = np.asarray(a), np.asarray(b)
        if a.shape != b.shape or a.dtype != b.dtype:
            return False
        return bool(np.array_equal(a, b, equal_nan=a.dtype.kind in "fc"))

    def values_eq_approx(self, a: Any, b: Any) -> bool:
        """True if ``a`` and ``b`` have the same shape and values up to the
        rounding of the less precise of their dtypes (NaN equals NaN and
        infinities must match)."""
        a, b = np.asarray(a), np.asarray(b)
        if a.shape != b.shape:
            return False
        kinds = {a.dtype.kind, b.dtype.kind}
        if not kinds & {"f", "c"}:
            return bool(np.array_equal(a, b))
        rtol, atol = max(tolerance(a.dtype), tolerance(b.dtype))
        return bool(np.allclose(a, b, rtol=rtol, atol=atol, equal_nan=True))

    def value_zeros(self, shape: Sequence[int]) -> np.ndarray:
        """An array of zeros of this dtype and the given shape."""
        return np.zeros(shape, dtype=self.numpy_dtype)

    def dtype_specs(self) -> tuple[type, str, str]:
        """``(NumPy scalar class, C element type, type number macro)``."""
        return (self.numpy_dtype.type, self._info.c_type, self._info.typenum)

    # --- relations between types ---------------------------------------------

    def is_super(self, other: Any) -> bool:
        """True if every value of ``other`` is a value of this type (same
        dtype and ndim, and this type's static lengths are also ``other``'s)."""
        return (
            isinstance(other, TensorType)
            and other.dtype == self.dtype
            and other.ndim == self.ndim
            and all(s is None or s == o for s, o in zip(self.shape, other.shape, strict=True))
        )

    def convert_variable(self, var: Variable) -> Variable | None:
        """``var`` if it can stand where this type is expected, else None."""
        return var if self.is_super(var.type) else None

    def filter_variable(self, other: Any, allow_convert: bool = True) -> Variable:
        """``other`` as a variable usable as this type: a constant for a plain
        value; a variable whose type is this one or more specific."""
        if not is_variable(other):
            return self.make_constant(other)
        if other.type == self or (allow_convert and self.convert_variable(other) is not None):
            return other
        raise TypeError(f"cannot use a variable of type {other.type} where {self} is expected")

    def __eq__(self, other: object) -> bool:
        return (
            type(self) is type(other)
            and self.dtype == other.dtype  # type: ignore[attr-defined]
            and self.shape == other.shape  # type: ignore[attr-defined]
        )

    def __hash__(self) -> int:
        return hash((type(self), self.dtype, self.shape))

    def __str__(self) -> str:
        if self.name:
            return self.name
        return f"TensorType({self.dtype}, shape={_shape_text(self.shape)})"

    def __repr__(self) -> str:
        return str(self)

    # --- C side (the code is written in _type_c_code) --------------------------

    def c_headers(self, **kwargs: Any) -> list[str]:
        """NumPy's array header."""
        return ["<numpy/arrayobject.h>"]

    def c_init_code(self, **kwargs: Any) -> list[str]:
        """Initialises NumPy's C API in the module."""
        return ["import_array();"]

    def c_element_type(self) -> str:
        """The C type of one element, e.g. ``npy_float64``."""
        return self._info.c_type

    def c_declare(self, name: str, sub: dict[str, str], check_input: bool = True) -> str:
        """``PyArrayObject* <name>;`` and, when checking, ``dtype_<name>``."""
        return _type_c_code.declare(name, self._info, check_input)

    def c_init(self, name: str, sub: dict[str, str]) -> str:
        """``<name> = NULL;``"""
        return f"{name} = NULL;\n"

    def c_extract(
        self, name: str, sub: dict[str, str], check_input: bool = True, **kwargs: Any
    ) -> str:
        """Takes ``py_<name>`` as ``<name>`` (a new reference). When checking,
        a None, non-array, wrong ndim, wrong dtype, misaligned or byte-swapped
        value, or a wrong static length, raises TypeError; static lengths are
        not checked when ``check_broadcast=False`` is passed."""
        static = self.shape if kwargs.get("check_broadcast", True) else ()
        return _type_c_code.extract(name, sub["fail"], self._info, self.ndim, static, check_input)

    def c_sync(self, name: str, sub: dict[str, str]) -> str:
        """Points ``py_<name>`` at ``<name>`` (None when NULL), after checking
        that an op produced the right dtype, ndim and static lengths."""
        return _type_c_code.sync(name, sub["fail"], self._info, self.ndim, self.shape, str(self))

    def c_cleanup(self, name: str, sub: dict[str, str]) -> str:
        """Releases ``<name>``."""
        return f"Py_XDECREF({name});\n{name} = NULL;\n"

    def c_literal(self, data: Any) -> None:
        """None: arrays have no C literal."""
        return None

    def c_code_cache_version(self) -> tuple[int, ...]:
        """The version of this type's C code."""
        return (1,)


def _static_shape(shape: Any) -> StaticShape:
    if isinstance(shape, (str, bytes)) or not isinstance(shape, Sequence):
        raise TypeError(f"TensorType shape must be a tuple of None or int, got {shape!r}")
    result: list[int | None] = []
    for length in shape:
        if length is None:
            result.append(None)
        elif isinstance(length, (bool, np.bool_)):
            result.append(1 if length else None)
        elif isinstance(length, (int, np.integer)) and length >= 0:
            result.append(int(length))
        else:
            raise ValueError(
                f"TensorType shape entries must be None or non-negative ints, got {shape!r}"
            )
    return tuple(result)


def _shape_text(shape: StaticShape) -> str:
    return "(" + ", ".join(str(s) for s in shape) + ("," if len(shape) == 1 else "") + ")"


def _upcasts_to(theirs: np.dtype, ours: str) -> bool:
    if theirs.kind not in "biufc":
        return False
    try:
        return upcast(ours, theirs) == ours
    except TypeError:  # a dtype opweave does not support, e.g. float128
        return False


def __getattr__(name: str) -> Any:
    # PyTensor defines the constructors (vector, dmatrix, ...) in
    # pytensor.tensor.type; here they live in opweave.tensor.constructors,
    # which imports this module, so they are looked up on first use.
    from opweave.tensor import constructors

    if name in constructors.__all__:
        return getattr(constructors, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
