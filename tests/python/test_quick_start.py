"""The README's Quick start builds the extension once: its second command,
after the first, compiles nothing again (README, "Quick start").

Runs the install part of both commands, as written in the README, in a
fresh clone and a fresh virtual environment (PyPI is needed, as for the
commands themselves), then reads ninja's log of the build directory: each
object was built once."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from support.helpers import describe
from support.quick_start import ROOT, quick_start_commands

pytestmark = pytest.mark.slow


def run(command: str, cwd: Path, venv: Path) -> None:
    env = {"PATH": f"{venv / 'bin'}:/usr/local/bin:/usr/bin:/bin", "HOME": str(cwd)}
    done = subprocess.run(
        ["bash", "-c", command], cwd=cwd, env=env, capture_output=True, text=True, timeout=1200
    )
    assert done.returncode == 0, describe(done)


def built_outputs(clone: Path) -> dict[str, int]:
    """How many times ninja built each output of the pip build directory."""
    [log] = clone.glob("build/*/.ninja_log")
    counts: dict[str, int] = {}
    for line in log.read_text().splitlines()[1:]:
        output = line.split("\t")[3]
        counts[output] = counts.get(output, 0) + 1
    return counts


def test_the_second_command_builds_nothing_the_first_built(tmp_path: Path) -> None:
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("needs a git checkout to clone")
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "--quiet", str(ROOT), str(clone)], check=True, timeout=300)
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    install, test = (c.rsplit(" && ", 1)[0] for c in quick_start_commands())

    run(install, clone, venv)
    first = built_outputs(clone)
    assert any(name.endswith(".so") for name in first) and len(first) > 50
    run(test, clone, venv)
    assert built_outputs(clone) == first  # nothing built again
    probe = "import opweave, opweave._core, pytest; print(opweave.__version__)"
    run(f"python -c '{probe}'", clone, venv)
