# mypy: disable-error-code="import-not-found"
# (PyTensor is optional: opweave[pytensor]; without it, its modules are Any.)
"""opweave's C code for PyTensor ops that have none (or whose C code needs
what a pip-installed PyTensor lacks), registered with
:mod:`opweave.link.c.kernels`: only opweave's linkers use it. The op keeps
its class, ``perform`` and gradient, so ``"CVM"``, ``"C"`` and PyTensor's
rewrites are unchanged.

Each kernel computes what the op's ``perform`` computes, with the same
NumPy routines in the same order, so values are bitwise equal; it declines
(the node runs ``perform``) outside the dtypes and props it was written
for.

- ``Gemv`` (``beta * y + alpha * dot(A, x)``, which PyTensor's rewrites
  leave without C code when it has no ``blas__ldflags``): ``perform``'s own
  arithmetic through NumPy's C API (``np.dot``, then the scaling and the
  sum as NumPy's operators do them). In PyTensor 3.3 ``perform`` takes
  that path for every dtype: its SciPy BLAS branch tests ``y.dtype in
  {"float32", ...}``, which a NumPy dtype never is.
- ``Dot22`` without BLAS flags: NumPy's ``PyArray_MatrixProduct2``, which is
  ``np.dot``.

Ops that have C code can be given faster code the same way, with the C back
end's values, bitwise (each in its own module): ``Elemwise`` (a flat loop
for contiguous operands, a loop over rows for operands broadcast along whole
axes), ``DimShuffle``, ``Subtensor`` and ``Split`` (views kept from one call
to the next), ``x[idx]`` of vectors (a gather), ``Join`` of vectors
(copies), ``IncSubtensor`` of vectors (a loop) and ``CumOp`` of vectors (a
loop), and reductions over some axes (PyTensor's loop order on pointers).
``Sum`` of a whole float64 array is NumPy's pairwise sum (bitwise equal to
``perform`` and ``np.sum``, not to PyTensor's in-order C loop).

Ops without C code in PyTensor get kernels whose node-independent code is
one shared library (:mod:`._kernel_library`): ``Cholesky``,
``SolveTriangular``, ``CholeskySolve``, ``MatrixInverse``, ``Det``,
``SLogDet`` (:mod:`._linalg_kernels`), the advanced indexing PyTensor's C
declines (:mod:`._advanced_kernels`) and ``Blockwise`` of ops with C code
(:mod:`._blockwise_kernel`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from opweave._logs import get_logger
from opweave.link.c.kernels import register_kernel
from opweave.pytensor._kernel_base import Kernel

__all__ = ["Dot22Kernel", "GemvKernel", "register_all"]

_log = get_logger(__name__)


# perform's arithmetic, through NumPy's C API: np.dot(A, x), then
# "out *= alpha" when alpha != 1, "out += beta * y" (or "+= y") when beta != 0,
# then np.asarray(out, dtype=y.dtype). %(...)s: the node's names.
_GEMV = r"""
{
    const dtype_%(alpha)s alpha_in = ((dtype_%(alpha)s*)PyArray_DATA(%(alpha)s))[0];
    const dtype_%(beta)s beta_in = ((dtype_%(beta)s*)PyArray_DATA(%(beta)s))[0];
    PyObject* out = PyArray_MatrixProduct2((PyObject*)%(A)s, (PyObject*)%(x)s, NULL);
    if (out != NULL && alpha_in != 1) {
        PyObject* scaled = PyNumber_InPlaceMultiply(out, (PyObject*)%(alpha)s);
        Py_DECREF(out);
        out = scaled;
    }
    if (out != NULL && beta_in != 0) {
        PyObject* term = (PyObject*)%(y)s;
        if (beta_in != 1) {
            term = PyNumber_Multiply((PyObject*)%(beta)s, (PyObject*)%(y)s);
        } else {
            Py_INCREF(term);
        }
        PyObject* added = term == NULL ? NULL : PyNumber_InPlaceAdd(out, term);
        Py_XDECREF(term);
        Py_DECREF(out);
        out = added;
    }
    if (out == NULL) {
        %(fail)s
    }
    Py_XDECREF(%(z)s);
    %(z)s = (PyArrayObject*)PyArray_FromAny(
        out, PyArray_DescrFromType(%(type_num)s), 0, 0, 0, NULL);
    Py_DECREF(out);
    if (%(z)s == NULL) {
        %(fail)s
    }
}
"""

# Real dtypes whose C values compare as numbers (float16's C type is its
# bits: compared with 1 or 0 in C it would not be perform's test).
_REAL = ("float32", "float64", "int8", "int16", "int32", "int64", "uint8", "bool")


class GemvKernel(Kernel):
    """``Gemv`` as its ``perform`` computes it (real dtypes but float16)."""

    def c_code(self, node: Any, name: str, inputs: Any, outputs: Any, sub: Any) -> str:
        """``z = beta * y + alpha * dot(A, x)``, as ``Gemv.perform``."""
        y, alpha, A, x, beta = inputs
        type_num = "NPY_" + node.outputs[0].type.dtype.upper()
        names = {"y": y, "alpha": alpha, "A": A, "x": x, "beta": beta, "z": outputs[0]}
        return _GEMV % dict(names, fail=sub["fail"], type_num=type_num)


def gemv_kernel(node: Any) -> GemvKernel | None:
    """A GemvKernel for ``node``, or None outside its dtypes and props."""
    if tuple(getattr(type(node.op), "__props__", ())) != ("inplace",):
        return None
    if any(v.type.dtype not in _REAL for v in node.inputs):
        return None
    if [v.type.ndim for v in node.inputs] != [1, 0, 2, 1, 0]:
        return None
    return GemvKernel(node.op)


_DOT22 = r"""
Py_XDECREF(%(z)s);
%(z)s = (PyArrayObject*)PyArray_MatrixProduct2((PyObject*)%(x)s, (PyObject*)%(y)s, NULL);
if (%(z)s == NULL) {
    %(fail)s
}
"""


class Dot22Kernel(Kernel):
    """``Dot22`` as ``np.dot`` (NumPy's ``PyArray_MatrixProduct2``)."""

    def c_code(self, node: Any, name: str, inputs: Any, outputs: Any, sub: Any) -> str:
        """``z = np.dot(x, y)``, as ``Dot22.perform``."""
        x, y = inputs
        return _DOT22 % {"x": x, "y": y, "z": outputs[0], "fail": sub["fail"]}


def dot22_kernel(node: Any) -> Dot22Kernel | None:
    """A Dot22Kernel for ``node`` when PyTensor's own C code cannot run
    (no BLAS flags), else None (PyTensor's C code runs)."""
    if tuple(getattr(type(node.op), "__props__", ())) != ():
        return None
    try:
        has_blas = len(node.op.c_libraries()) > 0
    except Exception:  # an op whose libraries cannot be listed: its C is not ours to judge
        has_blas = True
    if has_blas:
        return None
    if [v.type.ndim for v in node.inputs] != [2, 2]:
        return None
    return Dot22Kernel(node.op)


def first_of(*providers: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """A provider giving the first kernel of ``providers`` for a node."""

    def provider(node: Any) -> Any:
        for each in providers:
            kernel = each(node)
            if kernel is not None:
                return kernel
        return None

    return provider


def register_all() -> None:
    """Registers opweave's kernels for the PyTensor ops this PyTensor has."""
    # They build on Kernel: imported here, after it is defined.
    from opweave.pytensor._advanced_kernels import advanced_inc_kernel, advanced_subtensor_kernel
    from opweave.pytensor._blockwise_kernel import blockwise_kernel
    from opweave.pytensor._careduce_kernel import careduce_kernel
    from opweave.pytensor._cumop_kernel import cumop_kernel
    from opweave.pytensor._dimshuffle_kernel import dimshuffle_kernel
    from opweave.pytensor._elemwise_kernel import elemwise_kernel
    from opweave.pytensor._inc_subtensor_kernel import inc_subtensor_kernel
    from opweave.pytensor._join_kernel import join_kernel
    from opweave.pytensor._linalg_kernels import (
        cholesky_kernel,
        numpy_linalg_kernel,
        solve_kernel,
    )
    from opweave.pytensor._split_kernel import split_kernel
    from opweave.pytensor._subtensor_kernel import subtensor_kernel
    from opweave.pytensor._sum_kernel import sum_kernel

    providers: list[tuple[str, str, Callable[[Any], Any]]] = [
        ("pytensor.tensor.blas.gemv", "Gemv", gemv_kernel),
        ("pytensor.tensor.blas.gemm", "Dot22", dot22_kernel),
        ("pytensor.tensor.elemwise", "Elemwise", elemwise_kernel),
        ("pytensor.tensor.elemwise", "DimShuffle", dimshuffle_kernel),
        ("pytensor.tensor.subtensor", "AdvancedSubtensor", advanced_subtensor_kernel),
        ("pytensor.tensor.subtensor", "AdvancedIncSubtensor", advanced_inc_kernel),
        ("pytensor.tensor.basic", "Join", join_kernel),
        ("pytensor.tensor.subtensor", "Subtensor", subtensor_kernel),
        ("pytensor.tensor.math", "Sum", first_of(sum_kernel, careduce_kernel)),
        ("pytensor.tensor.elemwise", "CAReduce", careduce_kernel),
        ("pytensor.tensor.math", "Prod", careduce_kernel),
        ("pytensor.tensor.math", "Max", careduce_kernel),
        ("pytensor.tensor.math", "Min", careduce_kernel),
        ("pytensor.tensor.math", "All", careduce_kernel),
        ("pytensor.tensor.math", "Any", careduce_kernel),
        ("pytensor.tensor.subtensor", "IncSubtensor", inc_subtensor_kernel),
        ("pytensor.tensor.basic", "Split", split_kernel),
        ("pytensor.tensor.linalg.decomposition.cholesky", "Cholesky", cholesky_kernel),
        ("pytensor.tensor.linalg.solvers.triangular", "SolveTriangular", solve_kernel),
        ("pytensor.tensor.linalg.solvers.psd", "CholeskySolve", solve_kernel),
        ("pytensor.tensor.linalg.inverse", "MatrixInverse", numpy_linalg_kernel),
        ("pytensor.tensor.linalg.summary", "Det", numpy_linalg_kernel),
        ("pytensor.tensor.linalg.summary", "SLogDet", numpy_linalg_kernel),
        ("pytensor.tensor.blockwise", "Blockwise", blockwise_kernel),
        ("pytensor.tensor.extra_ops", "CumOp", cumop_kernel),
    ]
    import importlib

    for module_name, class_name, provider in providers:
        try:
            op_class = getattr(importlib.import_module(module_name), class_name)
        except (ImportError, AttributeError):
            _log.info("PyTensor has no %s.%s: no kernel registered", module_name, class_name)
            continue
        register_kernel(op_class, provider)
