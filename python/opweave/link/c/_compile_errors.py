"""Compile errors that name the user's code: each diagnostic's line in the
module's source is mapped back to the op or type code (and the line in it)
it came from, and a symbol the link left undefined to the code that uses it."""

from __future__ import annotations

import re
from collections.abc import Iterator

from opweave import _core
from opweave.errors import CompileError

__all__ = ["explained", "first_error"]

_DIAGNOSTIC_LINE = re.compile(r"^(?P<file>[^:\n]+):(?P<line>\d+):(?:\d+:)? (?P<rest>.*)$", re.M)


def first_error(error: CompileError) -> str:
    """The first line of ``error``'s diagnostics that reports an error (a
    multiple definition, say), else its summary."""
    for line in error.diagnostics.splitlines():
        if re.search(r"error|multiple definition|duplicate symbol", line):
            return line.strip()
    return error.summary


def _fragments(spec: _core.ModuleSpec) -> Iterator[_core.CodeFragment]:
    """Every fragment of code in a module spec (units and exports included)."""
    parts: list[_core.ModuleSpec | _core.UnitSpec] = [spec, *spec.units]
    for part in parts:
        yield from (*part.support_code, *part.init_code, *part.init_code_apply)
        for definition in part.definitions:
            yield from definition
    yield from spec.members
    for definition in (
        *spec.step_functions,
        *(d for graph in spec.exports for d in graph.definitions),
    ):
        yield from definition


def _naming(fragments: list[_core.CodeFragment], name: str) -> list[_core.CodeFragment]:
    """The fragments whose text holds the identifier a linker's ``name``
    ends with (``ns::f(int)``: ``f``)."""
    bare = re.sub(r"\(.*", "", name).rsplit("::", 1)[-1]
    word = re.compile(rf"(?<!\w){re.escape(bare)}(?!\w)")
    return [f for f in fragments if word.search(f.text)]


def _undefined_places(summary: str, spec: _core.ModuleSpec, origins: list[str]) -> list[str]:
    """Where the code that names each symbol the link left undefined comes
    from (see cpp/builder/link_check.cpp)."""
    names = summary.partition("symbols that nothing defines: ")[2]
    places: list[str] = []
    symbols = re.findall(r"'([^']+)'", names.split(" (not in")[0]) if names else []
    # Read out of the spec once: each read of a field copies it.
    fragments = [f for f in _fragments(spec) if f.origin >= 0] if symbols else []
    for name in symbols:
        users = dict.fromkeys(origins[f.origin] for f in _naming(fragments, name))
        places.extend(f"{user}: uses '{name}', which nothing defines" for user in users)
    return places


def _duplicate_places(summary: str, spec: _core.ModuleSpec, origins: list[str]) -> list[str]:
    """The code that names a name the link found defined more than once
    (see cpp/builder/link_merge.hpp): its definitions are there, or in a
    header."""
    found = re.search(r"'([^']+)' is defined more than once", summary)
    if found is None:
        return []
    name = found[1]
    fragments = [f for f in _fragments(spec) if f.origin >= 0]
    places = dict.fromkeys(origins[f.origin] for f in _naming(fragments, name))
    return [f"{place}: defines or declares '{name}'" for place in places]


def explained(
    error: CompileError,
    assembled: _core.AssembledModule,
    origins: list[str],
    spec: _core.ModuleSpec,
) -> CompileError:
    """The same error, its summary naming the op or type code (and the line
    in it) where each of the first few diagnostics points, or the code that
    uses a symbol that nothing defines."""
    places: list[str] = _undefined_places(error.summary, spec, origins)
    places.extend(_duplicate_places(error.summary, spec, origins))
    source_name = error.source.rsplit("/", 1)[-1] if error.source else "module.cpp"
    headers: list[str] = []  # what a diagnostic says of a header's line (a definition there)
    for match in _DIAGNOSTIC_LINE.finditer(error.diagnostics):
        if not match["file"].endswith((source_name, "module.cpp")):
            own = match["file"].endswith("unit.cpp")  # a unit's lines: not this text's
            if not own and re.search("previously defined|redefinition", match["rest"]):
                headers.append(f"{match['file']}, line {match['line']}: {match['rest']}")
            continue
        found = assembled.origin_of_line(int(match["line"]))
        if found is not None and found[0] >= 0:
            origin, line = found
            place = f"{origins[origin]}, line {line} of its code: {match['rest']}"
            if place not in places:
                places.append(place)
        if len(places) >= 3:
            break
    places.extend(dict.fromkeys(headers[:2]))
    summary = error.summary
    if places:
        summary += "\n" + "\n".join(f"  in {place}" for place in places)
    explained = CompileError(
        summary, error.command, error.diagnostics, error.source, error.exit_status
    )
    return explained
