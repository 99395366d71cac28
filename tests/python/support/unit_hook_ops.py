"""Ops that use every module-level and node-level C hook, for the tests of
compile units (tests/python/link/c/test_units_hooks.py): each computes
``x * a + b`` elementwise, with ``a`` and ``b`` kept where one hook puts
them and read where another runs, so that a hook run in the wrong
translation unit gives a wrong value."""

from __future__ import annotations

import numpy as np

from opweave.graph.basic import Apply
from opweave.graph.op import Op
from opweave.link.c.op import COp
from support.ops import copy_and_update


class _Affine(COp):
    """``z = x * a + b``, in perform; subclasses say it in C."""

    __props__ = ("k",)
    a_b = (1.0, 0.0)

    def __init__(self, k: float) -> None:
        self.k = float(k)

    def make_node(self, x):
        return Apply(self, [x], [x.type()])

    def perform(self, node, inputs, output_storage):
        a, b = self.a_b_of()
        output_storage[0][0] = np.asarray(inputs[0] * a + b)

    def a_b_of(self) -> tuple[float, float]:
        return self.a_b


class ApplyStatic(_Affine):
    """``a = k`` in a static of ``c_support_code_apply``, set by
    ``c_init_code_apply``; ``b = 1`` in a static of ``c_support_code``, set
    by ``c_init_code``; ``<cmath>`` from ``c_headers``."""

    def a_b_of(self) -> tuple[float, float]:
        return self.k, 1.0

    def c_headers(self, **kwargs):
        return ["<cmath>"]

    def c_support_code(self, **kwargs):
        return "static double opw_apply_static_b = 0.0;\n"

    def c_init_code(self, **kwargs):
        return ["opw_apply_static_b = std::fabs(-1.0);"]

    def c_support_code_apply(self, node, name):
        return f"static double scale_{name} = 0.0;\n"

    def c_init_code_apply(self, node, name):
        return f"scale_{name} = {self.k!r};\n"

    def c_code(self, node, name, inp, out, sub):
        update = f"*value = *value * scale_{name} + opw_apply_static_b;"
        return copy_and_update(inp[0], out[0], sub["fail"], update)


class GlobalHelper(_Affine):
    """``a = 2`` from a function with external linkage in
    ``c_support_code`` (so every unit that holds such a node defines it),
    ``b = k``."""

    def a_b_of(self) -> tuple[float, float]:
        return 2.0, self.k

    def c_support_code(self, **kwargs):
        return "double opw_global_twice(double v) { return 2.0 * v; }\n"

    def c_code(self, node, name, inp, out, sub):
        update = f"*value = opw_global_twice(*value) + {self.k!r};"
        return copy_and_update(inp[0], out[0], sub["fail"], update)


class StructState(_Affine):
    """``a = 1``, ``b = k + 1``: ``k`` in per-node state
    (``c_support_code_struct``, set by ``c_init_code_struct`` and released by
    ``c_cleanup_code_struct``), ``1`` in a static set by
    ``c_init_code_apply``."""

    def a_b_of(self) -> tuple[float, float]:
        return 1.0, self.k + 1.0

    def c_support_code_apply(self, node, name):
        return f"static double bump_{name} = 0.0;\n"

    def c_init_code_apply(self, node, name):
        return f"bump_{name} = 1.0;\n"

    def c_support_code_struct(self, node, name):
        return f"double* base_{name};\n"

    def c_init_code_struct(self, node, name, sub):
        return (
            f"base_{name} = (double*)malloc(sizeof(double));\n"
            f"if (!base_{name}) {{ PyErr_NoMemory(); {sub['fail']} }}\n"
            f"*base_{name} = {self.k!r} + bump_{name};\n"
        )

    def c_cleanup_code_struct(self, node, name):
        return f"free(base_{name});\n"

    def c_code(self, node, name, inp, out, sub):
        update = f"*value += *base_{name};"
        return copy_and_update(inp[0], out[0], sub["fail"], update)


class CleanupCode(_Affine):
    """``a = 1``, ``b = k``: ``c_code`` copies, ``c_code_cleanup`` adds."""

    def a_b_of(self) -> tuple[float, float]:
        return 1.0, self.k

    def c_code(self, node, name, inp, out, sub):
        return copy_and_update(inp[0], out[0], sub["fail"], "(void)value;")

    def c_code_cleanup(self, node, name, inp, out, sub):
        z = out[0]
        return (
            f"if ({z}) {{\nfor (npy_intp i = 0; i < PyArray_SIZE({z}); ++i) {{\n"
            f"((double*)PyArray_DATA({z}))[i] += {self.k!r};\n}}\n}}\n"
        )


class PythonOnly(Op):
    """``z = x + k``, with no C code: ``c|py`` runs it in Python."""

    __props__ = ("k",)

    def __init__(self, k: float) -> None:
        self.k = float(k)

    def make_node(self, x):
        return Apply(self, [x], [x.type()])

    def perform(self, node, inputs, output_storage):
        output_storage[0][0] = np.asarray(inputs[0] + self.k)


KINDS = (ApplyStatic, GlobalHelper, StructState, CleanupCode)


def hook_chain(x, ks, python_at: int | None = None):
    """``x`` through one node per constant of ``ks``, the kinds of op in
    turn (every node code distinct); with ``python_at``, a node without C
    code at that position."""
    out = x
    for position, k in enumerate(ks):
        if position == python_at:
            out = PythonOnly(k)(out)
        else:
            out = KINDS[position % len(KINDS)](k)(out)
    return out
