"""Dependency lists in fresh processes (link/c/_dep_list.py): a graph whose
op builds its C code from anything outside its own class's file is never
served its old module once that thing changed, whether or not the op bumps
its c_code_cache_version. The oracle of each test: after the change, the
function returns what the same graph returns when compiled into an empty
compile dir."""

from __future__ import annotations

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
