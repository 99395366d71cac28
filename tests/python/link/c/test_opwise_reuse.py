"""The per-node linker reuses compiled node code across graphs (issue 24):
a graph whose node codes were all compiled before, in any earlier graphs,
builds with no compile and no link; the node-code index is cache state
that verification, eviction and pruning cover; and the meaning of a graph
never depends on whether its nodes ran in a region module or from the
graphs other modules export. Every value is compared with ``perform``."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import textwrap
import time
import weakref
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pytest
from opweave.examples.vector_times_scalar import VectorTimesScalar
from support.helpers import compiled_modules
from support.unit_hook_ops import PythonOnly, hook_chain

from opweave.compile.function import function
from opweave.compile.mode import Mode
from opweave.graph.basic import Apply
from opweave.graph.op import Op
from opweave.link.c._context import CONTEXT
from opweave.link.c.cmodule import get_module_cache
from opweave.link.c.opwise import OpWiseCLinker
from opweave.tensor import dscalar, dvector

X = np.linspace(-2.0, 2.0, 7)
CPY = Mode(linker="c|py", optimizer=None)


def constants(n: int, seed: int) -> list[float]:
    return [round(0.25 + 0.01 * k + 0.0001 * seed, 6) for k in range(n)]


def expected(ks: list[float], python_at: int | None = None) -> np.ndarray:
    x = dvector("x")
    return function([x], hook_chain(x, ks, python_at), mode=Mode(linker="py"))(X)


def chain(ks: list[float], python_at: int | None = None):
    x = dvector("x")
    return function([x], hook_chain(x, ks, python_at), mode=CPY)


@pytest.mark.parametrize("n", [8, 40])
def test_rewired_nodes_of_every_hook_build_with_no_compile(n: int) -> None:
    """Every hook kind (apply statics, global helpers, per-node struct
    state, cleanup code), exported by a region module (in units at 40) and
    run again in another order, from the exports alone."""
    ks = constants(n, seed=n)
    first = chain(ks)
    assert first.compile_profile["compiled"] == 1
    np.testing.assert_allclose(first(X), expected(ks), rtol=1e-12)
    before = len(compiled_modules())
    # The same node codes in another order (n/2 is a multiple of the 4
    # kinds, so each constant keeps its kind of op).
    order = ks[n // 2 :] + ks[: n // 2]
    again = chain(order)
    assert len(compiled_modules()) == before
    assert again.compile_profile["compiled"] == 0
    assert set(again.node_outcomes) == {"hit"}
    for _ in range(2):  # per-node state holds call after call
        np.testing.assert_allclose(again(X), expected(order), rtol=1e-12)


def test_nodes_from_two_earlier_graphs_and_a_python_node() -> None:
    a, b = constants(8, seed=1), constants(8, seed=2)
    chain(a), chain(b)
    before = len(compiled_modules())
    mixed = [*a[:4], 9.5, *b[5:]]  # position 4 runs perform
    f = chain(mixed, python_at=4)
    assert len(compiled_modules()) == before
    assert f.node_outcomes == ["hit"] * 4 + [None] + ["hit"] * 3
    np.testing.assert_allclose(f(X), expected(mixed, python_at=4), rtol=1e-12)


def test_a_graph_with_new_code_compiles_it_in_one_module_that_exports_it() -> None:
    ks = constants(6, seed=3)
    f = chain(ks, python_at=3)
    assert f.compile_profile["compiled"] == 2  # the regions before and after perform
    assert f.node_outcomes[3] is None
    np.testing.assert_allclose(f(X), expected(ks, python_at=3), rtol=1e-12)
    exports = [e for e in compiled_modules() if e.exports]
    assert sum(len(e.exports) for e in exports) >= 5


def test_a_changed_header_is_not_served_from_an_export(tmp_path: Path) -> None:
    header = tmp_path / "opw_reuse_value.h"
    header.write_text("#define OPW_REUSE_VALUE 2.0\n")
    time.sleep(0.05)  # past the filesystem's clock tick (docs/cache.md, racy headers)

    class HeaderScale(VectorTimesScalar):
        def c_header_dirs(self, **kwargs):
            return [str(tmp_path)]

        def c_headers(self, **kwargs):
            return ["opw_reuse_value.h"]

        def c_code(self, node, name, inp, out, sub):
            code = super().c_code(node, name, inp, out, sub)
            return (
                code
                + f"\n{{ double* z = (double*)PyArray_DATA({out[0]}); z[0] += OPW_REUSE_VALUE; }}\n"
            )

    x, s = dvector("x"), dscalar("s")
    f = function([x, s], HeaderScale()(x, s), mode=CPY)
    assert f(np.ones(2), 1.0).tolist() == [3.0, 1.0]
    rewired = function([x, s], HeaderScale()(x, s), mode=CPY)
    assert rewired.node_outcomes == ["hit"] and rewired(np.ones(2), 1.0).tolist() == [3.0, 1.0]
    header.write_text("#define OPW_REUSE_VALUE 5.0\n")
    time.sleep(0.05)  # past the filesystem's clock tick (docs/cache.md, racy headers)
    changed = function([x, s], HeaderScale()(x, s), mode=CPY)
    assert changed(np.ones(2), 1.0).tolist() == [6.0, 1.0]


def test_evicted_or_pruned_entries_are_compiled_again() -> None:
    ks = constants(4, seed=4)
    chain(ks)
    cache = get_module_cache()
    for entry in compiled_modules():
        if entry.exports:
            assert cache.evict(entry.key)
    again = chain(ks)
    assert again.compile_profile["compiled"] == 1  # the index led nowhere: compiled
    np.testing.assert_allclose(again(X), expected(ks), rtol=1e-12)
    cache.prune(max_total_bytes=0)
    third = chain(ks)
    assert third.compile_profile["compiled"] == 1
    np.testing.assert_allclose(third(X), expected(ks), rtol=1e-12)


def test_a_damaged_index_file_is_ignored_and_repaired_by_verify() -> None:
    ks = constants(3, seed=5)
    chain(ks)
    cache = get_module_cache()
    index = Path(cache.root) / "v2" / "nodes"
    files = [p for p in index.rglob("*") if p.is_file()]
    assert files
    for path in files:
        path.write_text("not-a-key-at-all\n")
    CONTEXT.exports.clear()  # as in a new process: the index is read
    again = chain(ks)  # the module is found by its own key, and indexed again
    np.testing.assert_allclose(again(X), expected(ks), rtol=1e-12)
    assert all(p.read_text() != "not-a-key-at-all\n" for p in files if p.exists())
    assert chain(ks[1:] + ks[:1]).compile_profile["compiled"] == 1  # new kinds: new code
    for path in [p for p in index.rglob("*") if p.is_file()]:
        path.write_text("0" * 64 + "\n")  # an entry that does not exist
    report = cache.verify(repair=True)
    assert any("node index" in p.problem for p in report.problems)
    assert cache.verify(repair=False).problems == []


class Remember(Op):
    """``perform`` copies its input and keeps a weak reference to it."""

    __props__ = ()
    seen: ClassVar[list[Any]] = []

    def make_node(self, x):
        return Apply(self, [x], [x.type()])

    def perform(self, node, inputs, output_storage):
        Remember.seen.append(weakref.ref(inputs[0]))
        output_storage[0][0] = inputs[0].copy()


@pytest.mark.parametrize("allow_gc", [True, False])
def test_allow_gc_frees_intermediates_as_cvm_does(allow_gc: bool) -> None:
    x, s = dvector("x"), dscalar("s")
    out = VectorTimesScalar()(Remember()(VectorTimesScalar()(x, s)), s)
    f = function([x, s], out, mode=Mode(linker=OpWiseCLinker(allow_gc=allow_gc)))
    Remember.seen.clear()
    for _ in range(2):
        np.testing.assert_array_equal(f(np.ones(3), np.array(2.0)), [4.0, 4.0, 4.0])
    gc.collect()
    first, second = (ref() for ref in Remember.seen)
    if allow_gc:
        assert first is None and second is None  # freed after its last reader
    else:
        assert second is not None and first is second  # kept, and its storage reused


def test_errors_in_reused_nodes_name_the_node_and_inputs_are_converted() -> None:
    x, s = dvector("x"), dscalar("s")
    f = function([x, s], VectorTimesScalar()(PythonOnly(1.0)(x), s), mode=CPY)
    reused = function([x, s], VectorTimesScalar()(x, s), mode=CPY)
    assert reused.node_outcomes == ["hit"]
    assert reused([1, 2], 3).tolist() == [3.0, 6.0]  # converted with Type.filter
    with pytest.raises(TypeError) as failure:
        reused(np.ones((2, 2)), 3.0)
    assert "input 0" in str(failure.value) or "x" in str(failure.value)
    assert f(np.ones(2), 2.0).tolist() == [4.0, 4.0]


@pytest.mark.slow
def test_a_fresh_process_reuses_the_index_and_runs_no_compiler(tmp_path: Path) -> None:
    script = textwrap.dedent(
        """
        import sys, numpy as np, opweave
        from opweave.compile.mode import Mode
        from opweave.tensor import dvector
        from support.unit_hook_ops import hook_chain
        ks = [float(k) for k in sys.argv[1].split(",")]
        x = dvector("x")
        f = opweave.function([x], hook_chain(x, ks), mode=Mode(linker="c|py", optimizer=None))
        print(f.compile_profile["compiled"], f(np.linspace(-2, 2, 7)).sum())
        """
    )
    cache = tmp_path / "cache"
    support = str(Path(__file__).resolve().parents[2])
    # In the second process every compiler run goes through this launcher,
    # which notes it and fails: the build must run none.
    log = tmp_path / "compiler-runs.log"
    launcher = tmp_path / "no-compiler"
    launcher.write_text(f'#!/bin/sh\necho "$@" >> {log}\nexit 1\n')
    launcher.chmod(0o755)

    def run(ks: list[float], flags: str = "", ok: bool = True) -> list[str]:
        env = dict(os.environ, OPWEAVE_FLAGS=f"compiledir={cache}{flags}")
        env["PYTHONPATH"] = os.pathsep.join([support, env.get("PYTHONPATH", "")])
        argument = ",".join(map(str, ks))
        done = subprocess.run(
            [sys.executable, "-c", script, argument], env=env, capture_output=True, text=True
        )
        assert (done.returncode == 0) == ok, done.stderr
        return done.stdout.split()

    ks = constants(8, seed=6)
    assert run(ks)[0] == "1"
    compiled, total = run(ks[4:] + ks[:4], f",cxx_launcher={launcher}")
    assert compiled == "0" and not log.exists()
    run(constants(8, seed=7), f",cxx_launcher={launcher}", ok=False)  # new code: it would
    assert log.exists()
    assert float(total) == pytest.approx(float(expected(ks[4:] + ks[:4]).sum()), rel=1e-12)


def test_a_one_node_module_of_c_mode_is_the_export_of_its_node() -> None:
    """The module of a graph of one node is that node's code, whatever the
    linker: C mode's serves c|py, with nothing added to its text."""
    x, s = dvector("x"), dscalar("s")
    alone = function([x, s], VectorTimesScalar()(x, s), mode="C")
    (entry,) = compiled_modules()
    assert entry.exports == [entry.key]
    CONTEXT.exports.clear()  # as in a new process: found through the index
    twice = function([x, s], VectorTimesScalar()(VectorTimesScalar()(x, s), s), mode=CPY)
    assert twice.node_outcomes == ["hit", "hit"] and len(compiled_modules()) == 1
    assert twice(np.ones(2), np.array(3.0)).tolist() == [9.0, 9.0]
    again = function([x, s], VectorTimesScalar()(x, s), mode=CPY)
    assert again.compile_profile["compiled"] == 0 and len(compiled_modules()) == 1
    assert alone(np.ones(2), 2.0).tolist() == again(np.ones(2), 2.0).tolist() == [2.0, 2.0]


def test_the_memo_of_node_codes_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    from opweave.link.c import _node_memo

    monkeypatch.setattr(CONTEXT, "node_codes", {})
    monkeypatch.setattr(_node_memo, "_MEMO_SIZE", 3)
    ks = constants(6, seed=8)
    f = chain(ks)
    assert len(CONTEXT.node_codes) == 3
    np.testing.assert_allclose(f(X), expected(ks), rtol=1e-12)
    again = chain(ks)  # keys computed again, the same: nothing compiled
    assert again.compile_profile["compiled"] == 0
