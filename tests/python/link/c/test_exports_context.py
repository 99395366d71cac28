"""A node's exported code means what its key says (issue 36): a module
exports a node only when nothing else it holds can change what the node's
code means there (a neighbour's macro, in its support code or its C code,
or an overload of a function the node calls). So a node gives the same
result whatever was compiled before, in c|py, in C and in Python, in this
process and in a fresh one; and a neighbour that cannot change it keeps the
export, so that the node's code is reused without a compile."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from support.ops import copy_and_update

import opweave
from opweave.compile.function import function
from opweave.compile.mode import Mode
from opweave.graph.basic import Apply
from opweave.link.c.op import COp
from opweave.tensor import dvector

X = np.array([1.0, 2.0, 4.0])
CPY = Mode(linker="c|py", optimizer=None)


class _Elementwise(COp):
    """``z = x * a`` on float64 vectors; ``a`` from perform's view."""

    __props__ = ()
    factor = 1.0

    def make_node(self, x: Any) -> Apply:
        return Apply(self, [x], [x.type()])

    def perform(self, node: Any, inputs: list[Any], outputs: list[list[Any]]) -> None:
        outputs[0][0] = inputs[0] * self.factor

    def c_code_cache_version(self) -> tuple[int, ...]:
        return (1,)

    def update(self) -> str:
        return ""

    def c_code(self, node: Any, name: str, inp: list[str], out: list[str], sub: dict) -> str:
        return copy_and_update(inp[0], out[0], sub["fail"], self.update())


class Scaled(_Elementwise):
    """``z = x * OPW_FACTOR * opw_pick(1)``: 1 and 1 on their own."""

    def c_support_code(self, **kwargs: Any) -> str:
        return (
            "#ifndef OPW_FACTOR\n#define OPW_FACTOR 1.0\n#endif\n"
            "static inline double opw_pick(double v) { return 1.0; }\n"
        )

    def update(self) -> str:
        return "*value = *value * OPW_FACTOR * opw_pick(1);"


class MacroInSupport(_Elementwise):
    def c_support_code(self, **kwargs: Any) -> str:
        return "#define OPW_FACTOR 3.0\n"


class MacroInCode(_Elementwise):
    def update(self) -> str:
        return "\n#define OPW_FACTOR 3.0\n;"


class Overload(_Elementwise):
    def c_support_code(self, **kwargs: Any) -> str:
        return "static inline double opw_pick(int v) { return 3.0; }\n"


class Unrelated(_Elementwise):
    """Support code that names nothing the others use."""

    def c_support_code(self, **kwargs: Any) -> str:
        return "static inline double opw_unrelated(double v) { return v; }\n"


NEIGHBOURS = [MacroInSupport, MacroInCode, Overload]


@pytest.mark.parametrize("neighbour", NEIGHBOURS)
@pytest.mark.parametrize("order", ["before", "after"])
def test_a_node_means_the_same_whatever_was_compiled_before(neighbour, order) -> None:
    x = dvector("x")
    pair = neighbour()(Scaled()(x)) if order == "after" else Scaled()(neighbour()(x))
    function([x], pair, mode=CPY)  # the history
    for mode in (CPY, "c", "py", None):
        alone = function([x], Scaled()(x), mode=mode)
        np.testing.assert_array_equal(alone(X), X)


def test_a_fresh_process_does_not_use_an_export_made_among_neighbours(tmp_path: Path) -> None:
    x = dvector("x")
    function([x], MacroInSupport()(Scaled()(x)), mode=CPY)
    script = textwrap.dedent(
        f"""
        import sys
        sys.path[:0] = {[str(Path(__file__).parent), str(Path(__file__).parents[2])]!r}
        import numpy as np
        from test_exports_context import CPY, Scaled, X
        from opweave.compile.function import function
        from opweave.tensor import dvector
        x = dvector("x")
        print(function([x], Scaled()(x), mode=CPY)(X).tolist())
        """
    )
    env = dict(os.environ, OPWEAVE_FLAGS=f"compiledir={opweave.config.compiledir}")
    done = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == str(X.tolist())


class WithAttributes(_Elementwise):
    """Support code whose functions carry attributes, a specifier in
    parentheses before them (the cells' own functions carry one too)."""

    def c_support_code(self, **kwargs: Any) -> str:
        return (
            "__attribute__((noinline)) static double opw_attributed(double v) { return v; }\n"
            "alignas(16) static double opw_aligned[2];\n"
        )


@pytest.mark.parametrize("neighbour", ["unrelated", "with attributes"])
def test_a_neighbour_that_cannot_change_the_node_keeps_its_export(neighbour: str) -> None:
    x = dvector("x")
    other = Unrelated() if neighbour == "unrelated" else WithAttributes()
    function([x], other(Scaled()(x)), mode=CPY)
    alone = function([x], Scaled()(x), mode=CPY)
    np.testing.assert_array_equal(alone(X), X)
    assert alone.compile_profile["compiled"] == 0  # the export of the first module


class Guarded(_Elementwise):
    """Support code inside one include guard (as PyTensor's ParamsType and
    scalar functions write theirs): it defines the guard and a function."""

    guard = "OPW_GUARDED_DEFINED"

    def c_support_code(self, **kwargs: Any) -> str:
        return (
            f"/* guarded */\n#ifndef {self.guard}\n#define {self.guard}\n"
            "static inline double opw_guarded(double v) { return v; }\n#endif\n"
        )


class TestsTheGuard(_Elementwise):
    """``z = x * 3`` where the other's guard is defined, ``x`` alone."""

    def update(self) -> str:
        return "\n#ifdef OPW_GUARDED_DEFINED\n*value *= 3.0;\n#endif\n"


class GuardedWithAMacro(Guarded):
    guard = "OPW_GUARDED_TOO"

    def c_support_code(self, **kwargs: Any) -> str:
        return super().c_support_code().replace("static", "#define OPW_FACTOR 3.0\nstatic")


def test_an_include_guarded_neighbour_keeps_the_export() -> None:
    x = dvector("x")
    function([x], Guarded()(Scaled()(x)), mode=CPY)
    alone = function([x], Scaled()(x), mode=CPY)
    np.testing.assert_array_equal(alone(X), X)
    assert alone.compile_profile["compiled"] == 0  # the export of the first module


@pytest.mark.parametrize("neighbour", [GuardedWithAMacro, Guarded])
def test_a_guard_that_can_change_the_node_stops_the_export(neighbour) -> None:
    x = dvector("x")
    node = Scaled if neighbour is GuardedWithAMacro else TestsTheGuard
    function([x], node()(neighbour()(x)), mode=CPY)  # the history
    for mode in (CPY, "c", "py", None):
        alone = function([x], node()(x), mode=mode)
        np.testing.assert_array_equal(alone(X), X)


def test_include_guard_is_one_guard_around_all_the_code() -> None:
    from opweave.link.c._export_context import include_guard

    body = "int opw_x;\n"
    assert include_guard(f"/* a */\n#ifndef G\n#define G\n{body}#endif /* G */\n") == "G"
    assert include_guard(f'#ifndef G\n#define G\nconst char* s = "#endif";\n{body}#endif') == "G"
    assert include_guard(f"#ifndef G\n#define G 1\n{body}#endif") is None  # a value
    assert include_guard(f"#ifndef G\n#define H\n{body}#endif") is None
    assert include_guard(f"#ifndef G\n#define G\n{body}#endif\nint opw_after;") is None
    assert include_guard(f"int opw_before;\n#ifndef G\n#define G\n{body}#endif") is None
    assert include_guard(f"#ifndef G\n#define G\n#undef NAN\n{body}#endif") is None
    assert include_guard(f"#ifdef G\n#define G\n{body}#endif") is None
    assert include_guard(body) is None


class PackedInSupport(_Elementwise):
    """A pragma operator that packs the structs after it."""

    def c_support_code(self, **kwargs: Any) -> str:
        return '_Pragma("pack(1)")\nstatic inline double opw_packed(double v) { return v; }\n'


class LoopPragmaInCode(_Elementwise):
    """A pragma operator for its own loop only."""

    def update(self) -> str:
        return '\n_Pragma("GCC ivdep")\nfor (int k = 0; k < 1; ++k) { *value = *value; }\n'


def test_a_pragma_operator_counts_unless_it_is_for_the_next_loop() -> None:
    x = dvector("x")
    function([x], PackedInSupport()(Scaled()(x)), mode=CPY)
    alone = function([x], Scaled()(x), mode=CPY)
    np.testing.assert_array_equal(alone(X), X)
    assert alone.compile_profile["compiled"] == 1  # not the other module's export

    function([x], LoopPragmaInCode()(Unrelated()(x)), mode=CPY)
    again = function([x], Unrelated()(x), mode=CPY)
    np.testing.assert_array_equal(again(X), X)
    assert again.compile_profile["compiled"] == 0  # the export of the first module
