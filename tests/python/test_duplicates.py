"""No code is written twice: no run of MIN_LINES significant lines stands in
two places of the Python and C++ sources (the package, the core, the
bindings and the tests; examples/ and benchmarks/ are left out: they show
users' code as users write it).

A line is significant unless it is blank, a comment, an import, an
``#include`` or a ``using`` declaration, or only a bracket or a keyword such
as ``else:`` or ``pass``; lines compare after stripping their indentation.
"""

from __future__ import annotations

import ast
import subprocess
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MIN_LINES = 8
SUFFIXES = (".py", ".cpp", ".hpp", ".h")
LEFT_OUT = ("examples/", "benchmarks/")
TRIVIAL = frozenset(
    ["{", "}", "};", ")", "]", "):", "else:", "try:", "pass", "return", "break", "continue"]
)
SKIPPED_PREFIXES = ("#", "//", "using ")


def significant_lines(name: str, text: str) -> list[tuple[int, str]]:
    """The significant lines of a file ``name`` holding ``text``, with their
    line numbers."""
    imports: set[int] = set()
    if name.endswith(".py"):
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                imports.update(range(node.lineno, (node.end_lineno or node.lineno) + 1))
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if stripped and stripped not in TRIVIAL and number not in imports:
            if not stripped.startswith(SKIPPED_PREFIXES):
                found.append((number, stripped))
    return found


def repeated_runs(files: dict[str, str], length: int = MIN_LINES) -> list[list[tuple[str, int]]]:
    """Each run of ``length`` significant lines that stands in more than one
    place of ``files`` (name -> text), as its places (name, first line)."""
    places: dict[tuple[str, ...], list[tuple[str, int]]] = defaultdict(list)
    for name, text in files.items():
        lines = significant_lines(name, text)
        for start in range(len(lines) - length + 1):
            run = tuple(line for _, line in lines[start : start + length])
            places[run].append((name, lines[start][0]))
    return [where for where in places.values() if len(where) > 1]


def repository_sources() -> dict[str, str]:
    listed = subprocess.run(
        ["git", "-C", str(ROOT), "ls-files", "--cached", "--others", "--exclude-standard"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    names = [n for n in listed if n.endswith(SUFFIXES) and not n.startswith(LEFT_OUT)]
    return {n: (ROOT / n).read_text(errors="replace") for n in names if (ROOT / n).is_file()}


def test_the_check_finds_a_repeated_run_and_only_that() -> None:
    body = "\n".join(f"value_{k} = compute({k})" for k in range(MIN_LINES))
    shorter = "\n".join(f"value_{k} = compute({k})" for k in range(MIN_LINES - 1))
    found = repeated_runs({"a.py": f"import os\n{body}\n", "b.py": f"# note\n\n{body}\n"})
    assert found == [[("a.py", 2), ("b.py", 3)]]
    assert repeated_runs({"a.py": shorter, "b.py": shorter}) == []
    # Imports, includes and comments do not count.
    includes = "\n".join(f"#include <h{k}>" for k in range(MIN_LINES))
    assert repeated_runs({"a.cpp": includes, "b.cpp": includes}) == []


def test_no_run_of_code_stands_in_two_places() -> None:
    sources = repository_sources()
    assert len(sources) > 200
    assert repeated_runs(sources) == []
