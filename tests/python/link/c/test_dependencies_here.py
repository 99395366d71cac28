"""Dependency lists in the process that compiled a graph
(link/c/_dep_list.py): a second function() of the same graph is a memo hit
only while what its ops' code came from is as it was. A file a process has
imported is the code it runs, so an edit on disk alone changes nothing
until the module is reloaded; a reload, an assignment to a global or a
class attribute, a rewritten data file or a changed environment variable
does. The oracle of each test: the graph compiled at that moment into an
empty compile dir, in the same process."""

from __future__ import annotations

from pathlib import Path

import pytest
from support import dep_project

pytestmark = pytest.mark.slow  # processes that compile

CHANGES = [
    ("attribute", "assign", 3.0),
    ("imported", "assign_imported", 3.0),
    ("class", "assign_class", 3.0),
    ("attribute", "reload", 3.0),
    ("template", "reload_template", 3.0),
    ("data", "data", 3.0),
    ("env", "env", 3.0),
    ("attribute", "edit", 2.0),
    ("distribution", "upgrade", 2.0),
]


@pytest.mark.parametrize("mode", ["default", "C", "c|py"])
@pytest.mark.parametrize(("source", "what", "expected"), CHANGES)
def test_a_change_in_the_process_is_seen_by_its_memo(
    tmp_path: Path, source: str, what: str, expected: float, mode: str
) -> None:
    project = dep_project.make(tmp_path)
    env = dep_project.environment(project, tmp_path / "cache")
    empty = str(tmp_path / "empty")
    found = dep_project.run(project, env, source, mode, what, empty, script="here.py")
    assert found == [2.0, expected, expected]
