"""The graphs of bench_scaling.py, built with either backend's C-op API.

Every graph is made of the seed tutorial's VectorTimesScalar, or of a variant
whose C text multiplies by a constant of its own (`ScaledVectorTimesScalar(k)`),
so that two variants are two different codes:
- chainN: N nodes of one op in a chain;
- wideN: N vector inputs and one shared scalar, N outputs, one op;
- kchainAN: a chain of N different ops (k = 1..N);
- kchainBN: kchainAN with its last 5 ops changed (k = N+1..N+5);
- kchainSN, kchainMN, kchainPN: kchainAN with 5 ops changed at its start,
  in its middle, and spread over it (at N/10, 3N/10, ..., 9N/10), each to
  ops of its own (k = N+11.., N+21.., N+31..): the edits of bench_scaling.py;
- kaloneN: the 5 new ops of kchainPN alone, in a chain (what the spread edit
  compiles, as a graph of its own);
- pychainN: a chain of N nodes whose middle node has no C code (for `c|py`).

and the graphs of issue 24 (bench_reuse.py builds them in this order, in one
process, to see how much of what it compiled a backend reuses):
- rchainAN: a chain of N different ops (k = 1..N), like kchainAN;
- rchainRN: the same N ops rewired in reverse order (k = N..1);
- rtwoN: N of those ops (k = 1..N) on two vector inputs: two chains of N/2,
  x1 through k = 1..N/2 and x2 through k = N/2+1..N, with both outputs;
- rchainCN: a chain of N other ops (k = 101..100+N);
- rmixN: the first N/2 ops of rchainAN (k = 1..N/2) followed by the last N/2
  of rchainCN (k = 101+N/2..100+N), each at the position it had there;
- rnewN: a chain of N ops never built before (k = 201..200+N);
- rfreshN: another such chain (k = 301..300+N), which bench_reuse.py builds
  in C mode, whose modules export nothing: the first build rnewN is
  compared with;
- pymidN: a chain of N distinct ops whose node N/2 (from 0) is the Python-only
  one and the others ScaledVectorTimesScalar(k) with k = their position + 1.
"""

from __future__ import annotations

from collections.abc import Iterable
from types import SimpleNamespace
from typing import Any

from backends import import_backend

__all__ = ["build", "import_backend", "make_ops"]


_C_CODE = """
if (NULL == %(z)s || PyArray_DIMS(%(x)s)[0] != PyArray_DIMS(%(z)s)[0]) {
    Py_XDECREF(%(z)s);
    %(z)s = (PyArrayObject*)PyArray_EMPTY(1, PyArray_DIMS(%(x)s), PyArray_TYPE(%(x)s), 0);
    if (!%(z)s) {
        %(fail)s;
    }
}
{
    npy_float64* x_data = (npy_float64*)PyArray_DATA(%(x)s);
    npy_float64* z_data = (npy_float64*)PyArray_DATA(%(z)s);
    npy_float64 y_value = ((npy_float64*)PyArray_DATA(%(y)s))[0] * %(k)s;
    int x_stride = PyArray_STRIDES(%(x)s)[0] / 8;
    int z_stride = PyArray_STRIDES(%(z)s)[0] / 8;
    int n = PyArray_DIMS(%(x)s)[0];
    for (int i = 0; i < n; i++) {
        z_data[i * z_stride] = x_data[i * x_stride] * y_value;
    }
}
"""


def make_ops(api: SimpleNamespace) -> SimpleNamespace:
    """The ops, built on `api`'s COp and Op (once per process)."""
    if "PythonScale" in globals():
        return SimpleNamespace(
            scaled=globals()["ScaledVectorTimesScalar"], python=globals()["PythonScale"]
        )

    class ScaledVectorTimesScalar(api.op.COp):
        __props__ = ("k",)

        def __init__(self, k: int = 1) -> None:
            self.k = k

        def make_node(self, x: Any, y: Any) -> Any:
            return api.basic.Apply(self, [x, y], [x.type()])

        def perform(self, node: Any, inputs: Any, output_storage: Any) -> None:
            x, y = inputs
            output_storage[0][0] = x * y * self.k

        def c_code_cache_version(self) -> tuple[int, ...]:
            return (1,)

        def c_code(self, node: Any, name: str, inp: Any, out: Any, sub: Any) -> str:
            (x, y), (z,) = inp, out
            return _C_CODE % {"x": x, "y": y, "z": z, "k": f"{self.k}.0", "fail": sub["fail"]}

    class PythonScale(api.graph_op.Op):
        """A node with no C code: `c|py` runs its perform."""

        __props__ = ()

        def make_node(self, x: Any, y: Any) -> Any:
            return api.basic.Apply(self, [x, y], [x.type()])

        def perform(self, node: Any, inputs: Any, output_storage: Any) -> None:
            x, y = inputs
            output_storage[0][0] = x * y

    # PyTensor pickles ops into its cache: make them importable from here.
    for cls in (ScaledVectorTimesScalar, PythonScale):
        cls.__qualname__ = cls.__name__
        cls.__module__ = __name__
        globals()[cls.__name__] = cls
    return SimpleNamespace(scaled=ScaledVectorTimesScalar, python=PythonScale)


# The edited kchains: the positions of their 5 changed ops, and the first k
# of the ops that replace them.
EDITED = {
    "kchainS": lambda n: range(5),
    "kchainM": lambda n: range(n // 2 - 2, n // 2 + 3),
    "kchainP": lambda n: [n * i // 10 for i in (1, 3, 5, 7, 9)],
}
EDIT_K = {"kchainS": 11, "kchainM": 21, "kchainP": 31}


def build(api: SimpleNamespace, graph: str) -> tuple[list[Any], list[Any]]:
    """The inputs and outputs of the graph named `graph` (see the top)."""
    ops = make_ops(api)
    x, s = api.tensor.dvector("x"), api.tensor.dscalar("s")
    kind = graph.rstrip("0123456789")
    n = int(graph[len(kind) :])
    if kind == "wide":
        xs = [api.tensor.dvector(f"x{i}") for i in range(n)]
        op = ops.scaled(1)
        return [*xs, s], [op(v, s) for v in xs]
    if kind == "rtwo":
        x2 = api.tensor.dvector("x2")
        half = n // 2
        return [x, x2, s], [
            chain(ops, x, s, range(1, half + 1)),
            chain(ops, x2, s, range(half + 1, n + 1)),
        ]
    if kind == "chain":
        ks = [1] * n
    elif kind in ("kchainA", "rchainA"):
        ks = list(range(1, n + 1))
    elif kind == "rchainR":
        ks = list(range(n, 0, -1))
    elif kind == "rchainC":
        ks = list(range(101, 101 + n))
    elif kind == "rmix":
        ks = list(range(1, n // 2 + 1)) + list(range(101 + n // 2, 101 + n))
    elif kind == "rnew":
        ks = list(range(201, 201 + n))
    elif kind == "rfresh":
        ks = list(range(301, 301 + n))
    elif kind == "kchainB":
        ks = list(range(1, n - 4)) + list(range(n + 1, n + 6))
    elif kind == "kalone":
        ks = [n + EDIT_K["kchainP"] + offset for offset in range(5)]
    elif kind in EDITED:
        ks = list(range(1, n + 1))
        for offset, position in enumerate(EDITED[kind](n)):
            ks[position] = n + EDIT_K[kind] + offset
    elif kind in ("pychain", "pymid"):
        y = x
        for i in range(n):
            op = ops.scaled(1 if kind == "pychain" else i + 1)
            y = (ops.python() if i == n // 2 else op)(y, s)
        return [x, s], [y]
    else:
        raise ValueError(f"unknown graph {graph!r}")
    return [x, s], [chain(ops, x, s, ks)]


def chain(ops: SimpleNamespace, x: Any, s: Any, ks: Iterable[int]) -> Any:
    """`x` through ScaledVectorTimesScalar(k) for each k of `ks` in turn, with `s`."""
    y = x
    for k in ks:
        y = ops.scaled(k)(y, s)
    return y
