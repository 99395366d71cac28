"""Params: ``y = a*x**2 + b*x + c`` with the coefficients as op params.

``a``, ``b`` and ``c`` are attributes of the op, gathered into a C struct by
``ParamsType``. The C code reads them at run time, so ``Quadratic(1, 2, 3)``
and ``Quadratic(4, 5, 6)`` share one compiled module. Two versions:

- ``Quadratic``: a ``COp`` whose C code is a method, reading
  ``sub["params"]->a``;
- ``QuadraticExternal``: an ``ExternalCOp`` whose C code is in
  ``quadratic.c``, with a function taking ``PARAMS_TYPE* coeff``.

Run it: ``python quadratic.py``.
"""

from __future__ import annotations

import numpy as np

import opweave
from opweave.graph.basic import Apply
from opweave.link.c.op import COp, ExternalCOp
from opweave.link.c.params_type import ParamsType
from opweave.scalar import float64
from opweave.tensor import as_tensor_variable

__all__ = ["Quadratic", "QuadraticExternal"]


class Quadratic(COp):
    """``a*x**2 + b*x + c`` for a float64 tensor ``x``."""

    __props__ = ("a", "b", "c")
    params_type = ParamsType(a=float64, b=float64, c=float64)

    def __init__(self, a, b, c):
        self.a, self.b, self.c = float(a), float(b), float(c)

    def make_node(self, x):
        x = as_tensor_variable(x)
        if x.type.dtype != "float64":
            raise TypeError(f"Quadratic works on float64 tensors, got {x.type}")
        return Apply(self, [x], [x.type()])

    def perform(self, node, inputs, output_storage):
        (x,) = inputs
        output_storage[0][0] = self.a * x * x + self.b * x + self.c

    def c_code_cache_version(self):
        return (1,)

    def c_code(self, node, name, inputs, outputs, sub):
        (x,), (y,), p, fail = inputs, outputs, sub["params"], sub["fail"]
        return f"""
        Py_XDECREF({y});
        {y} = (PyArrayObject*)PyArray_NewCopy({x}, NPY_CORDER);
        if ({y} == NULL) {{ {fail} }}
        {{  // a scope of its own: the fail above jumps past these locals
            npy_float64* data = (npy_float64*)PyArray_DATA({y});
            for (npy_intp i = 0, n = PyArray_SIZE({y}); i < n; ++i) {{
                const npy_float64 v = data[i];
                data[i] = {p}->a * v * v + {p}->b * v + {p}->c;
            }}
        }}
        """


class QuadraticExternal(ExternalCOp):
    """The same op, with its C code in ``quadratic.c``."""

    __props__ = ("a", "b", "c")
    params_type = ParamsType(a=float64, b=float64, c=float64)

    def __init__(self, a, b, c):
        super().__init__("quadratic.c", "APPLY_SPECIFIC(compute_quadratic)")
        self.a, self.b, self.c = float(a), float(b), float(c)

    make_node = Quadratic.make_node
    perform = Quadratic.perform


def main() -> None:
    """Evaluates two quadratics with each version of the op."""
    x = opweave.tensor.dmatrix("x")
    values = np.arange(6.0).reshape(2, 3)
    for op_class in (Quadratic, QuadraticExternal):
        f = opweave.function([x], [op_class(1, 0, 0)(x), op_class(0, 2, -1)(x)])
        squares, lines = f(values)
        print(op_class.__name__, squares.tolist(), lines.tolist(), f.cache_outcome)


if __name__ == "__main__":
    main()
