"""Compile errors that name the user's code: each diagnostic's line in the
module's source is mapped back to the op or type code (and the line in it)
it came from, and a symbol the link left undefined to the code that uses it."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

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


def _fragments(part: Any) -> Iterator[tuple[str, int]]:
    """Every ``(text, origin)`` fragment in a module spec or a part of it."""
    if isinstance(part, dict):
        for value in part.values():
            yield from _fragments(value)
    elif isinstance(part, tuple) and len(part) == 2 and isinstance(part[0], str):
        yield part
    elif isinstance(part, list):
        for item in part:
            yield from _fragments(item)


def _undefined_places(summary: str, spec: dict[str, Any], origins: list[str]) -> list[str]:
    """Where the code that names each symbol the link left undefined comes
    from (see cpp/build/link_check.cpp)."""
    names = summary.partition("symbols that nothing defines: ")[2]
    places: list[str] = []
    for name in re.findall(r"'([^']+)'", names.split(" (not in")[0]) if names else []:
        bare = re.sub(r"\(.*", "", name).rsplit("::", 1)[-1]
        word = re.compile(rf"(?<!\w){re.escape(bare)}(?!\w)")
        users = dict.fromkeys(
            origins[origin]
            for text, origin in _fragments(spec)
            if origin >= 0 and word.search(text)
        )
        places.extend(f"{user}: uses '{name}', which nothing defines" for user in users)
    return places


def explained(
    error: CompileError,
    line_map: list[tuple[int, int, int]],
    origins: list[str],
    spec: dict[str, Any],
) -> CompileError:
    """The same error, its summary naming the op or type code (and the line
    in it) where each of the first few diagnostics points, or the code that
    uses a symbol that nothing defines."""
    places: list[str] = _undefined_places(error.summary, spec, origins)
    source_name = error.source.rsplit("/", 1)[-1] if error.source else "module.cpp"
    for match in _DIAGNOSTIC_LINE.finditer(error.diagnostics):
        if not match["file"].endswith((source_name, "module.cpp")):
            continue
        line = int(match["line"])
        for first, last, origin in line_map:
            if first <= line <= last:
                place = f"{origins[origin]}, line {line - first + 1} of its code: {match['rest']}"
                if place not in places:
                    places.append(place)
                break
        if len(places) >= 3:
            break
    summary = error.summary
    if places:
        summary += "\n" + "\n".join(f"  in {place}" for place in places)
    explained = CompileError(
        summary, error.command, error.diagnostics, error.source, error.exit_status
    )
    return explained
