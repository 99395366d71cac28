"""Tensors: :class:`TensorType` (NumPy arrays; ``PyArrayObject*`` in C), its
variables and constants, the constructors (``vector``, ``dmatrix``, ...) and
:func:`as_tensor_variable` / :func:`constant`."""

from __future__ import annotations

from opweave.tensor import constructors as _constructors
from opweave.tensor.basic import as_tensor_variable, constant
from opweave.tensor.constructors import *  # noqa: F403  (every constructor, by its __all__)
from opweave.tensor.type import TensorType
from opweave.tensor.variable import TensorConstant, TensorVariable

__all__ = [
    "TensorConstant",
    "TensorType",
    "TensorVariable",
    "as_tensor_variable",
    "constant",
    *_constructors.__all__,
]
