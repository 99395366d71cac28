"""opweave's shared kernel library (opweave/pytensor/_kernel_library.py,
native/kernels.cpp): compiled once per machine through the module cache,
called by graph modules through its table; warning-free with g++ and
clang++; a scalar constant's Python object for node code that uses it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import numpy as np
import pytest

pytensor = pytest.importorskip("pytensor", reason="needs opweave[pytensor] (Python >= 3.12)")

import pytensor.tensor as pt  # noqa: E402
from pytensor.compile.mode import Mode  # noqa: E402
from pytensor.tensor.linalg.decomposition.cholesky import Cholesky  # noqa: E402

import opweave.pytensor  # noqa: E402,F401
from opweave.pytensor import _kernel_library  # noqa: E402
from opweave.pytensor._linalg_kernels import CholeskyKernel  # noqa: E402

FRESH = """
import json
import numpy as np
import pytensor, pytensor.tensor as pt
import opweave.pytensor
x, b = pt.dmatrix("x"), pt.dmatrix("b")
f = pytensor.function([x, b], pt.linalg.solve_triangular(pt.linalg.cholesky(x), b, lower=True),
                      mode="OPWEAVE")
value = f(np.array([[4.0, 2.0], [2.0, 3.0]]), np.ones((2, 1)))
from opweave.pytensor import _kernel_library
print(json.dumps({"outcome": _kernel_library.COMPILED.outcome, "value": value.tolist()}))
"""


def test_the_library_is_compiled_once_per_machine(tmp_path: Path) -> None:
    env = dict(os.environ)
    env["OPWEAVE_FLAGS"] = f"compiledir={tmp_path / 'opweave'}"
    runs = []
    for _ in range(2):
        done = subprocess.run(
            [sys.executable, "-c", FRESH], env=env, capture_output=True, text=True, check=False
        )
        assert done.returncode == 0, done.stderr
        runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
    assert [run["outcome"] for run in runs] == ["built", "hit"]
    factor = np.linalg.cholesky(np.array([[4.0, 2.0], [2.0, 3.0]]))
    np.testing.assert_allclose(runs[0]["value"], np.linalg.solve(factor, np.ones((2, 1))))
    assert runs[0]["value"] == runs[1]["value"]


def test_a_graph_module_holds_only_the_call_through_the_table() -> None:
    x = pt.dmatrix("x")
    node = Cholesky()(x).owner
    kernel = CholeskyKernel(node.op)
    code = kernel.c_code(node, "n", ["x"], ["z"], {"fail": "goto fail;"})
    assert "opweave_kernels_import()->cholesky(" in code and "potrf" not in code
    assert kernel.c_support_code() == _kernel_library.API_TEXT
    # the table and its import: no LAPACK call, no loop of a kernel's own
    assert "potrf(" not in _kernel_library.API_TEXT and "for (" not in _kernel_library.API_TEXT
    assert not any(line.lstrip().startswith("#") for line in _kernel_library.API_TEXT.splitlines())


@pytest.mark.parametrize("compiler", ["g++", "clang++"])
def test_the_library_builds_without_a_warning(compiler, tmp_path: Path) -> None:
    if shutil.which(compiler) is None:
        pytest.skip(f"needs {compiler} (CI installs it)")
    source = tmp_path / "kernels.cpp"
    source.write_text(_kernel_library.library_source())
    include = [f"-I{sysconfig.get_paths()['include']}", f"-I{np.get_include()}"]
    flags = ["-std=c++17", "-Wall", "-Wextra", "-Wpedantic", "-Wshadow", "-Wconversion", "-Werror"]
    done = subprocess.run(
        [compiler, *flags, "-fsyntax-only", *include, str(source)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0 and "warning" not in done.stderr, done.stderr


def test_node_code_that_uses_a_scalar_constants_python_object() -> None:
    """TensorFromScalar's C code reads its input's Python object (py_...):
    a scalar constant inlined as a literal gets one, built by its type's
    c_sync (before, the module did not compile)."""
    import pytensor.scalar as ps
    from pytensor.tensor.basic import tensor_from_scalar

    x = pt.dvector("x")
    out = tensor_from_scalar(ps.constant(3, dtype="int64")) * x.sum()
    f = pytensor.function([x], out, mode=Mode(linker="opweave", optimizer=None))
    for _ in range(3):
        np.testing.assert_array_equal(f(np.ones(2)), 6.0)
