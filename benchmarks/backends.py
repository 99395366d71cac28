"""What a user of each backend's C-op API imports, under the same module paths
(shared by the benchmarks that compare opweave with PyTensor), and where the
interpreter with PyTensor is."""

from __future__ import annotations

import importlib
import os
from types import SimpleNamespace

# The interpreter the comparisons run PyTensor with (PyTensor 3.3.7 in its own
# venv), when --pytensor-python does not name one.
PYTENSOR_PYTHON_VARIABLE = "OPWEAVE_BENCH_PYTENSOR_PYTHON"


def import_backend(name: str) -> SimpleNamespace:
    """The modules of `name` ("opweave" or "pytensor") the benchmarks use."""
    return SimpleNamespace(
        name=name,
        function=importlib.import_module(name).function,
        mode=importlib.import_module(f"{name}.compile.mode"),
        op=importlib.import_module(f"{name}.link.c.op"),
        graph_op=importlib.import_module(f"{name}.graph.op"),
        basic=importlib.import_module(f"{name}.graph.basic"),
        tensor=importlib.import_module(f"{name}.tensor"),
        tensor_type=importlib.import_module(f"{name}.tensor.type"),
        scalar=importlib.import_module(f"{name}.scalar"),
        numpy=importlib.import_module("numpy"),
    )


def pytensor_python(given: str | None) -> tuple[str | None, str]:
    """The interpreter to run PyTensor with: `given` (--pytensor-python), else
    $OPWEAVE_BENCH_PYTENSOR_PYTHON; and, when there is none, why PyTensor is
    skipped (else "")."""
    python = given or os.environ.get(PYTENSOR_PYTHON_VARIABLE)
    if not python:
        return None, (
            f"PyTensor skipped: set {PYTENSOR_PYTHON_VARIABLE} (or pass --pytensor-python) "
            "to an interpreter with pytensor installed"
        )
    if not os.path.exists(python):
        return None, f"PyTensor skipped: {python} does not exist"
    return python, ""
