"""A child process that compiles and runs a graph through ``opweave.function``.

Run as ``python graph_worker.py CACHE_ROOT MODE GRAPH [EXTRA]``; prints one
JSON line: the graph's result, whether it matches NumPy, the module outcomes,
and every log record of the ``opweave`` logger (INFO and up).

GRAPH is ``vtv:N`` (a chain of N VectorTimesVector ops; two graphs with
different N are different modules), ``scaled:K`` (one op multiplying by the
constant K written into its C code: a small module of its own for each K),
``units:N`` (a chain of N ``scaled`` ops, K = 1..N: N distinct codes, in
compile units when N reaches ``cmodule__unit_threshold``),
``header:DIR`` (an op whose C code uses the macro OPW_VALUE from
``opw_value.h`` found through DIR), or ``slow`` (a VectorTimesVector whose
compile the test slows down with its own compiler). MODE is an opweave mode
("C", "c|py"). With ``--many``, GRAPH is a comma-separated list: each graph
is compiled and run in turn, and the report lists what went wrong instead of
stopping at the first failure.

A KeyboardInterrupt is re-raised (the process dies of SIGINT, as Python
does), after one line on stderr, ``interrupted at T``: T is time.monotonic()
when the exception reached main(). CLOCK_MONOTONIC is one clock for every
process on Linux, so a test compares T with the time it sent the signal.
"""

from __future__ import annotations

import json
import logging
import sys
import time
from typing import Any

import numpy as np

import opweave
from opweave.graph.basic import Apply
from opweave.link.c.op import COp


class ScaleBy(COp):
    """z = x * factor(), where factor() is a C expression: the base of the
    test ops below, which differ in where the factor comes from."""

    def make_node(self, x: Any) -> Apply:
        return Apply(self, [x], [x.type()])

    def factor(self) -> str:
        raise NotImplementedError

    def c_code(self, node: Any, name: str, inp: list[str], out: list[str], sub: dict) -> str:
        (x,), (z,) = inp, out
        return f"""
        Py_XDECREF({z});
        {z} = (PyArrayObject*)PyArray_NewCopy({x}, NPY_CORDER);
        if (!{z}) {{ {sub["fail"]} }}
        for (npy_intp i = 0; i < PyArray_SIZE({z}); ++i)
            ((npy_float64*)PyArray_DATA({z}))[i] *= {self.factor()};
        """

    def c_code_cache_version(self) -> tuple[int]:
        return (1,)  # never bumped: the key covers the code anyway


class HeaderValue(ScaleBy):
    """z = x * OPW_VALUE, OPW_VALUE from opw_value.h in `header_dir`."""

    __props__ = ("header_dir",)

    def __init__(self, header_dir: str) -> None:
        self.header_dir = header_dir

    def c_header_dirs(self, **kwargs: Any) -> list[str]:
        return [self.header_dir]

    def c_headers(self, **kwargs: Any) -> list[str]:
        return ["<opw_value.h>"]

    def factor(self) -> str:
        return "OPW_VALUE"


class Scaled(ScaleBy):
    """z = x * K, K written into the C code."""

    __props__ = ("constant",)

    def __init__(self, constant: int) -> None:
        self.constant = constant

    def factor(self) -> str:
        return str(self.constant)


class Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.records: list[dict[str, str]] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append({"level": record.levelname, "message": record.getMessage()})


def build(graph: str) -> tuple[Any, list[Any], Any, Any]:
    """The function's inputs, outputs, call arguments and expected result."""
    from opweave.examples.vector_times_vector import VectorTimesVector

    x, y = opweave.tensor.dvector("x"), opweave.tensor.dvector("y")
    values = (np.array([1.0, 2.0, 3.0]), np.array([2.0, 0.5, -1.0]))
    kind, _, arg = graph.partition(":")
    if kind == "vtv":
        out = x
        for _ in range(int(arg)):
            out = VectorTimesVector()(out, y)
        return [x, y], out, values, values[0] * values[1] ** int(arg)
    if kind == "scaled":
        return [x], Scaled(int(arg))(x), values[:1], values[0] * int(arg)
    if kind == "units":
        out = x
        for k in range(1, int(arg) + 1):
            out = Scaled(k)(out)
        return [x], out, values[:1], values[0] * float(np.prod(np.arange(1.0, int(arg) + 1)))
    if kind == "header":
        return [x], HeaderValue(arg)(x), values[:1], None
    if kind == "slow":
        return [x, y], VectorTimesVector()(x, y), values, values[0] * values[1]
    raise SystemExit(f"unknown graph {graph}")


def run_many(mode: str, graphs: list[str], handler: Records) -> None:
    """Each graph in turn; reports every failure instead of stopping."""
    errors, wrong = [], []
    for graph in graphs:
        try:
            inputs, outputs, values, expected = build(graph)
            result = opweave.function(inputs, outputs, mode=mode)(*values)
            if not np.allclose(result, expected):
                wrong.append(graph)
        except Exception as error:
            errors.append(f"{graph}: {type(error).__name__}: {error}")
    print(json.dumps({"errors": errors, "wrong": wrong, "logs": handler.records}), flush=True)


def run(argv: list[str]) -> None:
    many = argv[1] == "--many"
    root, mode, graph = argv[1 + many : 4 + many]
    opweave.config.compiledir = root
    handler = Records()
    logger = logging.getLogger("opweave")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    if many:
        run_many(mode, graph.split(","), handler)
        return
    inputs, outputs, values, expected = build(graph)
    function = opweave.function(inputs, outputs, mode=mode)
    result = np.asarray(function(*values))
    outcomes = getattr(function, "node_outcomes", None)
    print(
        json.dumps(
            {
                "result": result.tolist(),
                "right": expected is None or bool(np.allclose(result, expected)),
                "outcomes": outcomes if outcomes is not None else [function.cache_outcome],
                "logs": handler.records,
            }
        ),
        flush=True,
    )


INTERRUPTED_AT = "interrupted at "


def main() -> None:
    try:
        run(sys.argv)
    except KeyboardInterrupt:
        print(f"{INTERRUPTED_AT}{time.monotonic():.6f}", file=sys.stderr, flush=True)
        raise


if __name__ == "__main__":
    main()
