# mypy: disable-error-code="import-not-found"
"""Partial reductions (``Sum``, ``Prod``, ``Max``, ``Min``, ``All``, ``Any``
and ``CAReduce`` of any scalar op over some axes) in tight loops.

PyTensor's C code for a reduction over some axes orders its loops by the
input's strides (the largest outermost; ``std::sort`` of ``(int |stride|,
axis)`` pairs, so equal strides put the higher axis outside), then walks
every element through index arithmetic, testing at each one whether it
starts an accumulator; the order is built in a ``std::vector`` at each
call. Each output element is therefore the fold, from the op's identity,
of its input elements in the lexicographic order of the reduced axes as
sorted.

This kernel keeps PyTensor's declarations, checks and allocation and
replaces the loop: every accumulator is set to the identity first, then the
same nested loops (the same order, the same scalar code) run on pointers;
where the innermost axis is reduced its accumulator is a local variable,
where it is not and both operands are contiguous along it the loop has no
carried dependence. Each output element folds the same elements in the same
order as PyTensor's loop, so values are bitwise equal.

Declines (PyTensor's code runs): a reduction to one element (PyTensor
iterates it with NumPy's iterator, whose order this does not follow), no
reduced axis, an accumulator dtype other than the output's, complex and
float16 dtypes, props it was not written for.
"""

from __future__ import annotations

from typing import Any

from opweave.pytensor._kernel_base import NO_CARRIED_DEPENDENCES, OpCodeKernel

__all__ = ["CAReduceKernel", "careduce_kernel"]

_VERSION = 2

_BASE_PROPS = ("scalar_op", "axis", "dtype", "acc_dtype", "upcast_discrete_output")
# The props of PyTensor 3.3's reductions this kernel was written for.
_PROPS = (
    _BASE_PROPS,
    (*_BASE_PROPS, "initial"),  # Max, Min
    ("scalar_op", "axis", "dtype", "acc_dtype", "no_zeros_in_input"),  # Prod
)


def identity_text(op: Any, dtype: str) -> str:
    """The C text of the op's identity for an input of ``dtype``, as
    PyTensor's ``CAReduce`` writes it."""
    import numpy as np

    identity = op.scalar_op.identity
    if np.isposinf(identity):
        if dtype in ("float32", "float64"):
            return "__builtin_inf()"
        return "1" if dtype.startswith("uint") or dtype == "bool" else f"NPY_MAX_{dtype.upper()}"
    if np.isneginf(identity):
        if dtype in ("float32", "float64"):
            return "-__builtin_inf()"
        return "0" if dtype.startswith("uint") or dtype == "bool" else f"NPY_MIN_{dtype.upper()}"
    return f"{identity}"


def _inner_task(node: Any, acc: str, x: str, sub: Any) -> str:
    """The scalar op's code folding ``x_i`` into ``acc_i`` (PyTensor's)."""
    from pytensor.graph.basic import Apply
    from pytensor.scalar import get_scalar_type

    op = node.op
    scalar = Apply(
        op.scalar_op,
        [get_scalar_type(dtype=v.type.dtype).make_variable() for v in node.inputs * 2],
        [get_scalar_type(dtype=v.type.dtype).make_variable() for v in node.outputs],
    )
    return op.scalar_op.c_code(scalar, None, [f"{acc}_i", f"{x}_i"], [f"{acc}_i"], sub)


def _order(x: str, ndim: int) -> str:
    """C that sorts the axes as PyTensor's loop does: ``opw_axis[0]`` the
    outermost (largest ``(int)|stride|``, then highest axis)."""
    return f"""int opw_key[{ndim}];
int opw_axis[{ndim}];
for (int a = 0; a < {ndim}; ++a) {{
    const npy_intp s = PyArray_STRIDES({x})[a];
    opw_key[a] = (int)(s < 0 ? -s : s);
    int k = a;
    while (k > 0 && (opw_key[opw_axis[k - 1]] < opw_key[a] ||
                     (opw_key[opw_axis[k - 1]] == opw_key[a] && opw_axis[k - 1] < a))) {{
        opw_axis[k] = opw_axis[k - 1];
        --k;
    }}
    opw_axis[k] = a;
}}
"""


def _innermost(x: str, acc: str, level: int, task: str) -> str:
    """The innermost loop: a local accumulator when its axis is reduced, a
    loop without carried dependence when both operands are contiguous."""
    n, sx, sa = f"opw_n{level}", f"opw_sx{level}", f"opw_sa{level}"
    px, pa = f"opw_px{level}", f"opw_pa{level}"
    return f"""if ({sa} == 0) {{
    dtype_{acc} opw_local = *{pa};
    {{
        dtype_{acc}& {acc}_i = opw_local;
        for (npy_intp i = 0; i < {n}; ++i) {{
            dtype_{x}& {x}_i = {px}[i * {sx}];
            {task}
        }}
    }}
    *{pa} = opw_local;
}} else if ({sx} == 1 && {sa} == 1) {{
{NO_CARRIED_DEPENDENCES}for (npy_intp i = 0; i < {n}; ++i) {{
        dtype_{x}& {x}_i = {px}[i];
        dtype_{acc}& {acc}_i = {pa}[i];
        {task}
    }}
}} else {{
    for (npy_intp i = 0; i < {n}; ++i) {{
        dtype_{x}& {x}_i = {px}[i * {sx}];
        dtype_{acc}& {acc}_i = {pa}[i * {sa}];
        {task}
    }}
}}
"""


def reduce_loop(node: Any, x: str, acc: str, sub: Any) -> str:
    """The kernel's loop for ``node`` (input ``x``, accumulator and output
    ``acc``): identities, then the folds in PyTensor's order."""
    op = node.op
    ndim = node.inputs[0].type.ndim
    axes = sorted(op.axis if op.axis is not None else range(ndim))
    kept = iter(range(ndim))
    acc_strides = ", ".join("0" if a in axes else f"{acc}_stride{next(kept)}" for a in range(ndim))
    identity = identity_text(op, node.inputs[0].type.dtype)
    task = _inner_task(node, acc, x, sub)
    levels = "".join(
        f"const npy_intp opw_n{k} = opw_dims[opw_axis[{k}]];\n"
        f"const npy_intp opw_sx{k} = opw_xs[opw_axis[{k}]];\n"
        f"const npy_intp opw_sa{k} = opw_as[opw_axis[{k}]];\n"
        for k in range(ndim)
    )
    opening = "".join(
        f"for (npy_intp i{k} = 0; i{k} < opw_n{k}; ++i{k}) {{\n"
        f"dtype_{x}* const opw_px{k + 1} = opw_px{k} + i{k} * opw_sx{k};\n"
        f"dtype_{acc}* const opw_pa{k + 1} = opw_pa{k} + i{k} * opw_sa{k};\n"
        for k in range(ndim - 1)
    )
    return f"""{{
const npy_intp opw_size = PyArray_SIZE({acc});
dtype_{acc}* const opw_first = (dtype_{acc}*)PyArray_DATA({acc});
for (npy_intp i = 0; i < opw_size; ++i) {{
    dtype_{acc}& {acc}_i = opw_first[i];
    {acc}_i = {identity};
}}
if (PyArray_SIZE({x}) != 0) {{
{_order(x, ndim)}\
const npy_intp opw_dims[{ndim}] = {{{", ".join(f"{x}_n{a}" for a in range(ndim))}}};
const npy_intp opw_xs[{ndim}] = {{{", ".join(f"{x}_stride{a}" for a in range(ndim))}}};
const npy_intp opw_as[{ndim}] = {{{acc_strides}}};
{levels}\
dtype_{x}* const opw_px0 = (dtype_{x}*)PyArray_DATA({x});
dtype_{acc}* const opw_pa0 = opw_first;
{_short_inner(x, acc, task) if ndim == 2 else ""}{{
{opening}{_innermost(x, acc, ndim - 1, task)}{"}" * (ndim - 1)}
}}
}}
}}
"""


# The longest inner axis whose loop runs inside out (see _short_inner).
_SHORT_ROW = 8


def _short_inner(x: str, acc: str, task: str) -> str:
    """``if (short inner axis) { ... } else `` for two axes, one reduced and
    one kept, whose inner one is shorter than _SHORT_ROW (a ``(600, 2)``
    reduced over either axis): the inner loop of two iterations cost more
    than its folds. The loops run the other way round, in the same order
    for each output element (the reduced index increasing), so values are
    the same bits: over the outer axis, each output element is folded in a
    local accumulator; over the inner one, every output element takes its
    first fold, then its second, in a loop without carried dependence."""
    return f"""if (opw_sa0 == 0 && opw_sa1 != 0 && opw_n1 < {_SHORT_ROW}) {{
    for (npy_intp j = 0; j < opw_n1; ++j) {{
        dtype_{acc} opw_local = opw_pa0[j * opw_sa1];
        {{
            dtype_{acc}& {acc}_i = opw_local;
            const dtype_{x}* const opw_column = opw_px0 + j * opw_sx1;
            for (npy_intp i = 0; i < opw_n0; ++i) {{
                const dtype_{x}& {x}_i = opw_column[i * opw_sx0];
                {task}
            }}
        }}
        opw_pa0[j * opw_sa1] = opw_local;
    }}
}} else if (opw_sa1 == 0 && opw_sa0 != 0 && opw_n1 < {_SHORT_ROW}) {{
    for (npy_intp j = 0; j < opw_n1; ++j) {{
        const dtype_{x}* const opw_column = opw_px0 + j * opw_sx1;
{NO_CARRIED_DEPENDENCES}\
        for (npy_intp i = 0; i < opw_n0; ++i) {{
            const dtype_{x}& {x}_i = opw_column[i * opw_sx0];
            dtype_{acc}& {acc}_i = opw_pa0[i * opw_sa0];
            {task}
        }}
    }}
}} else """


class CAReduceKernel(OpCodeKernel):
    """PyTensor's partial-reduction C code with its loop on pointers."""

    tag = "opweave-careduce"
    version = _VERSION

    def c_code(self, node: Any, name: str, inputs: Any, outputs: Any, sub: Any) -> str:
        """PyTensor's declarations, checks and allocation, then the loop."""
        setup, alloc, _, cast = self.op._c_all(node, name, inputs, outputs, sub)
        loop = reduce_loop(node, inputs[0], outputs[0], sub)
        return "\n".join([setup, alloc, loop, cast])


def careduce_kernel(node: Any) -> CAReduceKernel | None:
    """A CAReduceKernel for a reduction over some (not all, not no) axes
    whose accumulator is its output, or None (PyTensor's C code runs)."""
    op = node.op
    if tuple(getattr(type(op), "__props__", ())) not in _PROPS or not hasattr(op, "_c_all"):
        return None
    (x,), (z,) = node.inputs, node.outputs
    if z.type.ndim == 0 or (op.axis is not None and len(op.axis) == 0):
        return None
    if any(v.type.dtype == "float16" or v.type.dtype.startswith("complex") for v in (x, z)):
        return None
    if op.acc_dtype not in (None, z.type.dtype):
        return None
    if getattr(op.scalar_op, "identity", None) is None:
        return None
    return CAReduceKernel(op)
