"""opweave is typed (PEP 561: py.typed, and the stub of opweave._core): mypy,
with its default settings, checks a user's script that defines a COp and
compiles it with opweave.function against the installed opweave, and finds
no error; a misuse of the typed API is reported."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("mypy", reason="mypy is not installed (the test extras install it)")

USER_SCRIPT = '''\
from __future__ import annotations

import numpy

import opweave
from opweave.graph.basic import Apply
from opweave.link.c.op import COp


class Double(COp):
    __props__ = ()

    def make_node(self, x):
        return Apply(self, [x], [x.type()])

    def perform(self, node, inputs, output_storage):
        output_storage[0][0] = inputs[0] * 2

    def c_code(self, node, name, inp, out, sub):
        (x,) = inp
        (z,) = out
        fail = sub["fail"]
        return f"""
        Py_XDECREF({z});
        {z} = (PyArrayObject*)PyArray_NewCopy({x}, NPY_ANYORDER);
        if (!{z}) {{ {fail}; }}
        """


x = opweave.tensor.dvector("x")
f = opweave.function([x], Double()(x))
print(f(numpy.array([1.0, 2.0])))
g = opweave.function([x], [Double()(x), opweave.Out(x, borrow=True)], mode=opweave.Mode("py"))
print(g(numpy.array([1.0])), f.cache_outcome, f.compile_profile["total"], f.trust_input)
'''

MISUSE_SETUP = ["import opweave", 'x = opweave.tensor.dvector("x")', "f = opweave.function([x], x)"]
# A misuse per line after the setup, and the code of the error mypy must report for it.
MISUSE = {
    "f.no_such_attribute": "attr-defined",
    "opweave.tensor.dvector(1)": "arg-type",
    "opweave.function([x], x, mode=3)": "arg-type",
}


def test_mypy_finds_no_error_in_a_user_script_and_reports_misuses(tmp_path: Path) -> None:
    (tmp_path / "user_script.py").write_text(USER_SCRIPT)
    (tmp_path / "misuse.py").write_text("\n".join([*MISUSE_SETUP, *MISUSE]) + "\n")
    # From tmp_path, so that mypy finds opweave where Python does (the
    # installed package), not in a source tree.
    command = [sys.executable, "-m", "mypy", "--cache-dir", str(tmp_path / "cache")]
    result = subprocess.run(
        [*command, "user_script.py", "misuse.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    output = result.stdout + result.stderr
    errors = re.findall(r"^(\S+?):(\d+): error: .*\[([\w-]+)\]$", result.stdout, re.MULTILINE)
    first = len(MISUSE_SETUP) + 1
    expected = [("misuse.py", str(line), code) for line, code in enumerate(MISUSE.values(), first)]
    assert errors == expected, output
    assert f"Found {len(MISUSE)} errors in 1 file (checked 2 source files)" in output, output


def test_mypy_finds_no_error_in_the_package_and_the_examples(tmp_path: Path) -> None:
    """The package's own sources and the examples, with mypy's defaults."""
    root = Path(__file__).resolve().parents[2]
    for target in ("python/opweave", "examples"):
        result = subprocess.run(
            [sys.executable, "-m", "mypy", "--cache-dir", str(tmp_path / "cache"), target],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        assert result.returncode == 0, result.stdout + result.stderr
        assert "Success: no issues found" in result.stdout
