"""The stub python/opweave/_core.pyi names exactly what opweave._core has."""

from __future__ import annotations

import ast
from pathlib import Path

import opweave
from opweave import _core

STUB = Path(opweave.__file__).with_name("_core.pyi")


def test_the_stub_names_every_public_name_of_the_module() -> None:
    tree = ast.parse(STUB.read_text())
    [listed] = [
        node.value
        for node in tree.body
        if isinstance(node, ast.AnnAssign) and getattr(node.target, "id", "") == "__all__"
    ]
    names = {element.value for element in listed.elts}
    public = {name for name in dir(_core) if not name.startswith("_")}
    assert names == public, "regenerate with: pybind11-stubgen opweave._core -o python"
    defined = {node.name for node in tree.body if isinstance(node, ast.ClassDef | ast.FunctionDef)}
    constants = {name for name in public if name.isupper()}
    assert public - constants <= defined
