"""``In`` and ``Out``: an input and an output of :func:`opweave.function`
with options (PyTensor's ``pytensor.In`` and ``pytensor.Out``)."""

from __future__ import annotations

from typing import Any

from opweave.graph.basic import Variable, is_variable

__all__ = ["In", "Out"]


class In:
    """``variable`` as an input of a function. ``mutable=True`` lets the
    function overwrite the caller's value in place, when an in-place op
    destroys that input; otherwise (the default) such an op works on a
    copy, and the caller's value never changes. Keyword arguments use the
    variable's name (a different ``name`` is not supported). ``borrow``,
    ``strict``, ``allow_downcast`` and ``autoname`` are accepted for
    PyTensor's signature; ``value``, ``update`` and ``implicit`` (inputs
    with defaults or updates) are not supported: use shared variables."""

    def __init__(
        self,
        variable: Variable,
        name: str | None = None,
        value: Any = None,
        update: Any = None,
        mutable: bool | None = None,
        strict: bool = False,
        allow_downcast: bool | None = None,
        autoname: bool = True,
        implicit: bool | None = None,
        borrow: bool | None = None,
        shared: bool = False,
    ) -> None:
        if not is_variable(variable):  # opweave's, or another library's
            raise TypeError(f"In() takes a variable, got {type(variable).__name__}")
        if value is not None or update is not None or implicit or shared:
            raise NotImplementedError(
                "In(value=..., update=..., implicit=..., shared=...) is not supported by "
                "opweave; use a shared variable and updates"
            )
        if name is not None and name != variable.name:
            raise NotImplementedError("In(name=...) other than the variable's name")
        self.variable = variable
        self.name = name if name is not None else variable.name
        self.mutable = bool(mutable)
        self.borrow = bool(borrow) or self.mutable
        self.strict = strict
        self.allow_downcast = allow_downcast
        self.autoname = autoname

    def __repr__(self) -> str:
        return f"In({self.variable}, mutable={self.mutable})"


class Out:
    """``variable`` as an output of a function. ``borrow=True`` lets the
    function return storage it may reuse on the next call; opweave accepts
    it and returns a value the caller owns either way (compiled graphs
    hand their outputs over)."""

    def __init__(self, variable: Variable, borrow: bool = False) -> None:
        if not is_variable(variable):  # opweave's, or another library's
            raise TypeError(f"Out() takes a variable, got {type(variable).__name__}")
        self.variable = variable
        self.borrow = borrow

    def __repr__(self) -> str:
        return f"Out({self.variable}, borrow={self.borrow})"


def input_variable(given: Any) -> Any:
    """The variable of an input given to :func:`opweave.function`."""
    return given.variable if isinstance(given, In) else given


def output_variable(output: Any) -> Any:
    """The variable of an output given to :func:`opweave.function`."""
    return output.variable if isinstance(output, Out) else output
