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
are bitwise equal to PyTensor's loop; a ``Composite``'s switches compute
only the arm they take (:mod:`._composite_code`).
"""

from __future__ import annotations

import re
from typing import Any

from opweave.pytensor._composite_code import composite_task
from opweave.pytensor._kernel_base import NO_CARRIED_DEPENDENCES, OpCodeKernel

__all__ = ["ElemwiseKernel", "elemwise_kernel"]

_VERSION = 5
# The shortest last axis the loop over rows takes.
_MIN_COLUMNS = 16


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


_DEFINE = re.compile(r"#\s*define\s+([A-Za-z_]\w*)\s+([A-Za-z_]\w*)")
_UNDEF = re.compile(r"#\s*undef\s+([A-Za-z_]\w*)")
# A line's tokens: literals and comments (kept whole), identifiers, the rest.
_TOKEN = re.compile(r'"(?:\\.|[^"\\])*"|\'(?:\\.|[^\'\\])*\'|//.*|/\*.*?\*/|[A-Za-z_]\w*|.', re.S)


def expand_aliases(text: str) -> str | None:
    """``text`` with each alias macro of PyTensor's in-place loops
    (``#define o0_i i0_i`` ... ``#undef o0_i``) expanded as the preprocessor
    expands it, and its two lines gone; None when ``text`` holds any other
    preprocessor line, an alias never undone, or a line continued with a
    backslash. A module that holds a preprocessor line exports none of its
    other nodes (link/c/_export_context.py): without them, the nodes of a
    region of a per-node linked graph are each found again from it."""
    aliases: dict[str, str] = {}
    kept: list[str] = []
    for line in text.split("\n"):
        if line.rstrip().endswith("\\"):
            return None
        stripped = line.strip()
        if stripped.startswith("#"):
            define, undef = _DEFINE.fullmatch(stripped), _UNDEF.fullmatch(stripped)
            if define and define.group(1) not in aliases:
                aliases[define.group(1)] = define.group(2)
            elif undef and undef.group(1) in aliases:
                del aliases[undef.group(1)]
            else:
                return None
            continue
        if aliases:
            line = "".join(_expanded(t, aliases) for t in _TOKEN.findall(line))
        kept.append(line)
    return None if aliases else "\n".join(kept)


def _expanded(token: str, aliases: dict[str, str]) -> str:
    """``token`` after the preprocessor's expansion of ``aliases`` (a
    replacement is rescanned; a macro is not expanded inside itself)."""
    seen: set[str] = set()
    while token in aliases and token not in seen:
        seen.add(token)
        token = aliases[token]
    return token


class ElemwiseKernel(OpCodeKernel):
    """PyTensor's ``Elemwise`` C code with a flat loop for contiguous
    operands in front of its strided loop (without it when ``flat`` is
    false). Every other hook is the op's."""

    __props__ = ("op", "flat")
    tag = "opweave-elemwise"
    version = _VERSION

    def __init__(self, op: Any, flat: bool = True) -> None:
        super().__init__(op)
        self.flat = flat

    def c_code(self, node: Any, name: str, inputs: Any, outputs: Any, sub: Any) -> str:
        """PyTensor's declarations, checks and allocation, then the flat
        loop when the operands allow it, else PyTensor's loop; the in-place
        aliases expanded (PyTensor's text where it holds other preprocessor
        lines)."""
        op = self.op
        decl, checks, alloc, loop, _ = op._c_all(node, name, inputs, outputs, sub)
        if self.flat:
            head, tail = self._flat_loop(node, name, list(inputs), list(outputs), sub)
            loop = head + loop + tail
        text = "\n".join([decl, checks, alloc, loop])
        return expand_aliases(text) or text

    def _flat_loop(
        self, node: Any, name: str, inputs: list[str], outputs: list[str], sub: Any
    ) -> tuple[str, str]:
        """``if (flat) { one loop } else {`` and ``}``: PyTensor's strided
        loop goes between them."""
        op = self.op
        names = ([f"{s}_i" for s in inputs], [f"{s}_i" for s in outputs])
        task = composite_task(op.scalar_op, name + "_scalar_", *names, dict(sub))
        if task is None:
            task = op.scalar_op.c_code(node.tag.fake_node, name + "_scalar_", *names, dict(sub))
        aliased = dict(op.inplace_pattern)
        # An output computed in place is its input's element (a reference).
        same = "".join(
            f"dtype_{outputs[o]}& {outputs[o]}_i = {inputs[i]}_i;\n" for o, i in aliased.items()
        )
        distinct = _unique(inputs, node.inputs)
        scalars = [n for n, v in distinct if _is_scalar_shaped(v)]
        arrays = [(n, v) for n, v in distinct if not _is_scalar_shaped(v)] + [
            (outputs[k], v) for k, v in enumerate(node.outputs) if k not in aliased
        ]
        size = f"PyArray_SIZE({outputs[0]})"
        # Tested without branches, and expected true: as a chain of "&&" the
        # compiler would predict the flat loop cold and not vectorise it.
        same_size = " & ".join(f"(int)(PyArray_SIZE({n}) == n_flat)" for n, _ in arrays)
        c_order = " & ".join(f"PyArray_IS_C_CONTIGUOUS({n})" for n, _ in arrays)
        f_order = " & ".join(f"PyArray_IS_F_CONTIGUOUS({n})" for n, _ in arrays)
        pointers = "".join(
            f"dtype_{n}* const {n}_flat = (dtype_{n}*)PyArray_DATA({n});\n" for n, _ in arrays
        )
        loaded = "".join(
            f"const dtype_{n} {n}_i = ((const dtype_{n}*)PyArray_DATA({n}))[0];\n" for n in scalars
        )
        elements = "".join(f"dtype_{n}& {n}_i = {n}_flat[i_flat];\n" for n, _ in arrays)
        rows = self._rows_loop(node, outputs, distinct, scalars, task, same)
        head = f"""{{
const npy_intp n_flat = {size};
const int flat_ok = ({same_size}) & (({c_order}) | ({f_order}));
if (__builtin_expect(flat_ok, 1)) {{
{pointers}{loaded}{NO_CARRIED_DEPENDENCES}\
for (npy_intp i_flat = 0; i_flat < n_flat; ++i_flat) {{
{elements}{same}{{
{task}
}}
}}
}} else {rows}{{
"""
        return head, "\n}\n}\n"

    def _rows_loop(
        self,
        node: Any,
        outputs: list[str],
        distinct: list[tuple[str, Any]],
        scalars: list[str],
        task: str,
        same: str,
    ) -> str:
        """``if (rows) { a loop over rows } else `` for C-contiguous
        operands that broadcast along whole axes (an outer product's
        ``(n, 1)`` and ``(1, m)``): the output's last axis is the inner,
        vectorisable loop, an operand broadcast along it is read once per
        row; else "" (no such loop for this node). Every element is
        computed by the same scalar code as PyTensor's loop."""
        out_type = node.outputs[0].type
        if out_type.ndim < 2 or any(any(o.type.broadcastable) for o in node.outputs):
            return ""
        if self.op.inplace_pattern and any(
            any(node.inputs[i].type.broadcastable) for i in self.op.inplace_pattern.values()
        ):
            return ""
        operands = [(n, v.type.broadcastable) for n, v in distinct if n not in scalars]
        if not any(any(b) for _, b in operands):
            return ""  # nothing broadcast: the flat loop's case
        if any(any(b[:-1]) and not all(b[:-1]) for _, b in operands):
            return ""  # broadcast along some outer axes only
        aliased = dict(self.op.inplace_pattern)
        news = [o for k, o in enumerate(outputs) if k not in aliased]
        contiguous = " & ".join(
            f"PyArray_IS_C_CONTIGUOUS({n})" for n in [*(n for n, _ in operands), *news]
        )
        pointers, per_row, elements = _row_parts(operands, news)
        loaded = "".join(
            f"const dtype_{n} {n}_i = ((const dtype_{n}*)PyArray_DATA({n}))[0];\n" for n in scalars
        )
        first = outputs[0]
        nl = "\n"
        # Rows shorter than _MIN_COLUMNS: PyTensor's loop (a short inner loop
        # costs more than it saves; measured on the gallery's mixture, rows of 2).
        last = f"PyArray_DIMS({first})[PyArray_NDIM({first}) - 1]"
        return f"""if (({contiguous}) & (int)({last} >= {_MIN_COLUMNS})) {{
const npy_intp n_cols = {last};
const npy_intp n_rows = n_cols == 0 ? 0 : PyArray_SIZE({first}) / n_cols;
{nl.join(pointers)}
{loaded}for (npy_intp r_rows = 0; r_rows < n_rows; ++r_rows) {{
{nl.join(per_row)}
{NO_CARRIED_DEPENDENCES}\
for (npy_intp c_rows = 0; c_rows < n_cols; ++c_rows) {{
{nl.join(elements)}
{same}{{
{task}
}}
}}
}}
}} else """


def _row_parts(
    operands: list[tuple[str, tuple[bool, ...]]], news: list[str]
) -> tuple[list[str], list[str], list[str]]:
    """The loop over rows' declarations: each operand's pointer, what each
    row reads (an operand broadcast along the last axis: its value; else
    the row's start) and each element's reference; ``news``: the outputs
    not computed in place."""
    pointers, per_row, elements = [], [], []
    for n, b in operands:
        outer = "0" if all(b[:-1]) else ("1" if b[-1] else "n_cols")
        pointers.append(f"dtype_{n}* const {n}_flat = (dtype_{n}*)PyArray_DATA({n});")
        if b[-1]:
            per_row.append(f"const dtype_{n} {n}_i = {n}_flat[r_rows * {outer}];")
        else:
            per_row.append(f"dtype_{n}* const {n}_row = {n}_flat + r_rows * {outer};")
            elements.append(f"dtype_{n}& {n}_i = {n}_row[c_rows];")
    for n in news:
        pointers.append(f"dtype_{n}* const {n}_flat = (dtype_{n}*)PyArray_DATA({n});")
        per_row.append(f"dtype_{n}* const {n}_row = {n}_flat + r_rows * n_cols;")
        elements.append(f"dtype_{n}& {n}_i = {n}_row[c_rows];")
    return pointers, per_row, elements


def elemwise_kernel(node: Any) -> ElemwiseKernel | None:
    """An ElemwiseKernel for ``node``, or None where PyTensor's own code is
    kept: OpenMP loops, AMD libm's contiguous code, float16 (no C code), or
    an ``Elemwise`` whose props are not those it was written for. Without
    the flat loop (PyTensor's loop, its aliases expanded): outputs of one
    element or none, an inplace output over a broadcast scalar."""
    op = node.op
    if tuple(getattr(type(op), "__props__", ())) != ("scalar_op", "inplace_pattern"):
        return None
    if getattr(op, "openmp", False) or not hasattr(op, "_c_all"):
        return None
    variables = [*node.inputs, *node.outputs]
    if any(v.type.dtype == "float16" for v in variables):
        return None
    if getattr(op.scalar_op, "inner_float16", False):
        return None
    from pytensor import config

    if getattr(config, "lib__amdlibm", False):
        return None
    one_element = any(o.type.ndim == 0 or _is_scalar_shaped(o) for o in node.outputs)
    over_scalar = any(_is_scalar_shaped(node.inputs[i]) for i in op.inplace_pattern.values())
    return ElemwiseKernel(op, flat=not (one_element or over_scalar))
