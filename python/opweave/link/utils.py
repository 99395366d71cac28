"""Small helpers of PyTensor's ``pytensor.link.utils`` that code driving
linkers uses."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["to_return_values"]


def to_return_values(values: Sequence[Any]) -> Any:
    """The single value of a one-element sequence, else the values as a list."""
    if len(values) == 1:
        return values[0]
    return list(values)
