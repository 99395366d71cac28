"""The process's memo of node codes (:mod:`._node_keys`), by signature.

Two nodes with equal signatures (:func:`._node_keys.signature`: op, types,
constants' data, configuration) get the same code from ops whose hooks
depend only on the node, which PyTensor's contract requires (an op's C code
is a function of its props and its node), and on what else the hooks read:
each memoised code carries the dependency list of what its hooks read
(:mod:`._dep_list`), and is computed again when that no longer holds. A code
served from the memo inside a recording (a graph's, whose module exports
it) adds its list to that recording.

The codes of a graph's nodes are computed together (:func:`computed_together`):
one recording around all of them, and one dependency list, which every code
computed there carries (what one node's hooks read counts for all: more
than each needs, never less), so that a graph of N nodes makes one list,
not N.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Collection, Iterator
from typing import Any

from opweave.graph.basic import Apply
from opweave.link.c._context import CONTEXT
from opweave.link.c._dep_collect import collect
from opweave.link.c._dep_window import include, recording
from opweave.link.c._node_keys import NodeCode, memo_snapshot, signature
from opweave.link.c.kernels import code_op

__all__ = ["computed_together", "node_code"]

# At most this many node codes in CONTEXT.node_codes (each holds its
# export's text), so that a long-lived process does not grow.
_MEMO_SIZE = 4096


class _Together:
    """The codes computed in a computed_together block, and their classes."""

    def __init__(self) -> None:
        self.codes: dict[Any, NodeCode] = {}  # signature -> code, not yet memoised
        self.classes: set[type] = set()


def node_code(
    node: Apply,
    compute: Callable[[Apply, Collection[int]], NodeCode],
    given: Collection[int] = (),
) -> NodeCode:
    """The code of ``node``: from the memo while the dependency list of its
    hooks holds, or ``compute(node, given)`` (which raises MissingCCode for
    a node without C code). ``given``: the ids of constants the graph takes
    as inputs (their values are passed)."""
    given = {id(v) for v in node.inputs if id(v) in given}
    key = signature(node, memo_snapshot(), given)
    if key is None:
        return compute(node, given)
    found = CONTEXT.node_codes.get(key)
    if found is not None and found.dependencies is not None:
        if not found.dependencies.check_here():
            include(found.dependencies)
            return found
        del CONTEXT.node_codes[key]
    classes = {type(node.op), type(code_op(node))}
    classes.update(type(v.type) for v in [*node.inputs, *node.outputs])
    if CONTEXT.node_blocks:  # memoised when the block ends, with its list
        together = CONTEXT.node_blocks[-1]
        found = together.codes.get(key)
        if found is None:
            found = together.codes[key] = compute(node, given)
            together.classes.update(classes)
        return found
    with computed_together():
        return node_code(node, compute, given)


@contextlib.contextmanager
def computed_together() -> Iterator[None]:
    """Node codes computed in the block share one recording and one
    dependency list (see the top)."""
    together = _Together()
    CONTEXT.node_blocks.append(together)
    try:
        with recording() as seen:
            yield
    finally:
        CONTEXT.node_blocks.remove(together)
    dependencies = collect(seen, together.classes) if together.codes else None
    if dependencies is None:
        return
    for key, code in together.codes.items():
        CONTEXT.node_codes[key] = code._replace(dependencies=dependencies)
        if len(CONTEXT.node_codes) > _MEMO_SIZE:
            del CONTEXT.node_codes[next(iter(CONTEXT.node_codes))]
