"""Compile units (opweave/link/c/_units.py, build_module with units): a graph
with many distinct node codes is compiled as several units, each a cache
entry of its own, compiled in parallel and linked; an edit recompiles only
the units it touches. Results, state, params, ExternalCOp files and errors
are as with one unit."""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from support.counting_cxx import counting_compiler, runs
from support.layout_ops import AddScaled, Counter, Increment, values

import opweave
from opweave import _core
from opweave.compile.function import function
from opweave.compile.mode import Mode
from opweave.errors import CompileError
from opweave.graph.basic import Apply
from opweave.graph.fg import FunctionGraph
from opweave.link.c import cmodule
from opweave.link.c.basic import CLinker
from opweave.link.c.op import COp
from opweave.tensor import dvector


def mixed_graph(n_codes: int):
    """Distinct codes (AddScaled(k)), two stateful nodes, params nodes and an
    ExternalCOp node, in one chain."""
    from opweave.examples.external_vector_times_vector import VectorTimesVector
    from opweave.examples.quadratic import Quadratic

    x, y = dvector("x"), dvector("y")
    out = x
    for k in range(n_codes):
        out = AddScaled(0.25 * (k % 7) + 0.5 + k * 1e-3)(out, y)
        if k == n_codes // 3:
            out = Counter()(Increment()(out))
        if k == n_codes // 2:
            out = VectorTimesVector()(Quadratic(0.0, 1.0, float(k))(out), y)
    return [x, y], [Counter()(out), out]


def unit_spec_of(inputs, outputs) -> _core.ModuleSpec:
    return CLinker().accept(FunctionGraph(inputs, outputs)).graph_spec().spec


def test_a_graph_in_units_matches_one_unit() -> None:
    # Counter has no perform: one unit is the reference here, and the kchain
    # tests below compare with perform.
    inputs, outputs = mixed_graph(40)
    args = [values(6), values(6, seed=1)]
    with opweave.config.change_flags(cmodule__unit_threshold=8):
        assert len(unit_spec_of(inputs, outputs).units) >= 2
        in_units = function(inputs, outputs)
        profile = in_units.compile_profile
    with opweave.config.change_flags(cmodule__unit_threshold=0):
        assert unit_spec_of(inputs, outputs).units == []
        whole = function(inputs, outputs)
    assert profile["modules"][0]["units_compiled"] >= 2
    previous = None
    for _ in range(3):  # the counters keep their state per node, call after call
        got, want = in_units(*args), whole(*args)
        for a, b in zip(got, want, strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-12)
        if previous is not None:
            assert not np.allclose(got[0], previous)
        previous = got[0]
    assert in_units.library != whole.library


class HeavyAddScaled(AddScaled):
    """AddScaled whose node code carries ``kilobytes`` KB of text (a comment),
    as PyTensor's ops carry 5 to 80 KB."""

    __props__ = ("k", "kilobytes")

    def __init__(self, k: float, kilobytes: int) -> None:
        super().__init__(k)
        self.kilobytes = kilobytes

    def c_code(self, node, name, inp, out, sub):
        padding = "/* " + "weight " * (self.kilobytes * 1024 // 7) + "*/\n"
        return padding + super().c_code(node, name, inp, out, sub)

    def c_code_cache_version(self):
        return (1,)


def test_few_heavy_codes_are_cut_into_units_and_few_light_ones_are_not() -> None:
    x, y = dvector("x"), dvector("y")
    args = [values(5), values(5, seed=2)]
    for kilobytes, cut in [(40, True), (1, False)]:
        out = x
        for k in range(4):  # 4 distinct codes, far below the threshold of 24
            out = HeavyAddScaled(0.5 + k, kilobytes)(out, y)
        spec = unit_spec_of([x, y], [out])
        assert (len(spec.units) >= 2) == cut
        f = function([x, y], out)
        want = args[0]
        for k in range(4):
            want = want * (0.5 + k) + args[1]
        np.testing.assert_allclose(f(*args), want, rtol=1e-12)
        assert (f.compile_profile["modules"][0]["units_compiled"] >= 2) == cut


def heavy_chain(ks: list[float]):
    x, y = dvector("x"), dvector("y")
    out = x
    for k in ks:
        out = HeavyAddScaled(k, 6)(out, y)
    return [x, y], out


def test_a_heavy_graph_of_one_unit_compiles_its_body_beside_it(tmp_path: Path) -> None:
    # 3 distinct codes of 6 KB each: far below the threshold, and one unit.
    ks = [0.5, 1.5, 2.5]
    args = [values(5), values(5, seed=2)]

    def want(ks: list[float]) -> np.ndarray:
        out = args[0]
        for k in ks:
            out = out * k + args[1]
        return out

    with opweave.config.change_flags(compile__jobs=1):
        inputs, out = heavy_chain(ks)
        assert len(unit_spec_of(inputs, [out]).units) == 0  # nothing runs beside it
    cxx, log = counting_compiler(tmp_path)
    with opweave.config.change_flags(compile__jobs=2, cxx=cxx):
        inputs, out = heavy_chain(ks)
        spec = unit_spec_of(inputs, [out])
        assert len(spec.units) == 1 and spec.definitions  # the body keeps the cells
        f = function(*heavy_chain(ks))
        np.testing.assert_allclose(f(*args), want(ks), rtol=1e-12)
        assert f.compile_profile["modules"][0]["units_compiled"] == 2  # the unit, the body
        runs(log)
        edited = [ks[0], ks[1] + 0.25, ks[2]]
        g = function(*heavy_chain(edited))
        np.testing.assert_allclose(g(*args), want(edited), rtol=1e-12)
        module = g.compile_profile["modules"][0]
        # The edited struct's unit and the module's own source (the names)
        # are compiled; the body and the unit of the others are reused.
        assert module["units_compiled"] == 1 and module["units_reused"] == 2
        assert runs(log) == (2, 1)
    np.testing.assert_allclose(f(*args), want(ks), rtol=1e-12)


def test_units_hold_the_node_code_and_the_module_only_declares_it() -> None:
    inputs, outputs = mixed_graph(40)
    with opweave.config.change_flags(cmodule__unit_threshold=8):
        linker = CLinker().accept(FunctionGraph(inputs, outputs))
        graph = linker.graph_spec()
    assembled = _core.assemble_module(graph.spec)
    run = re.compile(r"^int (op_[0-9a-f]+)::run\(", re.M)
    struct = re.compile(r"^struct (op_[0-9a-f]+) \{", re.M)
    bodies = [run.findall(u.text) for u in assembled.units]
    defined = [name for names in bodies for name in names]
    declared = struct.findall(assembled.text)
    # Counter keeps per-node state: its struct (one code) stays in the body.
    in_body = run.findall(assembled.body.text)
    assert len(in_body) == 1 and struct.findall(assembled.body.text) == in_body
    assert run.findall(assembled.text) == []  # the module's own source only names
    assert len(defined) == len(set(defined)) == len(declared)  # each body in one unit
    assert set(defined) == set(declared)
    # The body names no struct a unit holds: an edit of their code keeps it.
    assert not any(name in assembled.body.text for name in defined)
    # A unit holds no graph: its text does not depend on the rest of the graph.
    assert all("opweave_graph" not in u.text for u in assembled.units)
    # Its ExternalCOp code keeps the #line of its file.
    assert any('.c"' in u.text and "#line" in u.text for u in assembled.units)


def kchain(ks):
    x, y = dvector("x"), dvector("y")
    out = x
    for k in ks:
        out = AddScaled(float(k))(out, y)
    return [x, y], [out]


def test_an_edit_recompiles_only_the_units_it_touches(tmp_path: Path) -> None:
    cxx, log = counting_compiler(tmp_path)
    args = [values(4), values(4, seed=3)]
    flags = {"cxx": cxx, "cmodule__precompiled_header": False, "cmodule__unit_threshold": 8}
    with opweave.config.change_flags(**flags):
        first = function(*kchain(range(1, 41)))
        cold_compiles, cold_links = runs(log)
        units = first.compile_profile["modules"][0]["units_compiled"]
        assert units >= 2
        assert (cold_compiles, cold_links) == (units + 1, 1)  # the units and the module
        edited = function(*kchain([*range(1, 40), 99]))
        compiles, links = runs(log)
        profile = edited.compile_profile["modules"][0]
        assert links == 1
        assert compiles == profile["units_compiled"] + 1 <= 3
        assert profile["units_reused"] >= units - 2
        # The same graph again is a hit: nothing runs.
        function(*kchain([*range(1, 40), 99]))
        assert runs(log) == (0, 0)
    want = function(*kchain([*range(1, 40), 99]), mode=Mode(linker="py"))(*args)
    np.testing.assert_allclose(edited(*args), want, rtol=1e-12)


def test_a_unit_evicted_from_the_cache_is_rebuilt() -> None:
    with opweave.config.change_flags(cmodule__unit_threshold=8):
        function(*kchain(range(1, 30)))
        cache = cmodule.get_module_cache()
        units = [entry for entry in cache.list() if entry.kind == "unit"]
        assert len(units) >= 2
        for entry in units:
            assert cache.evict(entry.key)
        other = function(*kchain([*range(1, 29), 77]))
        assert other.compile_profile["modules"][0]["units_reused"] == 0
    args = [values(3), values(3, seed=5)]
    want = function(*kchain([*range(1, 29), 77]), mode=Mode(linker="py"))(*args)
    np.testing.assert_allclose(other(*args), want, rtol=1e-12)


def test_a_compile_error_in_a_unit_still_names_the_node_and_line() -> None:
    class Broken(COp):
        __props__ = ()

        def make_node(self, x, y):
            return Apply(self, [x, y], [x.type()])

        def c_code(self, node, name, inp, out, sub):
            return "int fine = 1;\nthis is not C;\n"

    inputs, outputs = kchain(range(1, 30))
    out = Broken()(outputs[0], inputs[1])
    with opweave.config.change_flags(cmodule__unit_threshold=8):
        with pytest.raises(CompileError) as raised:
            function(inputs, [AddScaled(5.0)(out, inputs[1])])
    assert "node 29 (Broken" in raised.value.summary
    assert "c_code, line 2 of its code" in raised.value.summary


def test_compile_jobs_reaches_the_cache() -> None:
    with opweave.config.change_flags(compile__jobs=1, cmodule__unit_threshold=8):
        assert cmodule.get_module_cache().compile_jobs == 1
        f = function(*kchain(range(1, 30)))
    args = [values(2), values(2, seed=7)]
    want = function(*kchain(range(1, 30)), mode=Mode(linker="py"))(*args)
    np.testing.assert_allclose(f(*args), want, rtol=1e-12)
    assert os.cpu_count()


def test_compile_slot_dir_holds_the_slots_of_a_build(tmp_path: Path) -> None:
    slots = tmp_path / "slots"
    with opweave.config.change_flags(compile__slot_dir=str(slots), cmodule__unit_threshold=8):
        assert cmodule.get_module_cache().slot_dir == slots
        f = function(*kchain(range(1, 30)))
    assert cmodule.get_module_cache().slot_dir is None
    args = [values(2), values(2, seed=7)]
    want = function(*kchain(range(1, 30)), mode=Mode(linker="py"))(*args)
    np.testing.assert_allclose(f(*args), want, rtol=1e-12)
    assert list(slots.glob("compile-slot-*.lock"))
    assert stat.S_IMODE(slots.stat().st_mode) == 0o700


def test_get_src_code_shows_a_graph_in_units_as_one_text() -> None:
    inputs, outputs = kchain(range(1, 30))
    with opweave.config.change_flags(cmodule__unit_threshold=8):
        text = CLinker().accept(FunctionGraph(inputs, outputs)).get_src_code()
    declared = re.findall(r"^struct (op_[0-9a-f]+) \{", text, re.M)
    defined = re.findall(r"^int (op_[0-9a-f]+)::run\(", text, re.M)
    assert len(declared) == 29
    assert sorted(declared) == sorted(defined)


@pytest.mark.parametrize(
    ("make", "what"),
    [
        (lambda: _core.ModuleSpec(n_input=1), "n_input"),
        (lambda: _core.UnitSpec(header=["<x.h>"]), "header"),
        (lambda: _core.GraphExport(key="0" * 64, table="t", defs=[]), "defs"),
        (lambda: _core.ModuleSpec(support_code=[("x", 0, 1)]), "a CodeFragment"),
        (lambda: _core.ModuleSpec(run_steps=[(1, "f", "")]), "a Step"),
        (lambda: _core.ModuleSpec(origins=[("what", 3, 1)]), "a CodeOrigin"),
    ],
)
def test_a_misspelt_part_of_a_module_spec_is_an_error(make: Any, what: str) -> None:
    """A part the assembler does not know, or of the wrong shape, is a
    TypeError, rather than a part left out of the module."""
    with pytest.raises(TypeError, match=re.escape(what)):
        make()


def test_the_parts_of_a_module_spec_read_back_as_typed_records() -> None:
    origin = _core.CodeOrigin("node 0 Op c_code", "", 1)
    spec = _core.ModuleSpec(
        origins=[origin],
        support_code=[("int x;\n", 0)],
        run_steps=[(1, "f", "", [2, 3])],
        units=[_core.UnitSpec(headers=["<x.h>"])],
        n_inputs=1,
    )
    assert spec.origins == [origin]
    assert spec.support_code == [_core.CodeFragment("int x;\n", 0)]
    assert spec.run_steps[0].args == [2, 3] and spec.run_steps[0].undo == ""
    assert spec.units[0].headers == ["<x.h>"] and spec.n_inputs == 1
    copy = spec.copy()
    copy.n_inputs = 2
    assert spec.n_inputs == 1


def test_origin_of_line_names_the_code_a_generated_line_came_from() -> None:
    spec = _core.ModuleSpec(
        origins=[_core.CodeOrigin("node 0 Op c_code", "", 1)],
        definitions=[[("int opweave_marker_a(void) {\nreturn 1;\n}\n", 0)]],
    )
    assembled = _core.assemble_module(spec)
    lines = assembled.text.splitlines()
    marker = lines.index("return 1;") + 1
    assert assembled.origin_of_line(marker) == (0, 2)
    assert assembled.origin_of_line(1) is None
    assert all(r.origin in (-1, 0) for r in assembled.line_map)
