"""House rules that a test can check: the C++ core never includes Python;
ARCHITECTURE.md names only paths that exist; no Python file is over 400
lines, and no function over 60."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from support.quick_start import quick_start_commands

ROOT = Path(__file__).resolve().parents[2]
# A path in backquotes: a name with a slash or a known file suffix.
_NAMED_PATH = re.compile(r"`([\w./-]+(?:/|\.(?:py|pyi|cpp|hpp|h|md|toml|txt|cmake|in)))`")


def _architecture_paths() -> list[str]:
    text = (ROOT / "ARCHITECTURE.md").read_text()
    return [m.group(1) for m in _NAMED_PATH.finditer(text)]


def test_every_path_architecture_names_exists() -> None:
    """ARCHITECTURE.md names files by their path from the root, or from
    python/opweave/ (the package's modules)."""
    paths = _architecture_paths()
    assert len(paths) > 40  # the map names the folders and the main files
    bases = [ROOT, ROOT / "python" / "opweave"]
    missing = [p for p in paths if not any((base / p).exists() for base in bases)]
    assert not missing, missing


def test_architecture_links_nothing_outside_the_repository() -> None:
    text = (ROOT / "ARCHITECTURE.md").read_text()
    assert "../" not in text and "http" not in text


MAX_FILE_LINES = 400
MAX_FUNCTION_LINES = 60


def _python_files() -> list[Path]:
    """Every hand-written Python file of the repository (the stub of
    opweave._core is generated, and is a .pyi)."""
    roots = ["python", "tests", "benchmarks", "examples"]
    return sorted(
        p for root in roots for p in (ROOT / root).rglob("*.py") if "build" not in p.parts
    )


def test_no_python_file_is_over_400_lines() -> None:
    files = _python_files()
    assert len(files) > 100
    long = {
        str(p.relative_to(ROOT)): n
        for p in files
        if (n := len(p.read_text().splitlines())) > MAX_FILE_LINES
    }
    assert long == {}


def test_no_function_is_over_60_lines() -> None:
    long = {}
    for path in _python_files():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = node.end_lineno - node.lineno + 1  # type: ignore[operator]
                if lines > MAX_FUNCTION_LINES:
                    long[f"{path.relative_to(ROOT)}:{node.name}"] = lines
    assert long == {}


def test_quick_start_installs_the_build_requirements_of_pyproject() -> None:
    """Both commands install exactly pyproject's build requirements (plus
    the CMake and ninja that scikit-build-core would fetch) and build
    without isolation, so that the second builds nothing the first built;
    CI runs the second verbatim."""
    tomllib = pytest.importorskip("tomllib", reason="tomllib is Python 3.11's")
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    tool = pyproject["tool"]["scikit-build"]
    wanted = [
        *pyproject["build-system"]["requires"],
        f"cmake{tool['cmake']['version']}",
        f"ninja{tool['ninja']['version']}",
    ]
    install, test = quick_start_commands()
    for command in (install, test):
        first, build, _ = command.split(" && ")
        assert re.findall(r"'([^']+)'", first) == wanted
        assert build.startswith("pip install --no-build-isolation ")
    assert install.endswith("&& python -m opweave demo")
    assert test.endswith("'.[test]' && python -m pytest")
    assert f"\n{test}\n" in (ROOT / ".ci" / "run").read_text()
