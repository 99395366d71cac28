"""What a user of each backend's C-op API imports, under the same module paths
(shared by the benchmarks that compare opweave with PyTensor)."""

from __future__ import annotations

import importlib
from types import SimpleNamespace


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
