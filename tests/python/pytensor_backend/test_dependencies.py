"""Dependency lists under mode="OPWEAVE" (link/c/_dep_list.py): a PyTensor
op whose C code comes from a helper module, a data file or an environment
variable is compiled again once that changed, in a fresh process and in the
same one, never served its old module; the oracle is the graph compiled
into an empty compile dir."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from support import dep_project

pytest.importorskip("pytensor", reason="needs opweave[pytensor] (Python >= 3.12)")

pytestmark = pytest.mark.slow  # processes that compile

OPS = """
import os

import helper
from pytensor.graph.basic import Apply
from pytensor.link.c.op import COp

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "factor.txt")


class Scale(COp):
    __props__ = ("source",)

    def __init__(self, source):
        self.source = source

    def make_node(self, x):
        return Apply(self, [x], [x.type()])

    def perform(self, node, inputs, outputs):
        raise NotImplementedError("C only")

    def c_code_cache_version(self):
        return (1,)

    def factor(self):
        if self.source == "attribute":
            return repr(helper.FACTOR)
        if self.source == "data":
            with open(DATA) as data:
                return data.read().strip()
        return os.environ.get("OPWEAVE_TEST_FACTOR", "2.0")

"""


RUN = """
import json, os, sys
import numpy as np
import pytensor
import pytensor.tensor as pt
import opweave
import opweave.pytensor  # noqa: F401
from pt_scale import Scale

source, change = sys.argv[1], sys.argv[2]


def value(compiledir=None):
    x = pt.dvector("x")
    flags = {} if compiledir is None else {"compiledir": compiledir}
    with opweave.config.change_flags(**flags):
        f = pytensor.function([x], Scale(source)(x), mode="OPWEAVE")
        return float(f(np.array([1.0]))[0])


values = [value()]
if change == "assign":
    import helper
    helper.FACTOR = 3.0
elif change == "data":
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "factor.txt"), "w") as f:
        f.write("3.0")
elif change == "env":
    os.environ["OPWEAVE_TEST_FACTOR"] = "3.0"
if change != "none":
    values += [value(), value(sys.argv[3])]
print(json.dumps(values))
"""


def _project(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    project = tmp_path / "project"
    project.mkdir()
    (project / "pt_scale.py").write_text(OPS + dep_project.C_CODE)
    (project / "helper.py").write_text("FACTOR = 2.0\n")
    (project / "factor.txt").write_text("2.0\n")
    (project / "run.py").write_text(RUN)
    env = dict(os.environ)
    env.pop("OPWEAVE_TEST_FACTOR", None)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(project), env.get("PYTHONPATH", "")]))
    env["OPWEAVE_FLAGS"] = f"compiledir={tmp_path / 'cache'}"
    env["PYTENSOR_FLAGS"] = ",".join(
        filter(None, [f"compiledir={tmp_path / 'pytensor'}", env.get("PYTENSOR_FLAGS", "")])
    )
    return project, env


def _run(project: Path, env: dict[str, str], *args: str) -> list[float]:
    values: list[float] = dep_project.run(project, env, *args)
    return values


@pytest.mark.parametrize(
    ("source", "change"), [("attribute", "assign"), ("data", "data"), ("env", "env")]
)
def test_a_change_in_the_process_is_seen(tmp_path: Path, source: str, change: str) -> None:
    project, env = _project(tmp_path)
    assert _run(project, env, source, change, str(tmp_path / "empty")) == [2.0, 3.0, 3.0]


@pytest.mark.parametrize("source", ["attribute", "data", "env"])
def test_a_change_between_processes_is_seen(tmp_path: Path, source: str) -> None:
    project, env = _project(tmp_path)
    assert _run(project, env, source, "none") == [2.0]
    assert _run(project, env, source, "none") == [2.0]  # the graph index's hit
    if source == "attribute":
        dep_project.edit(project / "helper.py", "FACTOR = 3.0\n")
    elif source == "data":
        (project / "factor.txt").write_text("3.0\n")
    else:
        env["OPWEAVE_TEST_FACTOR"] = "3.0"
    assert _run(project, env, source, "none") == [3.0]
    oracle = dict(env, OPWEAVE_FLAGS=f"compiledir={tmp_path / 'empty'}")
    assert _run(project, oracle, source, "none") == [3.0]
