"""Runs one op with a memory error or undefined behaviour, for the sanitizer
tests: ``python sanitize_worker.py <cache dir> <case>``, in a process started
with the environment ``python -m opweave sanitize-env`` prints.

Cases: ``one_past_the_end`` (a heap write one element past an array's end),
``overflow`` (a signed overflow in ``c_code``), ``external_overflow`` (the same
in an ExternalCOp's ``.c`` file). Prints ``source <path>`` before running.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

import opweave
import opweave.tensor as pt
from opweave.graph.basic import Apply
from opweave.link.c.op import COp, ExternalCOp

DATA = Path(__file__).parent / "data"


class CopyThen(COp):
    """``z`` = a copy of ``x``, then the C statements of ``after``."""

    __props__ = ()
    after = ""

    def make_node(self, x):
        return Apply(self, [x], [x.type()])

    def c_code(self, node, name, inp, out, sub):
        (x,), (z,) = inp, out
        body = self.after % {"z": z}
        return f"""
        Py_XDECREF({z});
        {z} = (PyArrayObject*)PyArray_NewCopy({x}, NPY_CORDER);
        if (!{z}) {sub["fail"]}
        {{
        {body}
        }}
        """


class OnePastTheEnd(CopyThen):
    after = """
        npy_intp n = PyArray_SIZE(%(z)s);
        double* data = (double*)PyArray_DATA(%(z)s);
        for (npy_intp i = 0; i <= n; ++i) data[i] = 1.0;  /* one past the end */
    """


class Overflow(CopyThen):
    after = """
        int total = 2147483600 + (int)PyArray_SIZE(%(z)s);
        for (int i = 0; i < 100; ++i) total += 1;  /* signed overflow */
        ((npy_int32*)PyArray_DATA(%(z)s))[0] = total;
    """


class ExternalOverflow(ExternalCOp):
    __props__ = ()

    def __init__(self):
        super().__init__(str(DATA / "overflow_op.c"), "APPLY_SPECIFIC(overflowing_copy)")

    def make_node(self, x):
        return Apply(self, [x], [x.type()])


def main() -> None:
    opweave.config.compiledir = sys.argv[1]
    case = sys.argv[2]
    if case == "one_past_the_end":
        x, value = pt.dvector("x"), np.zeros(5)
        op = OnePastTheEnd()
    else:
        x, value = pt.ivector("x"), np.zeros(3, dtype="int32")
        op = Overflow() if case == "overflow" else ExternalOverflow()
    f = opweave.function([x], op(x))
    print("source", f.source, flush=True)
    print("result", f(value).tolist(), flush=True)


if __name__ == "__main__":
    main()
