"""Cached units reused by an edited graph: an edit compiles the structs it
changed, not the units they fell in.

Units are cut by content (:func:`._units.plan_units`), so an edit of a few
ops changes the units they fall in, and each such unit would be compiled
again, with every unchanged struct in it. Instead, each struct of a unit
that is not cached is looked up by its *struct key* (:meth:`UnitPlan.keys`):
the digest of the texts of the unit that would hold it alone (its code,
its ops' and cells' code; a ``#line`` directive is in the text it comes
with) and of the compile recipe (the compile job, the key material, the compiler). A unit
records the struct keys of what it holds when it is built (its entry's
exports, indexed for ``ModuleCache.find_export``), so a struct found there
is taken from that unit, linked as it is (its source, so its key, is the
one cached: a hit). What no cached unit holds goes to new units, cut by
weight as usual. A reused unit may hold structs the graph no longer has:
their code is linked but never run, and their ops' init code is never run
either, because a unit exports its keys only when none of its structs has
init code of its own (an op's ``c_init_code`` or a node's
``c_init_code_apply``): what such a unit's init function runs is its types'
set-up (NumPy's C API), which the graph's own units run too.

If the module of reused units does not compile or link (a name defined by
a reused unit and a new one), the graph is compiled from its own units
(:meth:`.service.GraphBuild._compile`).
"""

from __future__ import annotations

import hashlib
import logging
import re
from collections.abc import Callable, Sequence
from typing import Any

from opweave import _core
from opweave.link.c._node_code import StructCode
from opweave.link.c._units import group_by_weight

__all__ = ["UnitPlan", "reused_units"]

_log = logging.getLogger("opweave.link.c")

_INIT = re.compile(rb"^PyObject\* (opweave_unit_init_[0-9a-f]{16})\(void\) \{$", re.MULTILINE)


class UnitPlan:
    """The op structs of a graph's units (``groups``, in unit order), the
    spec of a unit of any of them (``spec_of``), which of them have init
    code of their own (``own_init``) and the texts of a unit of one of them
    alone (``alone``, in order)."""

    __slots__ = ("_keys", "alone", "groups", "own_init", "spec_of")

    def __init__(
        self,
        groups: Sequence[Sequence[StructCode]],
        spec_of: Callable[[Sequence[StructCode]], _core.UnitSpec],
        own_init: Callable[[StructCode], bool],
        alone: Callable[[StructCode], list[str]],
    ) -> None:
        self.groups = [list(group) for group in groups]
        self.spec_of = spec_of
        self.own_init = own_init
        self.alone = alone
        self._keys: dict[str, list[list[str]]] = {}

    def keys(self, recipe: str) -> list[list[str]]:
        """The struct key (see the top) of each struct, per group."""
        found = self._keys.get(recipe)
        if found is None:
            found = self._keys[recipe] = [
                [self._key(recipe, code) for code in group] for group in self.groups
            ]
        return found

    def exports(self, recipe: str) -> list[list[str]]:
        """What each group's unit records as its exports: its struct keys,
        or none when one of its structs has init code of its own."""
        return [
            [] if any(map(self.own_init, group)) else keys
            for group, keys in zip(self.groups, self.keys(recipe), strict=True)
        ]

    def _key(self, recipe: str, code: StructCode) -> str:
        texts = [recipe, *self.alone(code)]
        return hashlib.sha256("\0\0".join(texts).encode()).hexdigest()


def recipe_of(compiler: Any, extra: str, job_signature: Any) -> str:
    """What a struct key holds of how its unit is compiled: the compiler,
    the key material beyond the source (``extra``) and the compile job."""
    return repr((compiler.key_material(), job_signature, extra))


def reused_units(
    plan: UnitPlan,
    spec: _core.ModuleSpec,
    request: _core.ModuleRequest,
    recipe: str,
    compiler: Any,
    cache: _core.ModuleCache,
) -> tuple[_core.ModuleSpec, list[list[str]]] | None:
    """``spec`` (whose units are ``plan``'s groups, requested by
    ``request``) with each unit that is not in ``cache`` replaced (see the
    top), and what each of its units exports; None when no cached unit holds
    a struct of theirs."""
    keys = plan.keys(recipe)
    exports = plan.exports(recipe)
    missing = [
        i for i, key in enumerate(_core.unit_keys(compiler, request)) if cache.lookup(key) is None
    ]
    kept = [i for i in range(len(plan.groups)) if i not in set(missing)]
    # struct key -> the unit holding it: a kept unit (-1) or one taken here
    held: dict[str, int] = {key: -1 for i in kept for key in keys[i]}
    taken: list[tuple[_core.UnitSpec, list[str]]] = []
    for i in missing:
        for key in keys[i]:
            if key not in held:
                _take(cache, key, held, taken)
    if not taken:
        return None
    left = [
        code
        for i in missing
        for code, key in zip(plan.groups[i], keys[i], strict=True)
        if key not in held
    ]
    units = [spec.units[i] for i in kept] + [unit for unit, _ in taken]
    unit_exports = [exports[i] for i in kept] + [found for _, found in taken]
    key_of = {
        id(code): key
        for group, found in zip(plan.groups, keys, strict=True)
        for code, key in zip(group, found, strict=True)
    }
    for group in group_by_weight(left):
        units.append(plan.spec_of(group))
        own = any(map(plan.own_init, group))
        unit_exports.append([] if own else [key_of[id(code)] for code in group])
    out = spec.copy()
    out.units = units
    _log.debug(
        "units reused for %d of %d structs of %d units not cached (%d new units)",
        sum(len(keys[i]) for i in missing) - len(left),
        sum(len(keys[i]) for i in missing),
        len(missing),
        len(units) - len(kept) - len(taken),
    )
    return out, unit_exports


def _take(
    cache: _core.ModuleCache,
    key: str,
    held: dict[str, int],
    taken: list[tuple[_core.UnitSpec, list[str]]],
) -> None:
    """Takes the cached unit that holds the struct of ``key``, if any, into
    ``taken``, with every struct key it holds into ``held``; not one that
    holds a struct another unit of the module holds (the module would
    define it twice)."""
    entry = cache.find_export(key)
    if entry is None or entry.kind != "unit" or key not in entry.exports:
        return
    if any(held_key in held for held_key in entry.exports):
        return
    text = cache.read_entry_file(entry.key, "unit.cpp")
    found = None if text is None else _INIT.search(text)
    if text is None or found is None:
        return
    init = found.group(1).decode()
    taken.append((_core.UnitSpec(text=text.decode(), init_function=init), list(entry.exports)))
    for held_key in entry.exports:
        held[held_key] = len(taken) - 1
