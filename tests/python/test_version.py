"""The version is written once, in include/opweave/version.hpp: the package's
metadata, ``opweave.__version__``, ``opweave --version`` and the CMake
package all report it, and no other tracked file spells it."""

from __future__ import annotations

import importlib.metadata
import re
import subprocess
import sys
from pathlib import Path

import opweave

ROOT = Path(__file__).resolve().parents[2]


def written_version() -> str:
    text = (ROOT / "include" / "opweave" / "version.hpp").read_text()
    found = re.search(r'^#define OPWEAVE_VERSION "(\d+\.\d+\.\d+)"$', text, re.MULTILINE)
    assert found is not None, text
    return found.group(1)


def test_the_package_reports_the_written_version() -> None:
    version = written_version()
    assert opweave.__version__ == version
    from opweave import __version__

    assert __version__ == version
    assert importlib.metadata.version("opweave") == version
    printed = subprocess.run(
        [sys.executable, "-m", "opweave", "--version"], capture_output=True, text=True, check=True
    )
    assert printed.stdout.strip() == version


def test_the_cmake_package_has_the_written_version() -> None:
    config = Path(opweave.get_cmake_dir()) / "opweaveConfigVersion.cmake"
    assert f'set(PACKAGE_VERSION "{written_version()}")' in config.read_text()


def test_no_other_tracked_file_spells_the_version() -> None:
    version = written_version()
    files = subprocess.run(
        ["git", "-C", str(ROOT), "grep", "-l", "-F", f'"{version}"'],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.split()
    assert files == ["include/opweave/version.hpp"]
