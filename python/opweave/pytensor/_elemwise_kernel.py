# mypy: disable-error-code="import-not-found"
"""``Elemwise`` with one flat loop where its operands are contiguous.

PyTensor's ``Elemwise`` C code walks its operands with runtime strides, one
pointer per operand, and its own flat loop only runs when every operand's
static shape is known and equal. In a PyMC log-density most elementwise
nodes mix vectors of unknown length with broadcast scalars (a scale, a
location), so they take the strided loop: a scalar is reloaded for every
element (the output may alias it, as far as the compiler knows) and the loop
is never vectorised.

This kernel keeps PyTensor's declarations, checks, allocation and loop, and
puts before that loop one flat loop for the case where every operand that
is not a broadcast scalar has the output's size and the same memory order
(all C- or all Fortran-contiguous): each broadcast scalar is read once,
before the loop, and the others are indexed by one counter. The scalar op's
code is the same, computed element by element in the same order, so values
are bitwise equal to PyTensor's loop.
"""

from __future__ import annotations

from typing import Any

from opweave.pytensor._kernels import Kernel

__all__ = ["ElemwiseKernel", "elemwise_kernel"]

_VERSION = 2

# clang reports each loop it was asked to vectorise and could not; the
# diagnostic belongs to the function, so only a file-level pragma quiets it.
_QUIET_CLANG = """#if defined(__clang__)
#pragma clang diagnostic ignored "-Wpass-failed"
#endif
"""

# Element i of an output is computed from elements i of the inputs only, and
# an output is either new or exactly an input it destroys (PyTensor's destroy
# handler refuses an input that is a view of the destroyed one): iterations
# are independent, so the compiler may vectorise without alias checks.
_NO_CARRIED_DEPENDENCES = """#if defined(__clang__)
#pragma clang loop vectorize(assume_safety)
#elif defined(__GNUC__)
#pragma GCC ivdep
#endif
"""


def _is_scalar_shaped(variable: Any) -> bool:
    """Whether ``variable``'s type says it holds one element (every
    dimension of static length 1): a broadcast scalar."""
    return all(s == 1 for s in variable.type.shape)


def _unique(names: list[str], variables: list[Any]) -> list[tuple[str, Any]]:
    """``(name, variable)`` for each distinct name, in order of first use
    (the same variable twice among the inputs has one name)."""
    seen: dict[str, Any] = {}
    for name, variable in zip(names, variables, strict=True):
        seen.setdefault(name, variable)
    return list(seen.items())


class ElemwiseKernel(Kernel):
    """PyTensor's ``Elemwise`` C code with a flat loop for contiguous
    operands in front of its strided loop. Every other hook is the op's."""

    def __getattr__(self, name: str) -> Any:
        # Only the C hooks are the op's (headers, support code, libraries,
        # ...): c_code and the version are the kernel's own.
        if name.startswith("c_"):
            return getattr(self.op, name)
        raise AttributeError(name)

    def c_support_code(self, **kwargs: Any) -> str:
        """The op's support code, and clang told not to warn where it cannot
        vectorise the flat loop (a loop that calls ``exp`` stays scalar)."""
        return _QUIET_CLANG + (self.op.c_support_code(**kwargs) or "")

    def c_code_cache_version_apply(self, node: Any) -> tuple[Any, ...]:
        """The op's version for ``node`` and the kernel's, or () when the
        op's is unversioned."""
        version = self.op.c_code_cache_version_apply(node)
        return (("opweave-elemwise", _VERSION), version) if version else ()

    def c_code(self, node: Any, name: str, inputs: Any, outputs: Any, sub: Any) -> str:
        """PyTensor's declarations, checks and allocation, then the flat
        loop when the operands allow it, else PyTensor's loop."""
        op = self.op
        decl, checks, alloc, loop, _ = op._c_all(node, name, inputs, outputs, sub)
        head, tail = self._flat_loop(node, name, list(inputs), list(outputs), sub)
        return "\n".join([decl, checks, alloc, head + loop + tail])

    def _flat_loop(
        self, node: Any, name: str, inputs: list[str], outputs: list[str], sub: Any
    ) -> tuple[str, str]:
        """``if (flat) { one loop } else {`` and ``}``: PyTensor's strided
        loop goes between them."""
        op = self.op
        task = op.scalar_op.c_code(
            node.tag.fake_node,
            name + "_scalar_",
            [f"{s}_i" for s in inputs],
            [f"{s}_i" for s in outputs],
            dict(sub),
        )
        aliased = dict(op.inplace_pattern)
        defines = "".join(f"#define {outputs[o]}_i {inputs[i]}_i\n" for o, i in aliased.items())
        undefs = "".join(f"#undef {outputs[o]}_i\n" for o in aliased)
        distinct = _unique(inputs, node.inputs)
        scalars = [n for n, v in distinct if _is_scalar_shaped(v)]
        arrays = [(n, v) for n, v in distinct if not _is_scalar_shaped(v)] + [
            (outputs[k], v) for k, v in enumerate(node.outputs) if k not in aliased
        ]
        size = f"PyArray_SIZE({outputs[0]})"
        # Tested without branches, and expected true: as a chain of "&&" the
        # compiler would predict the flat loop cold and not vectorise it.
        same_size = " & ".join(f"(PyArray_SIZE({n}) == n_flat)" for n, _ in arrays)
        c_order = " & ".join(f"PyArray_IS_C_CONTIGUOUS({n})" for n, _ in arrays)
        f_order = " & ".join(f"PyArray_IS_F_CONTIGUOUS({n})" for n, _ in arrays)
        pointers = "".join(
            f"dtype_{n}* const {n}_flat = (dtype_{n}*)PyArray_DATA({n});\n" for n, _ in arrays
        )
        loaded = "".join(
            f"const dtype_{n} {n}_i = ((const dtype_{n}*)PyArray_DATA({n}))[0];\n" for n in scalars
        )
        elements = "".join(f"dtype_{n}& {n}_i = {n}_flat[i_flat];\n" for n, _ in arrays)
        head = f"""{{
const npy_intp n_flat = {size};
const int flat_ok = ({same_size}) & (({c_order}) | ({f_order}));
if (__builtin_expect(flat_ok, 1)) {{
{defines}{pointers}{loaded}{_NO_CARRIED_DEPENDENCES}\
for (npy_intp i_flat = 0; i_flat < n_flat; ++i_flat) {{
{elements}{{
{task}
}}
}}
{undefs}}} else {{
"""
        return head, "\n}\n}\n"


def elemwise_kernel(node: Any) -> ElemwiseKernel | None:
    """An ElemwiseKernel for ``node``, or None where PyTensor's own code is
    kept: outputs of one element or none, OpenMP loops, AMD libm's
    contiguous code, float16 (no C code), an inplace output over a broadcast
    scalar, or an ``Elemwise`` whose props are not those it was written for."""
    op = node.op
    if tuple(getattr(type(op), "__props__", ())) != ("scalar_op", "inplace_pattern"):
        return None
    if getattr(op, "openmp", False) or not hasattr(op, "_c_all"):
        return None
    if any(o.type.ndim == 0 or _is_scalar_shaped(o) for o in node.outputs):
        return None
    variables = [*node.inputs, *node.outputs]
    if any(v.type.dtype == "float16" for v in variables):
        return None
    if getattr(op.scalar_op, "inner_float16", False):
        return None
    if any(_is_scalar_shaped(node.inputs[i]) for i in op.inplace_pattern.values()):
        return None
    from pytensor import config

    if getattr(config, "lib__amdlibm", False):
        return None
    return ElemwiseKernel(op)
