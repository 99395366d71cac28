"""Dependency lists in fresh processes (link/c/_dep_list.py): a graph whose
op builds its C code from anything outside its own class's file is never
served its old module once that thing changed, whether or not the op bumps
its c_code_cache_version. The oracle of each test: after the change, the
function returns what the same graph returns when compiled into an empty
compile dir."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from support import dep_project

pytestmark = pytest.mark.slow  # processes that compile


@pytest.mark.parametrize("mode", ["default", "C", "c|py"])
@pytest.mark.parametrize("source", dep_project.SOURCES)
def test_a_changed_source_of_the_code_is_seen_by_a_fresh_process(
    tmp_path: Path, source: str, mode: str
) -> None:
    project = dep_project.make(tmp_path)
    env = dep_project.environment(project, tmp_path / "cache")
    first = dep_project.run(project, env, source, mode)
    assert first["value"] == 2.0
    again = dep_project.run(project, env, source, mode)  # from the index, no hook asked
    assert again["value"] == 2.0 and again["profile"]["compiled"] == 0
    dep_project.change(project, source, env)
    changed = dep_project.run(project, env, source, mode)
    empty = dict(env, OPWEAVE_FLAGS=f"compiledir={tmp_path / 'empty'}")
    oracle = dep_project.run(project, empty, source, mode)
    assert changed["value"] == oracle["value"] == 3.0
    assert changed["profile"]["compiled"] == 1  # a module of the new code, compiled
    assert dep_project.run(project, env, source, mode)["value"] == 3.0  # recorded again


@pytest.mark.parametrize("mode", ["default", "c|py"])
def test_an_assignment_before_the_first_compile_is_seen(tmp_path: Path, mode: str) -> None:
    project = dep_project.make(tmp_path)
    env = dep_project.environment(project, tmp_path / "cache")
    assert dep_project.run(project, env, "attribute", mode)["value"] == 2.0
    assigned = dep_project.run(project, env, "attribute", mode, "assign")
    assert assigned["value"] == 3.0
    assert dep_project.run(project, env, "attribute", mode)["value"] == 2.0


def test_an_unchanged_project_is_a_hit_that_asks_no_op(tmp_path: Path) -> None:
    project = dep_project.make(tmp_path)
    env = dep_project.environment(project, tmp_path / "cache")
    dep_project.run(project, env, "data", "C")
    (project / "factor.txt").touch()  # new times, same content
    (project / "helper.py").write_text("FACTOR = 2.0\n")  # rewritten as it was
    found = dep_project.run(project, env, "data", "C")
    assert found["value"] == 2.0
    assert found["profile"]["hooks"] == 0.0 and found["profile"]["compiled"] == 0


_EDITED = {
    "attribute": ("helper.py", "FACTOR = 3.0\n"),
    "template": ("mypkg/templates.py", 'def factor_text():\n    return "3.0"\n'),
}


@pytest.mark.parametrize("mode", ["default", "C"])
@pytest.mark.parametrize("source", sorted(_EDITED))
def test_older_bytecode_that_python_runs_is_what_the_code_is_made_from(
    tmp_path: Path, source: str, mode: str
) -> None:
    """CPython runs a .pyc made from an older content of a file when an edit
    keeps the file's size within the second of that content: the processes
    then run the old code, and get the old op's code, until the file is
    modified again. A list made then must not tie the new content to that
    code: once Python runs the file itself, its value is served."""
    project = dep_project.make(tmp_path)
    env = dep_project.environment(project, tmp_path / "cache")
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.pop("PYTHONPYCACHEPREFIX", None)
    assert dep_project.run(project, env, source, mode)["value"] == 2.0
    name, text = _EDITED[source]
    edited = project / name
    cached = edited.parent / "__pycache__" / f"{edited.stem}.{sys.implementation.cache_tag}.pyc"
    second = int.from_bytes(cached.read_bytes()[8:12], "little")  # the source's, recorded
    os.utime(cached, ns=(second * 10**9 + 1,) * 2)  # written early in that second
    edited.write_text(text)  # the same size, later in that second
    os.utime(edited, ns=(second * 10**9 + 5 * 10**8,) * 2)
    stale = dep_project.run(project, env, source, mode)
    empty = dict(env, OPWEAVE_FLAGS=f"compiledir={tmp_path / 'empty'}")
    assert stale["value"] == dep_project.run(project, empty, source, mode)["value"] == 2.0
    assert dep_project.run(project, env, source, mode)["value"] == 2.0  # still what runs
    os.utime(edited, ns=((second + 2) * 10**9,) * 2)  # modified again: Python compiles it
    again = dep_project.run(project, env, source, mode)
    assert again["value"] == 3.0 and again["profile"]["compiled"] == 1
