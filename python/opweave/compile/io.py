"""``Out``: an output of :func:`opweave.function` with options (PyTensor's
``pytensor.Out``)."""

from __future__ import annotations

from typing import Any

from opweave.graph.basic import Variable

__all__ = ["Out"]


class Out:
    """``variable`` as an output of a function. ``borrow=True`` lets the
    function return storage it may reuse on the next call; opweave accepts
    it and returns a value the caller owns either way (compiled graphs
    hand their outputs over)."""

    def __init__(self, variable: Variable, borrow: bool = False) -> None:
        if not isinstance(variable, Variable):
            raise TypeError(f"Out() takes a variable, got {type(variable).__name__}")
        self.variable = variable
        self.borrow = borrow

    def __repr__(self) -> str:
        return f"Out({self.variable}, borrow={self.borrow})"


def output_variable(output: Any) -> Any:
    """The variable of an output given to :func:`opweave.function`."""
    return output.variable if isinstance(output, Out) else output
