"""The fixtures of the _core tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from opweave.examples.vector_times_scalar import VectorTimesScalar
from support.step_graphs import Graphs, compile_graph

import opweave
from opweave.tensor import constant, dscalar, dvector


@pytest.fixture(scope="module")
def graphs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Graphs]:
    """The graphs, compiled once for the module, in a cache and with compile
    slots of their own (as conftest's isolated_cache does per test)."""
    root = tmp_path_factory.mktemp("step-runner")
    runtime = root / "xdg-runtime"
    runtime.mkdir(mode=0o700)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("XDG_CACHE_HOME", str(root / "xdg-cache"))
        patch.setenv("XDG_RUNTIME_DIR", str(runtime))
        with opweave.config.change_flags(compiledir=str(root / "opweave")):
            x, y = dvector("x"), dscalar("y")
            yield Graphs(
                compile_graph([x, y], [VectorTimesScalar()(x, y)]),
                compile_graph([x], [VectorTimesScalar()(x, constant(3.0))]),
            )
