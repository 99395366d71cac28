"""A second graph library, minimal, written for the tests: its own variables,
constants, apply nodes, function graph, ops and "not defined" exception,
none of them opweave's classes (only the types are opweave's, a type being
a protocol object). It follows the protocol of docs/pytensor-compat.md
("Graphs from other libraries"), the way PyTensor's graph classes do:

- ``clients`` is keyed by variable objects (not ids), with ``("output", i)``
  entries for the graph's outputs;
- ``variables`` and ``apply_nodes`` are sets;
- a constant is an ownerless variable with ``data`` and ``signature()``,
  whose ``clone()`` returns itself;
- the ops' base class raises :class:`NotDefined` for hooks it does not
  define (``get_params``, ``c_code_cleanup``, ...), not opweave's
  ``MethodNotDefined``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from opweave.scalar import float64
from opweave.tensor.type import TensorType

__all__ = [
    "Add",
    "Const",
    "Graph",
    "Mul",
    "Node",
    "NotDefined",
    "PyOnly",
    "Scale",
    "Var",
    "add",
    "mul",
    "vector",
]


class NotDefined(Exception):
    """This library's "method not defined" (not a NotImplementedError)."""


class Var:
    """A variable: ``type``, ``owner``, ``index``, ``name``."""

    def __init__(
        self,
        type: Any,
        owner: Node | None = None,
        index: int | None = None,
        name: str | None = None,
    ) -> None:
        self.type, self.owner, self.index, self.name = type, owner, index, name
        self.tag: dict[str, Any] = {}

    def clone(self, **kwargs: Any) -> Var:
        """A new ownerless variable of the same class and type."""
        return type(self)(self.type, None, None, kwargs.get("name", self.name))

    def __str__(self) -> str:
        return self.name or f"<foreign {self.type}>"


class Const(Var):
    """A constant: ``data`` filtered by its type."""

    def __init__(self, type: Any, data: Any, name: str | None = None) -> None:
        super().__init__(type, None, None, name)
        self.data = type.filter(data)

    def signature(self) -> tuple[Any, Any]:
        """The type and the value."""
        return (self.type, self.data)

    def clone(self, **kwargs: Any) -> Const:
        """The constant itself, as PyTensor's constants do."""
        return self


class Node:
    """An apply node; accepts only this library's variables."""

    def __init__(self, op: Any, inputs: Sequence[Any], outputs: Sequence[Any]) -> None:
        for variable in [*inputs, *outputs]:
            if not isinstance(variable, Var):
                raise TypeError(f"not a foreign variable: {variable!r}")
        self.op, self.inputs, self.outputs = op, list(inputs), list(outputs)
        for index, output in enumerate(self.outputs):
            if output.owner is not None and output.owner is not self:
                raise ValueError(f"{output} already has an owner")
            output.owner, output.index = self, index

    def __str__(self) -> str:
        return f"{type(self.op).__name__}({', '.join(map(str, self.inputs))})"


class Clients(dict):
    """Clients keyed by variable objects; looking one up by anything else (an
    ``id``) is an error, where a plain dict would quietly find nothing."""

    def _check(self, key: Any) -> None:
        if not isinstance(key, Var):
            raise TypeError(f"clients are keyed by variables, not {type(key).__name__}")

    def __getitem__(self, key: Any) -> Any:
        self._check(key)
        return super().__getitem__(key)

    def get(self, key: Any, default: Any = None) -> Any:
        self._check(key)
        return super().get(key, default)

    def __contains__(self, key: Any) -> bool:
        self._check(key)
        return super().__contains__(key)


class Graph:
    """A function graph: sets of nodes and variables, clients by variable."""

    def __init__(self, inputs: Sequence[Var], outputs: Sequence[Var]) -> None:
        self.inputs, self.outputs = list(inputs), list(outputs)
        self._order: list[Node] = []
        self.clients = Clients()
        self.variables: set[Var] = set(self.inputs)
        for output in self.outputs:
            self._visit(output)
        for position, output in enumerate(self.outputs):
            self.clients.setdefault(output, []).append(("output", position))
        self.apply_nodes = set(self._order)

    def _visit(self, variable: Var) -> None:
        self.variables.add(variable)
        node = variable.owner
        if node is None or variable in self.inputs or node in self._order:
            return
        for position, parent in enumerate(node.inputs):
            self._visit(parent)
            self.clients.setdefault(parent, []).append((node, position))
        self.variables.update(node.outputs)
        self._order.append(node)

    def toposort(self) -> list[Node]:
        """The nodes, each after those computing its inputs."""
        return list(self._order)


class ForeignOp:
    """The ops' base class: every optional C hook raises NotDefined."""

    __props__: tuple[str, ...] = ()
    nout = 1

    def __call__(self, *inputs: Var) -> Var:
        return self.make_node(*inputs).outputs[0]

    def make_node(self, *inputs: Var) -> Node:
        """Outputs of the first input's type."""
        return Node(self, inputs, [Var(inputs[0].type) for _ in range(self.nout)])

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other) and all(
            getattr(self, p) == getattr(other, p) for p in self.__props__
        )

    def __hash__(self) -> int:
        return hash((type(self), *(getattr(self, p) for p in self.__props__)))

    def __str__(self) -> str:
        return type(self).__name__

    def get_params(self, node: Node) -> Any:
        raise NotDefined("get_params")

    def c_code(self, node: Node, name: str, inputs: list[str], outputs: list[str], sub: Any) -> str:
        raise NotDefined("c_code")

    def c_code_cleanup(self, *args: Any, **kwargs: Any) -> str:
        raise NotDefined("c_code_cleanup")

    def c_support_code_apply(self, node: Node, name: str) -> str:
        raise NotDefined("c_support_code_apply")

    def c_init_code_struct(self, node: Node, name: str, sub: Any) -> str:
        raise NotDefined("c_init_code_struct")

    def c_headers(self, **kwargs: Any) -> list[str]:
        raise NotDefined("c_headers")

    def c_code_cache_version(self) -> tuple[int, ...]:
        return (1,)


def _elementwise(x: str, y: str, z: str, fail: str, expression: str) -> str:
    """C code: ``z`` = a new float64 array of ``x``'s shape whose element i
    is ``expression`` (of ``a`` = x[i] and ``b`` = y[i])."""
    return f"""
    Py_XDECREF({z});
    {z} = (PyArrayObject*)PyArray_NewCopy({x}, NPY_CORDER);
    if (!{z}) {fail}
    if (PyArray_SIZE({y}) != PyArray_SIZE({z})) {{
        PyErr_SetString(PyExc_ValueError, "foreign op: sizes differ");
        {fail}
    }}
    for (npy_intp i = 0; i < PyArray_SIZE({z}); ++i) {{
        const double a = ((double*)PyArray_DATA({z}))[i];
        const double b = *(double*)PyArray_GETPTR1({y}, i);
        ((double*)PyArray_DATA({z}))[i] = {expression};
    }}
    """


class Add(ForeignOp):
    """x + y (float64 vectors); its helper lives in c_support_code."""

    def perform(self, node: Node, inputs: list[Any], outputs: list[list[Any]]) -> None:
        outputs[0][0] = np.asarray(inputs[0] + inputs[1], dtype="float64")

    def c_support_code(self, **kwargs: Any) -> str:
        return "static double foreign_add(double a, double b) { return a + b; }\n"

    def c_code(self, node: Node, name: str, inputs: list[str], outputs: list[str], sub: Any) -> str:
        return _elementwise(*inputs, outputs[0], sub["fail"], "foreign_add(a, b)")


class Mul(ForeignOp):
    """x * y (float64 vectors)."""

    def perform(self, node: Node, inputs: list[Any], outputs: list[list[Any]]) -> None:
        outputs[0][0] = np.asarray(inputs[0] * inputs[1], dtype="float64")

    def c_code(self, node: Node, name: str, inputs: list[str], outputs: list[str], sub: Any) -> str:
        return _elementwise(*inputs, outputs[0], sub["fail"], "a * b")


class Scale(ForeignOp):
    """factor * x, the factor passed as the op's params (a float64)."""

    __props__ = ("factor",)
    params_type = float64

    def __init__(self, factor: float) -> None:
        self.factor = float(factor)

    def get_params(self, node: Node) -> Any:
        return np.float64(self.factor)

    def perform(self, node: Node, inputs: list[Any], outputs: list[list[Any]], params: Any) -> None:
        outputs[0][0] = np.asarray(params * inputs[0], dtype="float64")

    def c_code(self, node: Node, name: str, inputs: list[str], outputs: list[str], sub: Any) -> str:
        (x,), (z,), fail, factor = inputs, outputs, sub["fail"], sub["params"]
        return _elementwise(x, x, z, fail, f"{factor} * a")


class PyOnly(ForeignOp):
    """x - 1, in Python only (its c_code raises NotDefined)."""

    def perform(self, node: Node, inputs: list[Any], outputs: list[list[Any]]) -> None:
        outputs[0][0] = np.asarray(inputs[0] - 1.0, dtype="float64")


def vector(name: str) -> Var:
    """A float64 vector input of this library."""
    return Var(TensorType("float64", shape=(None,)), name=name)


add, mul = Add(), Mul()
