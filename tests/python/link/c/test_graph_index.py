"""The graph index (link/c/_graph_index.py): a hit in a fresh process asks no
op for anything, and is never served stale, damaged or planted. Its records
are entries of the core's cache (kind "graph", ModuleCache.read_entry_file):
the tests damage them as an attacker or a crash would, on disk."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from opweave import _core
from opweave.link.c._stable_text import Unstable, stable_text

OPS = '''
"""Ops that write each hook call to $INDEX_LOG."""
import os

from opweave.graph.basic import Apply
from opweave.link.c.op import COp
from opweave.link.c.params_type import ParamsType
from opweave.scalar import float64
from opweave.tensor import as_tensor_variable


def note(what):
    with open(os.environ["INDEX_LOG"], "a") as log:
        log.write(what + "\\n")


class Affine(COp):
    """z = a*x + b[0]: a is a param, b an input (a constant array here)."""

    __props__ = ("a",)
    params_type = ParamsType(a=float64)

    def __init__(self, a):
        self.a = float(a)

    def make_node(self, x, b):
        x, b = as_tensor_variable(x), as_tensor_variable(b)
        return Apply(self, [x, b], [x.type()])

    def c_code_cache_version(self):
        note("version")
        return (1,)

    def c_code(self, node, name, inputs, outputs, sub):
        note("c_code")
        (x, b), (z,), p, fail = inputs, outputs, sub["params"], sub["fail"]
        return f"""
        Py_XDECREF({z});
        {z} = (PyArrayObject*)PyArray_NewCopy({x}, NPY_CORDER);
        if ({z} == NULL) {{ {fail} }}
        {{
            npy_float64* data = (npy_float64*)PyArray_DATA({z});
            const npy_float64 shift = *(npy_float64*)PyArray_DATA({b});
            for (npy_intp i = 0, n = PyArray_SIZE({z}); i < n; ++i) {{
                data[i] = {p}->a * data[i] + shift /*TERM*/;
            }}
        }}
        """
'''

RUN = """
import json, sys
import numpy as np
import opweave
from opweave.tensor import constant, dvector
from index_ops import Affine

x = dvector("x")
out = Affine(3.0)(Affine(2.0)(x, constant(np.array([1.0]))), constant(np.array([10.0])))
f = opweave.function([x], out)
print(json.dumps({"value": f(np.array([1.0, 2.0])).tolist(), "outcome": f.cache_outcome}))
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "index_ops.py").write_text(OPS)
    (tmp_path / "run.py").write_text(RUN)
    return tmp_path


def _run(project: Path, flags: str = "") -> tuple[dict[str, object], list[str]]:
    """Runs run.py in a fresh process (with more OPWEAVE_FLAGS ``flags``);
    its result and the hooks it called."""
    log = project / "hooks.log"
    log.write_text("")
    env = dict(os.environ)
    env["INDEX_LOG"] = str(log)
    env["PYTHONPATH"] = os.pathsep.join([str(project), env.get("PYTHONPATH", "")])
    env["OPWEAVE_FLAGS"] = ",".join(filter(None, [f"compiledir={project / 'cache'}", flags]))
    out = _succeeded([sys.executable, str(project / "run.py")], env)
    return json.loads(out.strip().splitlines()[-1]), log.read_text().split()


def _succeeded(command: list[str], env: dict[str, str]) -> str:
    """The output of ``command``, run with ``env``, which must succeed."""
    done = subprocess.run(
        command, env=env, capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def _records(project: Path) -> list[Path]:
    """The graph.json file of each graph record entry of the project's cache."""
    entries = project / "cache" / "v2" / "entries"
    return sorted(p for p in entries.glob("*/*/graph.json") if p.is_file())


def _fields(record: Path) -> dict[str, object]:
    """The JSON fields of a record file."""
    return json.loads(record.read_bytes())


def _rewrite(project: Path, record: Path, fields: dict[str, object]) -> None:
    """Publishes ``fields`` as the record, sealed as the core seals entries."""
    cache = _core.ModuleCache(str(project / "cache"))
    data = json.dumps(fields).encode()
    cache.replace(record.parent.name, {"graph.json": data}, {"kind": "graph"})


def test_a_fresh_process_hit_asks_no_op_for_anything(project: Path) -> None:
    first, hooks = _run(project)
    assert first == {"value": [19.0, 25.0], "outcome": "built"}
    assert "c_code" in hooks and "version" in hooks
    assert len(_records(project)) == 1
    second, hooks = _run(project)
    assert second == {"value": [19.0, 25.0], "outcome": "hit"}
    assert hooks == []


def test_an_edited_op_is_compiled_again(project: Path) -> None:
    _run(project)
    ops = project / "index_ops.py"
    ops.write_text(OPS.replace("/*TERM*/", "+ 100.0"))
    found, hooks = _run(project)
    assert found["value"] == [419.0, 425.0]  # 3*(2x + 1 + 100) + 10 + 100
    assert "c_code" in hooks


def test_a_changed_option_is_compiled_again(project: Path) -> None:
    _run(project)
    found, hooks = _run(project, "cmodule__remove_gxx_opt=true")
    assert found["value"] == [19.0, 25.0] and "c_code" in hooks
    found, hooks = _run(project, "cmodule__remove_gxx_opt=true")  # its own record
    assert (found["outcome"], hooks) == ("hit", [])


@pytest.mark.parametrize(
    "damage",
    ["truncated", "garbage", "wrong orphan", "orphan missing", "orphans swapped", "missing entry"],
)
def test_a_damaged_record_is_ignored(project: Path, damage: str) -> None:
    _run(project)
    (record,) = _records(project)
    fields = _fields(record)
    if damage == "truncated":
        record.write_bytes(record.read_bytes()[:200])
    elif damage == "garbage":
        record.write_bytes(os.urandom(300))
    elif damage == "wrong orphan":
        fields["orphans"] = [["const", 99]]
        _rewrite(project, record, fields)
    elif damage == "orphan missing":  # in order, but one short: the module refuses them
        fields["orphans"] = fields["orphans"][1:]  # type: ignore[index]
        _rewrite(project, record, fields)
    elif damage == "orphans swapped":  # the two constant arrays: same types, other values
        orphans: list = fields["orphans"]  # type: ignore[assignment]
        assert orphans[:2] == [["const", 0], ["const", 1]]
        fields["orphans"] = [orphans[1], orphans[0], *orphans[2:]]
        _rewrite(project, record, fields)
    else:
        fields["module_key"] = "0" * 64
        _rewrite(project, record, fields)
    found, hooks = _run(project)
    assert found["value"] == [19.0, 25.0]
    assert "c_code" in hooks  # compiled as if there were no record
    found, hooks = _run(project)  # the record was written again
    assert (found["value"], hooks) == ([19.0, 25.0], [])


def test_a_record_others_can_write_is_not_trusted(project: Path) -> None:
    _run(project)
    (record,) = _records(project)
    record.chmod(0o666)
    found, hooks = _run(project)
    assert found["value"] == [19.0, 25.0] and "c_code" in hooks
    record.parent.chmod(0o777)
    found, hooks = _run(project)
    assert found["value"] == [19.0, 25.0] and "c_code" in hooks


def _cache_cli(project: Path, *args: str) -> str:
    env = dict(os.environ, OPWEAVE_FLAGS=f"compiledir={project / 'cache'}")
    return _succeeded([sys.executable, "-m", "opweave", "cache", *args], env)


def test_prune_removes_the_records_of_pruned_modules_and_clear_all(project: Path) -> None:
    _run(project)
    (record,) = _records(project)
    out = _cache_cli(project, "prune", "--max-size", "10G")
    assert "removed 0 entries" in out and ", and 0 graph records" in out
    assert _records(project) == [record]  # its module is still cached
    cache = _core.ModuleCache(str(project / "cache"))
    assert cache.evict(str(_fields(record)["module_key"]))  # its module goes
    out = _cache_cli(project, "prune", "--max-size", "10G")
    assert ", and 1 graph records" in out and _records(project) == []
    _run(project)
    assert len(_records(project)) == 1
    out = _cache_cli(project, "prune", "--max-size", "0")  # every entry goes, records too
    assert _records(project) == []
    _run(project)
    _cache_cli(project, "clear")
    assert _records(project) == []
    found, hooks = _run(project)  # compiled again, and recorded again
    assert found == {"value": [19.0, 25.0], "outcome": "built"} and "c_code" in hooks
    assert len(_records(project)) == 1


def _cli_json(project: Path, *args: str) -> dict:
    env = dict(os.environ, OPWEAVE_FLAGS=f"compiledir={project / 'cache'}")
    done = subprocess.run(
        [sys.executable, "-m", "opweave", "cache", *args, "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    return json.loads(done.stdout)


def test_opweave_cache_lists_counts_and_verifies_graph_records(project: Path) -> None:
    _run(project)
    (record,) = _records(project)
    listed = {e["key"]: e["kind"] for e in _cli_json(project, "list")}
    assert listed[record.parent.name] == "graph"
    saved = float(_fields(record)["saved_seconds"])  # type: ignore[arg-type]
    assert saved > 0
    before = _cli_json(project, "info")
    found, hooks = _run(project)
    assert (found["outcome"], hooks) == ("hit", [])
    after = _cli_json(project, "info")
    assert after["kinds"]["graph"] == 1
    assert after["hits"] - before["hits"] == 2  # the record, then its module
    # The record's seconds and the module's compile seconds.
    assert after["saved_seconds"] - before["saved_seconds"] > saved
    record.write_bytes(record.read_bytes().replace(b'"module_key"', b'"module_kez"'))
    report = _cli_json(project, "verify")
    assert [p["path"] for p in report["problems"]] == [str(record.parent)]
    report = _cli_json(project, "verify", "--repair")
    assert report["problems"][0]["repaired"] and _records(project) == []
    found, hooks = _run(project)  # compiled again, and recorded again
    assert found["value"] == [19.0, 25.0] and "c_code" in hooks
    assert len(_records(project)) == 1


def test_an_op_without_a_version_is_not_indexed(project: Path) -> None:
    (project / "index_ops.py").write_text(OPS.replace("return (1,)", "return ()"))
    found, _ = _run(project)
    assert found["value"] == [19.0, 25.0]
    assert _records(project) == []


def test_stable_texts_name_values_not_objects() -> None:
    from opweave.examples.quadratic import Quadratic

    assert stable_text(Quadratic(1, 2, 3)) == stable_text(Quadratic(1, 2, 3))
    assert stable_text(Quadratic(1, 2, 3)) != stable_text(Quadratic(1, 2, 4))
    assert stable_text((1, 1.0, True)) != stable_text((1, 1, 1))
    assert stable_text(np.arange(3.0)) != stable_text(np.arange(3))
    assert stable_text(slice(None, 2)) != stable_text(slice(None, 3))

    class Local(Quadratic):  # defined in a function: its name is not unique
        pass

    for unstable in (Local(1, 2, 3), lambda: 0, object(), np.empty(3, dtype=object)):
        with pytest.raises(Unstable):
            stable_text(unstable)


def test_a_patched_method_changes_the_class_text() -> None:
    code = textwrap.dedent(
        """
        from opweave.examples.quadratic import Quadratic
        from opweave.link.c._stable_text import stable_text
        if PATCH:
            Quadratic.c_code = lambda self, *args: ""
        print(stable_text(Quadratic(1, 2, 3)))
        """
    )
    texts = [
        subprocess.run(
            [sys.executable, "-c", f"PATCH = {patch}\n{code}"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        for patch in (False, False, True)
    ]
    assert texts[0] == texts[1] != texts[2]


def test_every_constant_of_an_inner_graph_is_named() -> None:
    """Each constant is rendered through a tuple made on the fly; a freed
    tuple's id comes back, and must not bring back its text."""
    from opweave.examples.vector_times_scalar import VectorTimesScalar

    from opweave.graph.fg import FunctionGraph
    from opweave.tensor import constant, dvector

    def graph(first: float, second: float) -> str:
        x, op = dvector("x"), VectorTimesScalar()
        return stable_text(FunctionGraph([x], [op(op(x, constant(first)), constant(second))]))

    texts = {graph(1.0, 2.0), graph(1.0, 3.0), graph(2.0, 2.0), graph(2.0, 1.0)}
    assert len(texts) == 4
    assert graph(1.0, 2.0) == graph(1.0, 2.0)
    slices = stable_text([slice(0, 1), slice(0, 2), slice(0, 3)])  # each a tuple made on the fly
    assert slices.count("int:1;") == slices.count("int:2;") == slices.count("int:3;") == 1
