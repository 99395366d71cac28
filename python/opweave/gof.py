"""Theano-era spellings: ``theano.gof`` code runs with ``opweave.gof``.

``COp`` here is the external-file op (:class:`~opweave.link.c.op.ExternalCOp`),
as Theano's ``gof.COp`` was; an op with C code in methods derives from
:class:`opweave.link.c.op.COp` or from plain ``Op``.
"""

from __future__ import annotations

from opweave.graph.basic import Apply, Constant, Variable
from opweave.graph.op import Op
from opweave.graph.type import Type
from opweave.link.c.interface import CLinkerObject, CLinkerOp, CLinkerType
from opweave.link.c.op import ExternalCOp
from opweave.link.c.op import ExternalCOp as COp
from opweave.link.c.type import CType, Generic, generic

__all__ = [
    "Apply",
    "CLinkerObject",
    "CLinkerOp",
    "CLinkerType",
    "COp",
    "CType",
    "Constant",
    "ExternalCOp",
    "Generic",
    "Op",
    "Type",
    "Variable",
    "generic",
]
