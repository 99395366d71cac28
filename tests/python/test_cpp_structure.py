"""The C++ tree's structure: folders, namespaces and where members live.

Each folder of ``cpp/`` is one concept and its own namespace; tools that
skip build output must see every folder; ``ModuleCache``'s members are
defined in the files its header names; only ``cpp/bindings/`` sees
``Python.h``, and its CPython runtime (``cpp/bindings/runtime/``) no
pybind11.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CPP = ROOT / "cpp"
# Folder names that linters, viewers and packagers take for build output.
BUILD_OUTPUT_NAMES = {"build", "builds", "out", "dist", "target", "bin", "obj", "_build"}
MAX_CPP_LINES = 600


def _sources(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.suffix in {".cpp", ".hpp", ".h"})


def test_no_folder_is_named_like_build_output() -> None:
    folders = [p for p in [CPP, *CPP.rglob("*"), ROOT / "include"] if p.is_dir()]
    assert len(folders) > 5
    assert [str(p) for p in folders if p.name in BUILD_OUTPUT_NAMES] == []


_NAMESPACE = re.compile(r"^namespace (opweave(?:::[\w:]+)?) \{", re.MULTILINE)


def test_each_folder_is_its_own_namespace() -> None:
    # opweave:: itself holds the public API (include/opweave/) that a folder
    # implements; anything below it is named for the folder it lives in
    # (cpp/bindings/runtime/: opweave::bindings::runtime, or below).
    wrong, seen = [], set()
    for path in _sources(CPP):
        folder = list(path.relative_to(CPP).parts[:-1])
        for name in _NAMESPACE.findall(path.read_text()):
            parts = name.split("::")[1:]
            seen.add(name)
            if parts and parts[: len(folder)] != folder:
                wrong.append(f"{path.relative_to(ROOT)}: {name}")
    assert {"opweave::cache", "opweave::builder", "opweave::bindings::runtime"} <= seen
    assert wrong == []


_INCLUDE = re.compile(r'^\s*#\s*include\s*[<"](Python\.h|pybind11/)', re.MULTILINE)


def _includes(path: Path) -> set[str]:
    return {
        "pybind11" if m.startswith("pybind11") else m for m in _INCLUDE.findall(path.read_text())
    }


def test_only_the_bindings_see_python_and_their_runtime_no_pybind11() -> None:
    runtime = CPP / "bindings" / "runtime"
    sources = [*_sources(ROOT / "include"), *_sources(CPP)]
    offenders = []
    for path in sources:
        if runtime in path.parents:
            allowed = {"Python.h"}
        elif CPP / "bindings" in path.parents:
            allowed = {"Python.h", "pybind11"}
        else:
            allowed = set()
        extra = _includes(path) - allowed
        if extra:
            offenders.append(f"{path.relative_to(ROOT)}: {sorted(extra)}")
    assert len(sources) > 50 and offenders == []
    # The runtime stands below the binding files: it includes none of their
    # headers, only its own.
    binding_header = re.compile(r'"bindings/(?!runtime/)')
    own = _sources(runtime)
    assert own and [str(p) for p in own if binding_header.search(p.read_text())] == []


def _declared_sections(header: Path, cls: str) -> dict[str, str]:
    """Each member of ``cls`` declared in ``header`` -> the file its
    section (``// --- cpp/...cpp: ...``) names; members defined in the
    header itself are left out."""
    text = header.read_text()
    body = text[text.index(f"class {cls} {{") : text.index("\n};", text.index(f"class {cls} {{"))]
    members: dict[str, str] = {}
    section = ""
    declaration = ""
    for line in body.splitlines()[1:]:
        stripped = line.strip()
        if stripped.startswith("// --- "):
            section = stripped[len("// --- ") :].split(":")[0].rstrip(".")
            continue
        if not stripped or stripped.startswith("//") or stripped.endswith(":"):
            continue
        declaration += " " + stripped
        if stripped.endswith(";") or stripped.endswith("}"):
            name = re.search(r"(~?\w+)\s*\(", declaration)
            inline = "{" in declaration or "= delete" in declaration
            if name and not inline and "constexpr" not in declaration:
                members[name.group(1)] = section
            declaration = ""
    return members


def test_module_cache_members_are_defined_where_its_header_says() -> None:
    declared = _declared_sections(ROOT / "include/opweave/module_cache.hpp", "ModuleCache")
    assert {"lookup", "get_or_build", "adopt", "read_record", "lookup_here"} <= set(declared)
    assert all(declared.values()), [m for m, s in declared.items() if not s]
    # A definition starts a line: its return type, then the qualified name.
    definition = re.compile(r"^(?:[A-Za-z][^\n;(]*?\s)?ModuleCache::(~?\w+)\(", re.MULTILINE)
    defined: dict[str, list[str]] = {}
    for path in _sources(CPP):
        for name in dict.fromkeys(definition.findall(path.read_text())):
            defined.setdefault(name, []).append(str(path.relative_to(ROOT)))
    misplaced = {
        m: (declared[m], defined.get(m)) for m in declared if defined.get(m) != [declared[m]]
    }
    assert misplaced == {}


def test_no_cpp_file_is_over_600_lines() -> None:
    sources = [*_sources(ROOT / "include"), *_sources(CPP)]
    long = {
        str(p.relative_to(ROOT)): n
        for p in sources
        if (n := len(p.read_text().splitlines())) > MAX_CPP_LINES
    }
    assert sources and long == {}
