"""House rules that a test can check: the C++ core never includes Python."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PYTHON_INCLUDE = re.compile(r'^\s*#\s*include\s*[<"](Python\.h|pybind11/)', re.MULTILINE)


def test_core_does_not_include_python_or_pybind11() -> None:
    sources = [*(ROOT / "include").rglob("*.hpp"), *(ROOT / "cpp").rglob("*.[ch]pp")]
    offenders = [
        str(path.relative_to(ROOT))
        for path in sources
        if "bindings" not in path.relative_to(ROOT).parts
        and PYTHON_INCLUDE.search(path.read_text())
    ]
    assert sources and offenders == []


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
