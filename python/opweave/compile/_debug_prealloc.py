"""The preallocated outputs DebugMode offers a node's thunks.

A thunk is run again with each output's storage set in advance, as the
per-node runtime does between calls, and its results must equal the
reference run's. Each kind builds the offered storage from the reference
value (an ndarray; other values get only ``previous``):

- ``previous``: the thunk's outputs of the previous call (a copy of the
  reference on the first call);
- ``c_contiguous`` and ``f_contiguous``: new arrays of the right shape in that
  order;
- ``strided``: a view taking every other element of a bigger array;
- ``wrong_size``: arrays one longer, then one shorter, along every axis
  whose length the type does not fix.

New storage is filled with garbage (NaN for floats, the largest value for
integers), so an op that assumes a zeroed buffer, or writes only part of a
reused one, gives a different result.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

__all__ = ["KINDS", "offered_outputs", "parse_kinds"]

KINDS = ("previous", "c_contiguous", "f_contiguous", "strided", "wrong_size")


def parse_kinds(kinds: Any) -> tuple[str, ...]:
    """The kinds a ``check_preallocated_output`` value asks for, in order;
    ``["ALL"]`` means every kind. ValueError for an unknown kind."""
    if kinds is None:
        return ()
    if isinstance(kinds, str):
        kinds = [k for k in kinds.split(":") if k]
    chosen: list[str] = []
    for kind in kinds:
        if kind == "ALL":
            chosen.extend(KINDS)
        elif kind == "initial":  # PyTensor's name for "nothing offered": the reference run
            continue
        elif kind in KINDS:
            chosen.append(kind)
        else:
            raise ValueError(
                f"unknown preallocated output kind {kind!r}; expected some of "
                f"{', '.join(KINDS)}, or 'ALL'"
            )
    return tuple(dict.fromkeys(chosen))


def _garbage(array: np.ndarray) -> np.ndarray:
    kind = array.dtype.kind
    if kind in "fc":
        array.fill(np.nan)
    elif kind in "iu":
        array.fill(np.iinfo(array.dtype).max)
    elif kind == "b":
        array.fill(True)
    return array


def _strided(reference: np.ndarray) -> np.ndarray:
    big = np.empty(tuple(2 * n for n in reference.shape), dtype=reference.dtype)
    # The trailing Ellipsis keeps a 0-d result an ndarray (``big[()]`` is a
    # NumPy scalar, which C code could not write into).
    every_other: tuple[Any, ...] = (*(slice(None, None, 2) for _ in reference.shape), Ellipsis)
    return _garbage(big)[every_other]


def _resized(reference: np.ndarray, static: Sequence[Any], step: int) -> np.ndarray | None:
    shape = tuple(
        n if fixed is not None else max(n + step, 0)
        for n, fixed in zip(reference.shape, static, strict=True)
    )
    if shape == reference.shape:
        return None
    return _garbage(np.empty(shape, dtype=reference.dtype))


def _variants(kind: str, reference: Any, variable: Any, previous: Any) -> list[Any]:
    """The objects offered to one output for ``kind`` (None: nothing)."""
    if kind == "previous":
        return [copy.deepcopy(reference if previous is None else previous)]
    if not isinstance(reference, np.ndarray):
        return [None]
    if kind == "c_contiguous":
        return [_garbage(np.empty(reference.shape, dtype=reference.dtype, order="C"))]
    if kind == "f_contiguous":
        return [_garbage(np.empty(reference.shape, dtype=reference.dtype, order="F"))]
    if kind == "strided":
        return [_strided(reference)]
    static = getattr(variable.type, "shape", None) or (None,) * reference.ndim
    return [_resized(reference, static, step) for step in (1, -1)]


def offered_outputs(
    kinds: Sequence[str],
    references: Sequence[Any],
    variables: Sequence[Any],
    previous: Sequence[Any] | None,
) -> Iterator[tuple[str, list[Any]]]:
    """For each kind (and variant), ``(label, one offered object per
    output)``; combinations that would offer nothing are skipped."""
    for kind in kinds:
        per_output = [
            _variants(kind, ref, var, previous[i] if previous else None)
            for i, (ref, var) in enumerate(zip(references, variables, strict=True))
        ]
        n_variants = max(len(v) for v in per_output) if per_output else 0
        for variant in range(n_variants):
            offered = [v[variant] if variant < len(v) else None for v in per_output]
            if all(o is None for o in offered):
                continue
            label = kind if n_variants == 1 else f"{kind} ({('larger', 'smaller')[variant]})"
            yield label, offered
