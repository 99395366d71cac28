"""The stub python/opweave/_core.pyi says what opweave._core has: every
public name, and the parameters of every function and method (read from the
signatures pybind11 puts first in each docstring)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import opweave
from opweave import _core

STUB = Path(opweave.__file__).with_name("_core.pyi")
REGENERATE = (
    "regenerate it: pybind11-stubgen opweave._core -o python (keep its hand-written parts: "
    "see its first lines)"
)


def stub_tree() -> ast.Module:
    return ast.parse(STUB.read_text())


def runtime_parameters(function: object) -> list[str] | None:
    """Parameter names from pybind11's signature line; None if overloaded."""
    first = (getattr(function, "__doc__", None) or "").lstrip().splitlines()[:1]
    match = re.match(r"^\w+\((.*)\) ->", first[0]) if first else None
    if match is None:
        return None
    names = [part.split(":")[0].strip() for part in re.split(r",\s*(?![^\[]*\])", match[1])]
    skipped = ("self", "*args", "**kwargs", "/", "*")
    return [name for name in names if name and name not in skipped]


def stub_parameters(function: ast.FunctionDef) -> list[str]:
    args = function.args
    return [a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs] if a.arg != "self"]


def test_the_stub_names_every_public_name_of_the_module() -> None:
    tree = stub_tree()
    [listed] = [
        node.value
        for node in tree.body
        if isinstance(node, ast.AnnAssign) and getattr(node.target, "id", "") == "__all__"
    ]
    names = {element.value for element in listed.elts}
    public = {name for name in dir(_core) if not name.startswith("_")}
    assert names == public, REGENERATE


def test_the_stub_has_the_parameters_of_every_function_and_method() -> None:
    checked = 0
    for node in stub_tree().body:
        if isinstance(node, ast.FunctionDef):
            pairs = [(node, getattr(_core, node.name))]
        elif isinstance(node, ast.ClassDef):
            owner = getattr(_core, node.name)
            pairs = [
                (item, getattr(owner, item.name))
                for item in node.body
                if isinstance(item, ast.FunctionDef) and not item.name.startswith("__")
            ]
        else:
            continue
        for stub, function in pairs:
            expected = runtime_parameters(function)
            if expected is None:
                continue
            assert stub_parameters(stub) == expected, f"{stub.name}: {REGENERATE}"
            checked += 1
    assert checked > 40
