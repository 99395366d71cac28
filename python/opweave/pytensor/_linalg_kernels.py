# mypy: disable-error-code="import-not-found"
"""``Cholesky``, ``SolveTriangular`` and ``CholeskySolve`` in C: LAPACK's
``potrf``, ``trtrs`` and ``potrs`` through SciPy's ``cython_lapack``, in the
shared kernel library (``native/kernels.cpp``); ``MatrixInverse``, ``Det``
and ``SLogDet``: NumPy's own linear-algebra gufuncs, called from C as
``np.linalg.inv``, ``det`` and ``slogdet`` call them (``inv`` in the error
state it sets, so a singular matrix raises its ``LinAlgError``).

Each does what the op's ``perform`` does, step by step: the same routine of
the same precision (the one ``scipy.linalg.get_lapack_funcs`` picks), on
the same Fortran-ordered copy or, where ``perform`` lets LAPACK overwrite
its input, on the input itself; the same transposed system where
``perform`` transposes; NaNs where LAPACK reports a failure; the same
``ValueError`` messages. So values are bitwise ``perform``'s. Declines (the
node runs ``perform``): props other than the ones written for, complex
dtypes, a precision SciPy would not pick for the output's dtype.
"""

from __future__ import annotations

from typing import Any

from opweave.pytensor._library_kernel import LibraryKernel, lapack_dtype

__all__ = [
    "CholeskyKernel",
    "NumpyLinalgKernel",
    "SolveKernel",
    "cholesky_kernel",
    "numpy_linalg_kernel",
    "solve_kernel",
]


def _type_num(dtype: str) -> str:
    return "NPY_" + dtype.upper()


class CholeskyKernel(LibraryKernel):
    """``Cholesky.perform`` as LAPACK's ``potrf``, in C."""

    def c_code(self, node: Any, name: str, inputs: Any, outputs: Any, sub: Any) -> str:
        """One call of the library's ``cholesky``."""
        (x,), (z,) = inputs, outputs
        lower, overwrite = int(bool(self.op.lower)), int(bool(self.op.overwrite_a))
        type_num = _type_num(node.outputs[0].type.dtype)
        return (
            f"if (opweave_kernels_import()->cholesky({x}, {lower}, {overwrite}, {type_num}, "
            f"&{z}) != 0) {{\n    {sub['fail']}\n}}\n"
        )


def cholesky_kernel(node: Any) -> CholeskyKernel | None:
    """A CholeskyKernel for ``node``, or None outside what it was written for."""
    if tuple(getattr(type(node.op), "__props__", ())) != ("lower", "overwrite_a"):
        return None
    (x,) = node.inputs
    if x.type.ndim != 2 or lapack_dtype("potrf", (x.type.dtype,)) != node.outputs[0].type.dtype:
        return None
    return CholeskyKernel(node.op)


class SolveKernel(LibraryKernel):
    """``SolveTriangular.perform`` (``trtrs``) or ``CholeskySolve.perform``
    (``potrs``), in C."""

    def c_code(self, node: Any, name: str, inputs: Any, outputs: Any, sub: Any) -> str:
        """One call of the library's ``solve_triangular`` or ``cho_solve``."""
        (a, b), (z,) = inputs, outputs
        op = self.op
        lower, overwrite = int(bool(op.lower)), int(bool(op.overwrite_b))
        type_num = _type_num(node.outputs[0].type.dtype)
        if hasattr(op, "unit_diagonal"):
            unit = int(bool(op.unit_diagonal))
            call = f"solve_triangular({a}, {b}, {lower}, {unit}, {overwrite}, {type_num}, &{z})"
        else:
            call = f"cho_solve({a}, {b}, {lower}, {overwrite}, {type_num}, &{z})"
        return f"if (opweave_kernels_import()->{call} != 0) {{\n    {sub['fail']}\n}}\n"


_SOLVERS = {
    ("unit_diagonal", "lower", "b_ndim", "overwrite_b"): "trtrs",
    ("lower", "b_ndim", "overwrite_b"): "potrs",
}


def solve_kernel(node: Any) -> SolveKernel | None:
    """A SolveKernel for a ``SolveTriangular`` or ``CholeskySolve`` node, or
    None outside what it was written for."""
    routine = _SOLVERS.get(tuple(getattr(type(node.op), "__props__", ())))
    if routine is None:
        return None
    a, b = node.inputs
    if a.type.ndim != 2 or b.type.ndim != node.op.b_ndim or b.type.ndim not in (1, 2):
        return None
    if lapack_dtype(routine, (a.type.dtype, b.type.dtype)) != node.outputs[0].type.dtype:
        return None
    return SolveKernel(node.op)


class NumpyLinalgKernel(LibraryKernel):
    """``MatrixInverse``, ``Det`` or ``SLogDet`` (``function``: "inverse",
    "det" or "slogdet") as their ``perform`` computes them, in C."""

    __props__ = ("op", "function")

    def __init__(self, op: Any, function: str) -> None:
        super().__init__(op)
        self.function = function

    def c_code(self, node: Any, name: str, inputs: Any, outputs: Any, sub: Any) -> str:
        """One call of the library's ``matrix_inverse``, ``det`` or ``slogdet``."""
        (x,) = inputs
        type_num = _type_num(node.outputs[0].type.dtype)
        if self.function == "slogdet":
            sign, logdet = outputs
            call = f"slogdet({x}, {type_num}, &{sign}, &{logdet})"
        else:
            function = "matrix_inverse" if self.function == "inverse" else "det"
            call = f"{function}({x}, {type_num}, &{outputs[0]})"
        return f"if (opweave_kernels_import()->{call} != 0) {{\n    {sub['fail']}\n}}\n"


_NUMPY_LINALG = {"MatrixInverse": "inverse", "Det": "det", "SLogDet": "slogdet"}
_REAL_INPUTS = (
    "float32",
    "float64",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "bool",
)


def numpy_linalg_kernel(node: Any) -> NumpyLinalgKernel | None:
    """A NumpyLinalgKernel for a ``MatrixInverse``, ``Det`` or ``SLogDet``
    node of a real matrix, or None outside what it was written for."""
    function = _NUMPY_LINALG.get(type(node.op).__name__)
    if function is None or tuple(getattr(type(node.op), "__props__", ())) != ():
        return None
    (x,) = node.inputs
    if x.type.ndim != 2 or x.type.dtype not in _REAL_INPUTS:
        return None
    # np.linalg computes in double and casts to single for float32 input.
    expected = "float32" if x.type.dtype == "float32" else "float64"
    if any(out.type.dtype != expected for out in node.outputs):
        return None
    return NumpyLinalgKernel(node.op, function)
