"""``import opweave.pytensor`` without PyTensor (Python < 3.12, where pip
leaves it out of ``opweave[pytensor]``) is an ImportError that names the
requirement, not a bare ModuleNotFoundError (issue 37)."""

from __future__ import annotations

import subprocess
import sys

SCRIPT = """
import sys
sys.modules["pytensor"] = None  # as if PyTensor were not installed
try:
    import opweave.pytensor
except ImportError as error:
    print(type(error).__name__, "|", error)
"""


def test_importing_the_backend_without_pytensor_names_the_requirement() -> None:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=120, check=True
    )
    kind, _, message = done.stdout.strip().partition(" | ")
    assert kind == "ImportError"
    assert "pip install 'opweave[pytensor]'" in message
    assert "Python 3.12 or later" in message
    version = f"{sys.version_info[0]}.{sys.version_info[1]}"
    assert f"this is Python {version}" in message
    assert ("pip left PyTensor out" in message) == (sys.version_info < (3, 12))
