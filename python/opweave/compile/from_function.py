"""Python functions as ops: :func:`wrap_py` (and the older :func:`as_op`),
importable from :mod:`opweave.compile.ops` as in PyTensor.

The op runs the function in ``perform`` (there is no C code, so
``mode="C"`` graphs need ``c|py`` or ``py`` for it). It pickles by
reference: unpickling imports the module that defines the decorated
function and takes the op from there, so only module-level ops pickle.
"""

from __future__ import annotations

import importlib
import pickle
import warnings
from collections.abc import Callable, Sequence
from typing import Any

from opweave.graph.basic import Apply
from opweave.graph.op import Op

__all__ = ["FromFunctionOp", "as_op", "wrap_py"]

InferShape = Callable[[Apply, list[Any]], list[Any]]


class FromFunctionOp(Op):
    """An op whose ``perform`` calls ``fn(*inputs)``; ``fn`` returns the
    output (or, for several ``otypes``, a sequence of them)."""

    itypes: Sequence[Any]
    otypes: Sequence[Any]

    def __init__(
        self,
        fn: Callable[..., Any],
        itypes: Sequence[Any],
        otypes: Sequence[Any],
        infer_shape: InferShape | None,
    ) -> None:
        self._fn = fn
        self.itypes = list(itypes)
        self.otypes = list(otypes)
        self._infer_shape = infer_shape
        self.__doc__ = getattr(fn, "__doc__", None)

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other) and self._fn == other._fn  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash((type(self), self._fn))

    def __str__(self) -> str:
        return f"FromFunctionOp{{{getattr(self._fn, '__name__', repr(self._fn))}}}"

    def perform(self, node: Apply, inputs: Sequence[Any], output_storage: list[list[Any]]) -> None:
        results = self._fn(*inputs)
        if len(self.otypes) == 1:
            results = [results]
        if len(results) != len(self.otypes):
            raise ValueError(
                f"{self} returned {len(results)} values for {len(self.otypes)} outputs"
            )
        for cell, otype, value in zip(output_storage, self.otypes, results, strict=True):
            cell[0] = otype.filter(value)

    def infer_shape(self, fgraph: Any, node: Apply, input_shapes: list[Any]) -> list[Any]:
        """The ``infer_shape(node, input_shapes)`` given to the decorator."""
        if self._infer_shape is None:
            raise NotImplementedError(f"{self} was given no infer_shape")
        return self._infer_shape(node, input_shapes)

    def __reduce__(self) -> tuple[Any, ...]:
        module = getattr(self._fn, "__module__", None)
        name = getattr(self._fn, "__qualname__", "")
        try:
            found = _load_op(module, name) if module else None
        except (ImportError, AttributeError):
            found = None
        if found is not self:
            raise pickle.PicklingError(
                f"cannot pickle {self}: it must be defined at the top level of a module "
                f"(as {module}.{name})"
            )
        return (_load_op, (module, name))


def _load_op(module: str, qualname: str) -> Any:
    found: Any = importlib.import_module(module)
    for part in qualname.split("."):
        found = getattr(found, part)
    return found


def wrap_py(
    itypes: Any, otypes: Any, infer_shape: InferShape | None = None
) -> Callable[[Callable[..., Any]], FromFunctionOp]:
    """Decorator: the function becomes an op with inputs of ``itypes`` and
    outputs of ``otypes`` (a type or a list of them) that runs it in
    ``perform``. ``infer_shape(node, input_shapes)`` gives the output shapes
    without running it."""
    itypes = list(itypes) if isinstance(itypes, (list, tuple)) else [itypes]
    otypes = list(otypes) if isinstance(otypes, (list, tuple)) else [otypes]
    if infer_shape is not None and not callable(infer_shape):
        raise TypeError(f"infer_shape must be callable, got {infer_shape!r}")

    def decorate(fn: Callable[..., Any]) -> FromFunctionOp:
        return FromFunctionOp(fn, itypes, otypes, infer_shape)

    return decorate


def as_op(
    itypes: Any, otypes: Any, infer_shape: InferShape | None = None
) -> Callable[[Callable[..., Any]], FromFunctionOp]:
    """The older name of :func:`wrap_py`; it warns (FutureWarning), as
    PyTensor's does."""
    warnings.warn("as_op is deprecated; use wrap_py", FutureWarning, stacklevel=2)
    return wrap_py(itypes, otypes, infer_shape)
