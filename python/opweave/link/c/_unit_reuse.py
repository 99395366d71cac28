"""Cached units reused by an edited graph: an edit compiles the structs it
changed, not the units they fell in.

Units are cut by content (:func:`._units.plan_units`), so an edit of a few
ops changes the units they fall in, and each such unit would be compiled
again, with every unchanged struct in it. Instead, when a graph's module is
not cached, the structs of its units that are not cached are looked for in
other cached units, which are then linked as they are (their source, so
their key, is the cached one: a hit); what no cached unit holds goes to new
units, cut by weight.

- A struct's *content digest* is the SHA-256 of the texts of a unit that
  would hold it alone (its code, its ops' and cells' code; a ``#line``
  directive is in the text it comes with). A unit's text names the content
  digests of what it holds, on a line of its own (:meth:`UnitPlan.spec_of`).
- Its *struct key* adds the compile recipe (compiler, compile job, key
  material): :func:`struct_key`. A unit records the struct keys of up to
  three of its structs as its entry's exports (indexed for
  ``ModuleCache.find_export``, as a module's node exports are): a unit is
  found unless every one of those was edited, and each index file costs a
  write when the unit is built, so not all of them are kept.
- A unit found is read from its verified entry and taken whole: every struct
  it names is then held. None is taken that holds a struct another unit of
  the module holds (no struct is defined twice).

A reused unit may hold structs the graph no longer has: their names are
content hashes, so they clash with nothing, and their code is linked but
never run. Their init code never runs either: a unit records no exports
when one of its structs has init code of its own (an op's ``c_init_code``
or a node's ``c_init_code_apply``), so the init function of a unit found
runs only its types' set-up (NumPy's C API), which the graph's units run
too.

If the module of reused units does not compile or link (a name defined by
a reused unit and a new one), the graph is compiled from its own units
(:func:`built_reusing`, :meth:`.service.GraphBuild._compile`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from opweave import _core
from opweave._logs import get_logger
from opweave._sha256 import sha256_hex
from opweave.errors import CompileError, OpweaveError
from opweave.link.c._cache_choice import get_module_cache
from opweave.link.c._compile_errors import first_error
from opweave.link.c._node_code import StructCode
from opweave.link.c._units import group_by_weight

__all__ = ["UnitPlan", "built_reusing", "recipe_of", "reused_units", "struct_key"]

T = TypeVar("T")

_log = get_logger("opweave.link.c")

_INIT = re.compile(r"^PyObject\* (opweave_unit_init_[0-9a-f]{16})\(void\) \{$", re.MULTILINE)
# The line of a unit's text that names what it holds (UnitPlan.spec_of).
_HOLDS = "// opweave unit holds: "
_HOLDS_LINE = re.compile(r"^// opweave unit holds: ([0-9a-f ]+)$", re.MULTILINE)


class UnitPlan:
    """The op structs of a graph's units (``groups``, in unit order) and how
    to make the spec of a unit of any of them. ``spec_of`` makes a unit's
    spec, ``own_init`` tells a struct with init code of its own, and
    ``alone`` gives the texts of a unit of one struct alone, in order."""

    __slots__ = ("_content", "_spec_of", "groups", "own_init")

    def __init__(
        self,
        groups: Sequence[Sequence[StructCode]],
        spec_of: Callable[[Sequence[StructCode]], _core.UnitSpec],
        own_init: Callable[[StructCode], bool],
        alone: Callable[[StructCode], list[str]],
    ) -> None:
        self.groups = [list(group) for group in groups]
        self._spec_of = spec_of
        self.own_init = own_init
        # id(struct) -> the digest of the texts of a unit of it alone
        self._content = {
            id(code): sha256_hex("\0\0".join(alone(code)).encode())
            for group in self.groups
            for code in group
        }

    def spec_of(self, group: Sequence[StructCode]) -> _core.UnitSpec:
        """The spec of the unit of ``group``, whose text names what it holds
        (the content digest of each struct, on its first line)."""
        spec = self._spec_of(group)
        holds = " ".join(self.content(code) for code in group)
        spec.support_code = [(f"{_HOLDS}{holds}\n", -1), *spec.support_code]
        return spec

    def content(self, code: StructCode) -> str:
        """The digest of the texts of a unit of ``code`` alone."""
        return self._content[id(code)]

    def exports(self, group: Sequence[StructCode], recipe: str) -> list[str]:
        """What the unit of ``group`` records as its exports: the struct keys
        of up to three of its structs (its first, middle and last), or none
        when one of them has init code of its own."""
        if any(map(self.own_init, group)):
            return []
        picked = sorted({0, len(group) // 2, len(group) - 1})
        return [struct_key(recipe, self.content(group[i])) for i in picked]


def struct_key(recipe: str, content: str) -> str:
    """The struct key of a struct of ``content`` compiled with ``recipe``."""
    return sha256_hex(f"{recipe}\0\0{content}".encode())


def recipe_of(compiler: Any, extra: str, job_signature: Any) -> str:
    """What a struct key holds of how its unit is compiled: the compiler,
    the key material beyond the source (``extra``) and the compile job."""
    return repr((compiler.key_material(), job_signature, extra))


def built_reusing(
    plan: UnitPlan,
    spec: _core.ModuleSpec,
    request: _core.ModuleRequest,
    recipe: str,
    compiler: Any,
    load: Callable[[_core.ModuleSpec, list[list[str]]], T],
    label: str,
) -> T | None:
    """What ``load(spec, exports)`` gives for ``spec`` (whose units are
    ``plan``'s groups, requested by ``request``) with cached units in place
    of those of its own that are not cached (:func:`reused_units`); None when
    its module is cached, when no unit is reused, or when the module of
    reused units does not compile or link (then logged: the graph's own
    units follow). Never fails a compile."""
    try:
        cache = get_module_cache()
        if cache.lookup(_core.request_key(compiler, request)) is not None:
            return None
        found = reused_units(plan, spec, request, recipe, compiler, cache)
    except OpweaveError as error:
        _log.debug("%s: no cached unit reused: %s", label, error)
        return None
    if found is None:
        return None
    try:
        return load(*found)
    except CompileError as error:
        _log.info(
            "%s is compiled from its own units: with cached units reused, %s",
            label,
            first_error(error),
        )
        return None


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
    unit_keys = _core.unit_keys(compiler, request)[: len(plan.groups)]  # not the body's
    missing = [i for i, key in enumerate(unit_keys) if cache.lookup(key) is None]
    kept = [i for i in range(len(plan.groups)) if i not in set(missing)]
    # content digest -> the unit holding it: a kept unit (-1) or one taken here
    held = {plan.content(code): -1 for i in kept for code in plan.groups[i]}
    taken: list[tuple[_core.UnitSpec, list[str]]] = []
    for i in missing:
        for code in plan.groups[i]:
            if plan.content(code) not in held:
                _take(cache, struct_key(recipe, plan.content(code)), held, taken)
    if not taken:
        return None
    left = [
        code for i in missing for code in plan.groups[i] if held.get(plan.content(code)) is None
    ]
    units = [spec.units[i] for i in kept] + [unit for unit, _ in taken]
    unit_exports = [request.units[i].exports for i in kept] + [found for _, found in taken]
    for group in group_by_weight(left):
        units.append(plan.spec_of(group))
        unit_exports.append(plan.exports(group, recipe))
    out = spec.copy()
    out.units = units
    _log.debug(
        "units reused for %d of %d structs of %d units not cached (%d new units)",
        sum(len(plan.groups[i]) for i in missing) - len(left),
        sum(len(plan.groups[i]) for i in missing),
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
    """Takes the cached unit that exports the struct key ``key``, if any,
    into ``taken``, with the content digest of every struct it holds into
    ``held``; not one that holds a struct another unit of the module holds
    (the module would define it twice)."""
    entry = cache.find_export(key)
    if entry is None or entry.kind != "unit" or key not in entry.exports:
        return
    data = cache.read_entry_file(entry.key, "unit.cpp")
    if data is None:
        return
    text = data.decode("utf-8", "replace")
    holds, init = _HOLDS_LINE.search(text), _INIT.search(text)
    if holds is None or init is None:
        return
    contents = holds.group(1).split()
    if any(content in held for content in contents):
        return
    taken.append((_core.UnitSpec(text=text, init_function=init.group(1)), list(entry.exports)))
    held.update(dict.fromkeys(contents, len(taken) - 1))
