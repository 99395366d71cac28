# mypy: disable-error-code="import-not-found"
"""``Blockwise`` of an op with C code: a loop over the core op's own C code.

``Blockwise.perform`` broadcasts the inputs' batch axes (raising
PyTensor's runtime-broadcast error where an axis of length 1 is not
declared broadcastable), runs the core op on each batch position in C order
and stores each result into outputs of the batch shape and the first
result's shape and dtype. The kernel does the same in C: the core node's C
code (its own, or the one opweave registered for it) runs once per position
on views of the inputs' core axes (the library's ``core_view``), and each
result is copied into place (``store_core``, NumPy's ``out[index] = core``),
so values are the core code's, position by position.

Where the core op has a NumPy gufunc (``gufunc_spec``: ``MatrixInverse``,
``Det``, ``SLogDet``), ``perform`` calls that gufunc on the whole batch; so
does the kernel (opweave's kernel for the core op takes stacks of
matrices). Declines (the node runs ``perform``): a core op without C code,
with params or per-node state (struct hooks), with views of its inputs, or
with a gufunc opweave does not call; non-tensor inputs.
"""

from __future__ import annotations

from typing import Any

from opweave.link.c.hooks import call_optional_hook, declares_version, get_hook
from opweave.link.c.kernels import code_op
from opweave.pytensor._library_kernel import LibraryKernel, c_string
from opweave.pytensor._linalg_kernels import NumpyLinalgKernel

__all__ = ["BlockwiseKernel", "blockwise_kernel"]

_VERSION = 1
# Module-level hooks: the core's, as they are.
_FORWARDED = (
    "c_headers",
    "c_header_dirs",
    "c_libraries",
    "c_lib_dirs",
    "c_compile_args",
    "c_no_compile_args",
    "c_init_code",
)


def _forward(name: str) -> Any:
    def hook(self: BlockwiseKernel, **kwargs: Any) -> Any:
        own = [] if name != "c_init_code" else LibraryKernel.c_init_code(self)
        theirs = list(call_optional_hook(self.core, name, default=[], **kwargs) or [])
        return own + [item for item in theirs if item not in own]

    hook.__name__ = name
    hook.__doc__ = f"The core op's ``{name}`` (and the library's, for init code)."
    return hook


class BlockwiseKernel(LibraryKernel):
    """``Blockwise`` as a loop over its core node's C code (``core``: the
    object whose hooks are that code)."""

    __props__ = ("op", "core_types")

    def __init__(self, op: Any, core_types: tuple[Any, ...], core_node: Any, core: Any) -> None:
        super().__init__(op)
        self.core_types = core_types
        self.core_node = core_node
        self.core = core

    def c_support_code(self, **kwargs: Any) -> str:
        """The library's table and the core's support code."""
        theirs = call_optional_hook(self.core, "c_support_code", default="", **kwargs) or ""
        own = super().c_support_code(**kwargs)
        return own if theirs in ("", own) else own + "\n" + theirs

    def c_support_code_apply(self, node: Any, name: str) -> str:
        """The core node's apply-specific support code."""
        text = call_optional_hook(
            self.core, "c_support_code_apply", self.core_node, f"{name}_core", default=""
        )
        return text or ""

    def c_code_cache_version(self) -> tuple[Any, ...]:
        """This loop's version and the core's."""
        core = call_optional_hook(self.core, "c_code_cache_version", default=()) or ()
        return (_VERSION, *core) if core else ()

    def c_code(self, node: Any, name: str, inputs: Any, outputs: Any, sub: Any) -> str:
        """The loop: the batch shape, then the core code at each position."""
        b = node.op.batch_ndim(node)
        n_in, n_out = len(inputs), len(outputs)
        core_in = [f"{name}_ci{k}" for k in range(n_in)]
        core_out = [f"{name}_co{k}" for k in range(n_out)]
        result = [f"{name}_r{k}" for k in range(n_out)]
        fail_label = f"{name}_blockwise_failed"
        core_sub = dict(sub, fail=f"goto {fail_label};")
        declarations = []
        for var, cname in zip(
            [*self.core_node.inputs, *self.core_node.outputs], [*core_in, *core_out], strict=True
        ):
            declarations.append(var.type.c_declare(cname, core_sub, check_input=True))
            declarations.append(f"{cname} = NULL;")
        core_code = self.core.c_code(self.core_node, f"{name}_core", core_in, core_out, core_sub)
        release = "\n".join(f"Py_XDECREF({v}); {v} = NULL;" for v in [*core_in, *core_out])
        release_results = "\n".join(f"Py_XDECREF({r});" for r in result)
        views = "\n".join(
            f"Py_XDECREF({core_in[k]});\n"
            f"{core_in[k]} = api->core_view({inputs[k]}, {b}, index);\n"
            f"if ({core_in[k]} == NULL) {{ goto {fail_label}; }}"
            for k in range(n_in)
        )
        stores = "\n".join(
            f"if (api->store_core(&{result[k]}, {b}, batch, flat, {core_out[k]}) != 0) "
            f"{{ goto {fail_label}; }}"
            for k in range(n_out)
        )
        outputs_set = "\n".join(
            f"Py_XDECREF({outputs[k]});\n{outputs[k]} = {result[k]};" for k in range(n_out)
        )
        return _LOOP.format(
            declarations="\n".join(declarations),
            results=" ".join(f"PyArrayObject* {r} = NULL;" for r in result),
            n_in=n_in,
            inputs=", ".join(inputs),
            b=b,
            check=_runtime_broadcast_check(node, inputs, b, fail_label),
            views=views,
            core_code=core_code,
            stores=stores,
            release=release,
            release_results=release_results,
            outputs_set=outputs_set,
            fail_label=fail_label,
            fail=sub["fail"],
        )


# {{/}}: braces of the C text. The batch index runs in C order.
_LOOP = r"""
{{
const struct opweave_kernels_v1* api = opweave_kernels_import();
{declarations}
{results}
PyArrayObject* const batch_inputs[{n_in}] = {{{inputs}}};
npy_intp batch[{b} + 1];
npy_intp index[{b} + 1] = {{0}};
npy_intp total = 1;
{check}
if (api->batch_shape({n_in}, batch_inputs, {b}, batch) != 0) {{
    goto {fail_label};
}}
for (int d = 0; d < {b}; ++d) {{
    total *= batch[d];
}}
if (total == 0) {{
    PyErr_SetString(PyExc_NotImplementedError, "vectorize with zero size not implemented");
    goto {fail_label};
}}
for (npy_intp flat = 0; flat < total; ++flat) {{
    {views}
    {{
{core_code}
    }}
    {stores}
    for (int d = {b} - 1; d >= 0; --d) {{
        if (++index[d] < batch[d]) {{
            break;
        }}
        index[d] = 0;
    }}
}}
{release}
{outputs_set}
goto {fail_label}_done;
{fail_label}:
{release}
{release_results}
{fail}
{fail_label}_done:;
}}
"""


def _runtime_broadcast_check(node: Any, inputs: list[str], b: int, fail_label: str) -> str:
    """PyTensor's check that no batch axis of length 1 broadcasts where its
    type does not say it may (more than one input only, as ``perform``)."""
    if len(inputs) < 2 or b == 0:
        return ""
    message = c_string(
        "Runtime broadcasting not allowed. At least one input has a distinct batch dimension "
        "length of 1, but was not marked as broadcastable.\nIf broadcasting was intended, use "
        "`specify_broadcastable` on the relevant input."
    )
    tests = []
    for d in range(b):
        other = " || ".join(f"PyArray_DIMS({x})[{d}] != 1" for x in inputs)
        ones = [
            f"PyArray_DIMS({x})[{d}] == 1"
            for x, v in zip(inputs, node.inputs, strict=True)
            if not v.type.broadcastable[d]
        ]
        if ones:
            tests.append(f"(({other}) && ({' || '.join(ones)}))")
    if not tests:
        return ""
    return (
        f"if ({' || '.join(tests)}) {{\n"
        f"    PyErr_SetString(PyExc_ValueError, {message});\n    goto {fail_label};\n}}"
    )


def _core_types(node: Any) -> tuple[Any, ...] | None:
    """The core node's input types, or None when an input is not a tensor."""
    b = node.op.batch_ndim(node)
    types = []
    for variable in node.inputs:
        if not hasattr(variable.type, "broadcastable") or variable.type.ndim < b:
            return None
        types.append(variable.type.clone(shape=variable.type.shape[b:]))
    return tuple(types)


def blockwise_kernel(node: Any) -> Any:
    """A kernel for a ``Blockwise`` whose core op has C code (see the
    module's docstring), or None."""
    op = node.op
    if tuple(getattr(type(op), "__props__", ())) != ("core_op", "signature"):
        return None
    core_types = _core_types(node)
    if core_types is None:
        return None
    try:
        core_node = op._create_dummy_core_node(node.inputs)
    except Exception:  # a core op that cannot be built alone: perform's path
        return None
    core = code_op(core_node)
    gufunc = op.gufunc_spec or getattr(op.core_op, "gufunc_spec", None)
    if gufunc is not None:
        # perform calls the gufunc on the whole batch: so does opweave's kernel
        return core if isinstance(core, NumpyLinalgKernel) else None
    if get_hook(core, "c_code") is None or getattr(core, "view_map", None):
        return None
    sub = {"fail": "", "id": "0", "failure_var": "__failure"}
    struct_code = [
        call_optional_hook(core, "c_support_code_struct", core_node, "n"),
        call_optional_hook(core, "c_init_code_struct", core_node, "n", sub),
        call_optional_hook(core, "c_cleanup_code_struct", core_node, "n"),
    ]
    if any(code and code.strip() for code in struct_code):
        return None
    if getattr(core, "params_type", None) is not None:
        return None
    if not all(hasattr(v.type, "c_declare") for v in [*core_node.inputs, *core_node.outputs]):
        return None
    if not declares_version(core) or not call_optional_hook(core, "c_code_cache_version"):
        return None
    return BlockwiseKernel(op, core_types, core_node, core)


for _name in _FORWARDED:
    setattr(BlockwiseKernel, _name, _forward(_name))
