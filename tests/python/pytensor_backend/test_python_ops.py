"""Which PyTensor ops stay in Python under "OPWEAVE", from compiled graphs
(issue 37): docs/pytensor-backend.md's list of "Ops that stay in Python"
names each op of this sample that runs its perform, and none that rewriting
turns into C nodes."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytensor = pytest.importorskip("pytensor", reason="needs opweave[pytensor] (Python >= 3.12)")

import pytensor.tensor as pt  # noqa: E402
from pytensor.graph.traversal import graph_inputs  # noqa: E402
from pytensor.tensor import special  # noqa: E402

import opweave.pytensor  # noqa: E402,F401

DOCS = Path(__file__).resolve().parents[3] / "docs" / "pytensor-backend.md"


def sample() -> dict[str, object]:
    """op class name -> an output whose graph applies it."""
    x, y, A = pt.dvector("x"), pt.dvector("y"), pt.dmatrix("A")
    return {
        "Softmax": special.softmax(x),
        "LogSoftmax": special.log_softmax(x),
        "LogSumExp": special.logsumexp(x),
        "LogAddExp": pt.logaddexp(x, y),
        "XLogY": special.xlogy(x, y),
        "XLog1PY": special.xlog1py(x, y),
        "SortOp": pt.sort(x),
        "ArgSortOp": pt.argsort(x),
        "Cholesky": pt.linalg.cholesky(A),
        "SolveTriangular": pt.linalg.solve_triangular(A, x, lower=True),
        "CholeskySolve": pt.linalg.cho_solve((A, True), x),
        "Solve": pt.linalg.solve(A, x),
        "AllocDiag": pt.diag(x) * 2.0,
        "AdvancedSubtensor": A[pt.cast(x, "int64"), pt.cast(y, "int64")],
        "AdvancedIncSubtensor": pt.inc_subtensor(A[pt.cast(x, "int64"), pt.cast(y, "int64")], x),
        "MatrixInverse": pt.linalg.inv(A),
        "Det": pt.linalg.det(A),
        "SLogDet": pt.linalg.slogdet(A)[1],
        "Eye": pt.eye(x.shape[0]),
    }


def in_python(output: object) -> set[str]:
    """The ops of ``output``'s compiled graph whose nodes run in Python."""
    inputs = [v for v in graph_inputs([output]) if v.name]
    f = pytensor.function(inputs, output, mode="OPWEAVE")
    outcomes = getattr(f.vm.function, "node_outcomes", None) or [""] * len(f.vm.nodes)
    return {type(n.op).__name__ for n, o in zip(f.vm.nodes, outcomes, strict=True) if o is None}


def listed() -> set[str]:
    """The op names of the docs' section "Ops that stay in Python"."""
    text = DOCS.read_text()
    section = text.split("## Ops that stay in Python", 1)[1].split("opweave gives C code", 1)[0]
    section = section.split("checks this list):", 1)[1]
    return set(re.findall(r"`([A-Za-z0-9_]+)`", section))


def test_the_docs_list_the_ops_that_run_in_python_and_no_other() -> None:
    docs = listed()
    for name, output in sample().items():
        runs_in_python = name in in_python(output)
        assert (name in docs) == runs_in_python, (name, runs_in_python)
