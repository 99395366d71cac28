"""The DebugMode and sanitizer sections of docs/op-authors.md, run as
written."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from support.helpers import describe

GUIDE = Path(__file__).parents[2] / "docs" / "op-authors.md"
WORKER = Path(__file__).parent / "support" / "sanitize_worker.py"


def section(title: str) -> str:
    text = GUIDE.read_text()
    start = text.index(f"## {title}")
    end = text.find("\n## ", start + 1)
    return text[start : end if end >= 0 else len(text)]


def blocks(text: str, language: str) -> list[str]:
    """The fenced blocks of ``text`` whose info string is ``language``."""
    found, current, info = [], None, ""
    for line in text.splitlines(keepends=True):
        if line.startswith("```"):
            if current is None:
                current, info = [], line[3:].strip()
            else:
                if info == language:
                    found.append("".join(current))
                current = None
        elif current is not None:
            current.append(line)
    return found


def clean_env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "OPWEAVE_FLAGS"}
    env["XDG_CACHE_HOME"] = str(tmp_path / "xdg")
    env["PATH"] = f"{Path(sys.executable).parent}:{env.get('PATH', '')}"
    return env


def test_the_debugmode_example_reports_the_wrong_perform(tmp_path):
    (code,) = blocks(section("7. DebugMode"), "python")
    script = tmp_path / "example.py"
    script.write_text(code)
    result = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        timeout=300,
        env=clean_env(tmp_path),
    )
    assert result.returncode == 0, describe(result)
    assert "perform and c_code disagree on output 0" in result.stdout
    assert "[3., 5.]" in result.stdout and "[2., 4.]" in result.stdout


@pytest.mark.slow
def test_the_sanitizer_recipe_reports_a_write_out_of_bounds(tmp_path):
    text = section("8. Sanitizers")
    (recipe,) = blocks(text, "sh")
    # my_script.py: an op that writes one element past an array's end.
    (tmp_path / "my_script.py").write_text(
        f"import sys\nsys.argv = ['w', {str(tmp_path / 'cache')!r}, 'one_past_the_end']\n"
        f"sys.path.insert(0, {str(WORKER.parent.parent)!r})\n"
        "from support.sanitize_worker import main\nmain()\n"
    )
    result = subprocess.run(
        ["bash", "-c", recipe],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
        env=clean_env(tmp_path),
    )
    assert "ERROR: AddressSanitizer: heap-buffer-overflow" in result.stderr, describe(result)
    # What the guide shows sanitize-env printing: the same variables, in order.
    shown = re.findall(r"^export (\w+)=", blocks(text, "")[0], flags=re.M)
    printed = subprocess.run(
        [sys.executable, "-m", "opweave", "sanitize-env", "--sanitize", "address,undefined"],
        capture_output=True,
        text=True,
        timeout=120,
        env=clean_env(tmp_path),
    ).stdout
    assert re.findall(r"^export (\w+)=", printed, flags=re.M) == shown
    assert "export OPWEAVE_FLAGS='cmodule__sanitize=address\\,undefined'" in printed
