"""The dual linker: every node runs both in C (where it has C code) and in
Python, and a checker compares the two results (PyTensor's
``DualLinker``, importable from :mod:`opweave.link.c.basic`)."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from opweave import _core
from opweave.graph.basic import Variable, is_constant
from opweave.graph.fg import FunctionGraph
from opweave.link._debug_errors import BadThunkOutput
from opweave.link.basic import python_thunk
from opweave.link.c._regions import any_thunk
from opweave.link.callable import InputBinding
from opweave.link.thunk import Linker

__all__ = ["DualLinker", "default_checker"]

Checker = Callable[[list[Any], list[Any]], None]


def default_checker(perform: list[Any], c: list[Any]) -> None:
    """DebugMode's comparison: BadThunkOutput when the values differ by the
    output type's ``values_eq_approx``. ``perform`` and ``c`` are the two
    storage cells of one output; the variable is ``perform.variable``."""
    variable = getattr(perform, "variable", None)
    if variable is not None and not variable.type.values_eq_approx(perform[0], c[0]):
        raise BadThunkOutput(variable, "perform", perform[0], "c_code", c[0])


class _Cell(list):  # type: ignore[type-arg]
    """A one-value storage cell that knows its variable."""

    def __init__(self, value: Any, variable: Variable) -> None:
        super().__init__([value])
        self.variable = variable


class DualLinker(Linker):
    """Runs each node through ``perform`` and through its C code, each on
    its own copy of the values (the Python side on deep copies of the
    inputs), and calls ``checker(perform_cell,
    c_cell)`` per output (one-element lists; a checker raises to report a
    mismatch). The function returns the C results."""

    def __init__(self, checker: Checker = default_checker, schedule: Any = None) -> None:
        self.checker = checker
        self.fgraph: FunctionGraph | None = None
        self.schedule = schedule

    def make_function(self, binding: InputBinding, single: bool) -> Any:
        """Each node both ways, checked, in :meth:`order`. Every node runs
        on fresh output storage, so nothing is recycled between calls."""
        run = self._run(self.bound_graph())

        def call(*args: Any, **kwargs: Any) -> list[Any]:
            values = binding.bind(args, kwargs)
            return run(*[binding.filter_one(p, v) for p, v in enumerate(values)])

        return _core.Function(impl=call, unpack_single=single)

    def _run(self, fgraph: FunctionGraph) -> Callable[..., list[Any]]:
        nodes = self.order()
        c_thunks = [any_thunk(node, i) for i, node in enumerate(nodes)]
        py_thunks = [python_thunk(node, i) for i, node in enumerate(nodes)]
        checker = self.checker

        def run(*values: Any) -> list[Any]:
            # Each side works on its own copy of the inputs: a node that
            # destroys one must not change what the other side reads.
            c_values = {id(v): value for v, value in zip(fgraph.inputs, values, strict=True)}
            py_values = {key: copy.deepcopy(value) for key, value in c_values.items()}
            for node, c_thunk, py_thunk in zip(nodes, c_thunks, py_thunks, strict=True):
                py_out = py_thunk(_inputs(node, py_values))
                c_out = c_thunk(_inputs(node, c_values))
                for variable, a, b in zip(node.outputs, py_out, c_out, strict=True):
                    checker(_Cell(a, variable), _Cell(b, variable))
                    py_values[id(variable)], c_values[id(variable)] = a, b
            return [_value(v, c_values) for v in fgraph.outputs]

        return run


def _inputs(node: Any, values: dict[int, Any]) -> list[Any]:
    """The values of ``node``'s inputs; a constant the node destroys is
    given as a copy (a constant never changes)."""
    destroyed = {
        i for inputs in (getattr(node.op, "destroy_map", None) or {}).values() for i in inputs
    }
    return [
        copy.deepcopy(_value(v, values)) if k in destroyed and is_constant(v) else _value(v, values)
        for k, v in enumerate(node.inputs)
    ]


def _value(variable: Variable, values: dict[int, Any]) -> Any:
    if id(variable) in values:
        return values[id(variable)]
    if is_constant(variable):
        return variable.data
    raise KeyError(f"no value for {variable}")
