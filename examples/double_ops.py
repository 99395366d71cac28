"""The ``double`` type and its arithmetic ops, from "Implementing C support
for Types" and "Implementing the arithmetic Ops in C".

The code is the tutorials' (Theano's ``gof`` names mapped to opweave's module
paths). Run it: ``python double_ops.py``.
"""

from __future__ import annotations

import opweave
from opweave.graph.basic import Apply, Constant
from opweave.graph.op import Op
from opweave.graph.type import Type


class Double(Type):
    def filter(self, x, strict=False, allow_downcast=None):
        if strict and not isinstance(x, float):
            raise TypeError("Expected a float!")
        return float(x)

    def values_eq_approx(self, x, y, tolerance=1e-4):
        return abs(x - y) / (x + y) < tolerance

    def __str__(self):
        return "double"

    def c_declare(self, name, sub):
        return """
        double %(name)s;
        """ % dict(name=name)

    def c_init(self, name, sub):
        return """
        %(name)s = 0.0;
        """ % dict(name=name)

    def c_extract(self, name, sub, **kwargs):
        return """
        if (!PyFloat_Check(py_%(name)s)) {
            PyErr_SetString(PyExc_TypeError, "expected a float");
            %(fail)s
        }
        %(name)s = PyFloat_AsDouble(py_%(name)s);
        """ % dict(sub, name=name)

    def c_sync(self, name, sub):
        return """
        Py_XDECREF(py_%(name)s);
        py_%(name)s = PyFloat_FromDouble(%(name)s);
        if (!py_%(name)s) {
            printf("PyFloat_FromDouble failed on: %%f\\n", %(name)s);
            Py_XINCREF(Py_None);
            py_%(name)s = Py_None;
        }
        """ % dict(name=name)

    def c_cleanup(self, name, sub):
        return ""


double = Double()


class BinaryDoubleOp(Op):
    __props__ = ("name", "fn", "ccode")

    def __init__(self, name, fn, ccode):
        self.name = name
        self.fn = fn
        self.ccode = ccode

    def make_node(self, x, y):
        if isinstance(x, (int, float)):
            x = Constant(double, x)
        if isinstance(y, (int, float)):
            y = Constant(double, y)
        if x.type != double or y.type != double:
            raise TypeError("%s only works on doubles" % self.name)
        return Apply(self, [x, y], [double()])

    def perform(self, node, inp, out):
        x, y = inp
        (z,) = out
        z[0] = self.fn(x, y)

    def __str__(self):
        return self.name

    def c_code(self, node, name, inp, out, sub):
        x, y = inp
        (z,) = out
        return self.ccode % locals()


add = BinaryDoubleOp(name="add", fn=lambda x, y: x + y, ccode="%(z)s = %(x)s + %(y)s;")

sub = BinaryDoubleOp(name="sub", fn=lambda x, y: x - y, ccode="%(z)s = %(x)s - %(y)s;")

mul = BinaryDoubleOp(name="mul", fn=lambda x, y: x * y, ccode="%(z)s = %(x)s * %(y)s;")

div = BinaryDoubleOp(name="div", fn=lambda x, y: x / y, ccode="%(z)s = %(x)s / %(y)s;")


def build(mode: str = "C"):
    """``f(x, y, z) = mul(add(x, y), z)``, and a graph using all four ops and a
    constant: ``g(x, y) = div(sub(x, y), add(x, 2.0))``."""
    x, y, z = double("x"), double("y"), double("z")
    f = opweave.function([x, y, z], mul(add(x, y), z), mode=mode)
    g = opweave.function([x, y], div(sub(x, y), add(x, 2.0)), mode=mode)
    return f, g


def main() -> None:
    """Builds and runs the example in C and in Python."""
    for mode in ("C", "py"):
        f, g = build(mode)
        print(f"{mode:>2}: f(1.0, 2.0, 3.0) =", f(1.0, 2.0, 3.0))
        print(f"{mode:>2}: g(5.0, 1.0)      =", g(5.0, 1.0))


if __name__ == "__main__":
    main()
