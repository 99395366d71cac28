"""The package's layers only point down: a module imports (at module level,
inside a function, or through ``importlib``) only modules of its own layer
or of lower ones. ``compile`` calls ``link``, never the reverse; the graph
layer knows no linker; the C back end knows no mode."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "python" / "opweave"

# Lowest first. A module belongs to the longest prefix listed.
LAYERS: list[tuple[str, ...]] = [
    (
        "opweave._core",
        "opweave._namedtuple",
        "opweave.errors",
        "opweave._import_time",
        "opweave._sha256",
        "opweave._on_path",
        "opweave._logs",
    ),
    ("opweave._config_parse", "opweave._config_options"),
    ("opweave.configparser", "opweave.configdefaults"),
    ("opweave.graph",),
    ("opweave.link",),
    ("opweave.link.c",),
    ("opweave.link.vm", "opweave.scalar"),
    ("opweave.tensor",),
    ("opweave.compile",),
    (
        "opweave",
        "opweave.gof",
        "opweave.demo",
        "opweave.__main__",
        "opweave._cache_cli",
        "opweave._cache_transfer",
        "opweave._export_archive",
        "opweave.examples",
    ),
]


def layer_of(module: str) -> int:
    best, depth = -1, -1
    for index, prefixes in enumerate(LAYERS):
        for prefix in prefixes:
            matches = module == prefix or module.startswith(prefix + ".")
            if matches and prefix.count(".") > depth:
                best, depth = index, prefix.count(".")
    assert best >= 0, f"{module} is in no layer"
    return best


def modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    found["opweave._core"] = PACKAGE / "_core.pyi"
    return found


def imported(module: str, path: Path, known: dict[str, Path]) -> set[str]:
    """Every opweave module that `module` imports anywhere in its text."""

    def known_prefix(name: str) -> str | None:
        while name and name not in known:
            name = name.rpartition(".")[0]
        return name or None

    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    targets: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*anchor, *([base] if base else [])])
            # `from a import b` imports a.b when that is a module, else a.
            names = [
                f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names
            ]
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "import_module":
            if node.args and isinstance(node.args[0], ast.Constant):
                names = [str(node.args[0].value)]
        for name in names:
            target = known_prefix(name) if name.startswith("opweave") else None
            if target is not None and target != module:
                targets.add(target)
    return targets


def upward_edges() -> list[str]:
    known = modules()
    found = []
    for module, path in sorted(known.items()):
        if path.suffix != ".py":
            continue
        for target in sorted(imported(module, path, known)):
            if layer_of(target) > layer_of(module):
                found.append(f"{module} -> {target}")
    return found


def test_no_module_imports_a_higher_layer() -> None:
    assert upward_edges() == []


def test_the_check_sees_every_kind_of_import(tmp_path: Path) -> None:
    known = {"opweave.compile.mode": Path(), "opweave.compile": Path(), "opweave.link": Path()}
    text = (
        "import opweave.compile.mode\n"
        "def f():\n    from opweave.compile import mode\n"
        "def g():\n    importlib.import_module('opweave.compile.mode')\n"
    )
    source = tmp_path / "m.py"
    source.write_text(text)
    assert imported("opweave.link.m", source, known) == {"opweave.compile.mode"}
    assert layer_of("opweave.compile.mode") > layer_of("opweave.link.thunk")


@pytest.mark.parametrize("module", ["opweave.link.c.basic", "opweave.link.runner"])
def test_the_layers_cover_the_modules(module: str) -> None:
    assert module in modules()


# The C types' PyTensor API: ``from ...link.c.type import EnumType`` works
# (type.py re-exports the enumerations, which subclass CType, by a module
# __getattr__). No module that links a graph or builds a module is in it.
TYPE_CIRCLE = frozenset({"opweave.link.c.enum_type", "opweave.link.c.type"})


def import_graph(prefix: str) -> dict[str, set[str]]:
    """Which modules under ``prefix`` each module under it imports (anywhere)."""
    known = modules()
    return {
        m: {t for t in imported(m, p, known) if t.startswith(prefix)}
        for m, p in known.items()
        if m.startswith(prefix) and p.suffix == ".py"
    }


def import_circles(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """The import circles of ``graph``: groups of more than one module that
    each reach the others."""
    circles, reached = [], set()
    for start in sorted(graph):
        if start in reached:
            continue
        group = {start} | {m for m in _reach(graph, start) if start in _reach(graph, m)}
        reached |= group
        if len(group) > 1:
            circles.append(frozenset(group))
    return circles


def _reach(graph: dict[str, set[str]], start: str) -> set[str]:
    seen, todo = set(), [start]
    while todo:
        for target in graph.get(todo.pop(), ()):
            if target not in seen:
                seen.add(target)
                todo.append(target)
    return seen


def test_no_import_circle_among_the_linkers_and_the_compile_service() -> None:
    circles = import_circles(import_graph("opweave.link"))
    assert [c for c in circles if c != TYPE_CIRCLE] == []


def test_function_and_what_wraps_a_function_import_one_way() -> None:
    # _stateful (wrapping functions, the recipe) is below function(), which
    # owns the pickling that calls function() again.
    graph = import_graph("opweave.compile")
    pair = {"opweave.compile.function", "opweave.compile._stateful"}
    assert not [c for c in import_circles(graph) if pair & c]
    assert "opweave.compile._stateful" in graph["opweave.compile.function"]


def test_no_import_circle_among_the_pytensor_kernels() -> None:
    # The kernels import their bases (_kernel_base), the registry imports them.
    assert import_circles(import_graph("opweave.pytensor")) == []


def test_the_circle_check_finds_a_circle(tmp_path: Path) -> None:
    # basic -> opwise -> basic (inside a function), as the linkers were.
    known = {"opweave.link.c.basic": Path(), "opweave.link.c.opwise": Path()}
    basic, opwise = tmp_path / "basic.py", tmp_path / "opwise.py"
    basic.write_text("from opweave.link.c.opwise import OpWiseCLinker\n")
    opwise.write_text("def f():\n    from opweave.link.c.basic import CLinker\n")
    graph = {
        "opweave.link.c.basic": imported("opweave.link.c.basic", basic, known),
        "opweave.link.c.opwise": imported("opweave.link.c.opwise", opwise, known),
        "opweave.link.c.service": set(),
    }
    assert import_circles(graph) == [frozenset(known)]
    graph["opweave.link.c.opwise"] = {"opweave.link.c.service"}
    assert import_circles(graph) == []


# Module-level values that are state: containers and locks.
_STATE_CALLS = {"dict", "list", "set", "defaultdict", "OrderedDict", "Lock", "RLock", "local"}


def _module_state(tree: ast.Module) -> list[str]:
    """The names a module binds at its top level to a container or lock
    (not an ALL_CAPS constant), and the names its functions rebind with
    ``global``."""
    found = []
    for node in tree.body:
        targets = (
            node.targets
            if isinstance(node, ast.Assign)
            else [node.target]
            if isinstance(node, ast.AnnAssign) and node.value is not None
            else []
        )
        value = getattr(node, "value", None)
        call = value.func if isinstance(value, ast.Call) else None
        called = getattr(call, "attr", None) or getattr(call, "id", None)
        stateful = isinstance(value, ast.Dict | ast.List | ast.Set) or called in _STATE_CALLS
        for target in targets:
            name = getattr(target, "id", "")
            if stateful and name != "__all__" and not name.lstrip("_").isupper():
                found.append(name)
    rebound = [node.names for node in ast.walk(tree) if isinstance(node, ast.Global)]
    return found + [name for names in rebound for name in names]


def test_the_c_back_end_keeps_its_process_state_in_one_context() -> None:
    """link/c/_context.py's Context holds every memo, registry, choice,
    connection and lock of opweave.link.c; no other module of it keeps
    state at module level."""
    kept = {
        path.name: names
        for path in sorted((PACKAGE / "link" / "c").glob("*.py"))
        if path.name != "_context.py"
        and (names := _module_state(ast.parse(path.read_text(), str(path))))
    }
    assert kept == {}


def test_the_state_check_sees_containers_locks_and_globals() -> None:
    tree = ast.parse(
        "import threading\n_memo = {}\nseen: set[str] = set()\n_lock = threading.Lock()\n"
        "LIMITS = {'a': 1}\n_log = object()\ndef f():\n    global _count\n"
    )
    assert _module_state(tree) == ["_memo", "seen", "_lock", "_count"]


# The import circles left, each inside one package and one concept whose
# classes name one another; a new circle, or one across packages, fails.
KNOWN_CIRCLES = {
    # Variable, Apply, Op and Type: a node's op makes typed variables, a
    # type makes variables, an op's default perform thunk runs the node.
    frozenset(
        {"opweave.graph.basic", "opweave.graph.op", "opweave.graph.perform", "opweave.graph.type"}
    ),
    # A FunctionGraph orders its nodes by the destroy rules, which read a
    # FunctionGraph's cached order when they are given one.
    frozenset({"opweave.graph.destroy", "opweave.graph.fg"}),
    TYPE_CIRCLE,
    # TensorType makes TensorVariables, whose methods and constructors build
    # tensor types and the Shape op.
    frozenset(
        {
            "opweave.tensor.basic",
            "opweave.tensor.constructors",
            "opweave.tensor.shape",
            "opweave.tensor.type",
            "opweave.tensor.variable",
        }
    ),
}


def test_no_import_circle_crosses_a_concept() -> None:
    circles = import_circles(import_graph("opweave"))
    crossing = [sorted(c) for c in circles if len({m.rsplit(".", 1)[0] for m in c}) > 1]
    assert crossing == []
    assert [sorted(c) for c in circles if c not in KNOWN_CIRCLES] == []
    # DebugMode subclasses Mode, get_mode makes one by name: the class sits below both.
    graph = import_graph("opweave.compile")
    assert "opweave.compile.mode" not in graph["opweave.compile.debugmode"]
    assert "opweave.compile.debugmode" in graph["opweave.compile.mode"]
