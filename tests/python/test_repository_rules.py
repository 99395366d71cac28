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
