"""The README's Quick start commands, for the tests that hold them to what
the README says."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def quick_start_commands() -> list[str]:
    """The README's two Quick start commands."""
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Quick start\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```sh\n(.+?)\n```", section)
