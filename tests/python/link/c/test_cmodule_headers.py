"""Complete keys, through ``opweave.function``: whatever a module's code is
made of (its C text, its support code, an ExternalCOp's .c file, headers in
every position, the compiler, the flags), a change gives a rebuild with the
new code, and nothing else does: the same script under other hash seeds gets
hits only."""

from __future__ import annotations

import stat
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from support.graph_worker import HeaderValue, ScaleBy
from support.helpers import run_graph

import opweave
from opweave.graph.basic import Apply
from opweave.link.c.op import ExternalCOp
from opweave.tensor import dvector

X = np.array([1.0, 2.0])


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def settle() -> None:
    """Lets the filesystem's clock move past the last write, so that the
    next compile's record of the headers is not "racy" (see docs/cache.md)."""
    time.sleep(0.05)


def compiled(op: Any, mode: str = "C") -> Any:
    x = dvector("x")
    return opweave.function([x], op(x), mode=mode)


@pytest.mark.parametrize("mode", ["C", "c|py"])
def test_a_header_found_through_c_header_dirs_and_named_by_c_headers(
    tmp_path: Path, mode: str
) -> None:
    write(tmp_path / "inc" / "opw_value.h", "#define OPW_VALUE 2.0\n")
    settle()
    first = compiled(HeaderValue(str(tmp_path / "inc")), mode)
    assert first(X).tolist() == [2.0, 4.0]
    assert compiled(HeaderValue(str(tmp_path / "inc")), mode)(X).tolist() == [2.0, 4.0]
    write(tmp_path / "inc" / "opw_value.h", "#define OPW_VALUE 3.0\n")
    assert compiled(HeaderValue(str(tmp_path / "inc")), mode)(X).tolist() == [3.0, 6.0]


def test_headers_in_subfolders_other_dirs_and_included_by_headers(tmp_path: Path) -> None:
    write(
        tmp_path / "a" / "opw_value.h",
        '#include <sub/part.h>\n#include "b_part.h"\n#define OPW_VALUE (PART + B_PART)\n',
    )
    write(tmp_path / "a" / "sub" / "part.h", "#define PART 1.0\n")
    write(tmp_path / "b" / "b_part.h", "#define B_PART 1.0\n")

    class TwoDirs(HeaderValue):
        def c_header_dirs(self, **kwargs: Any) -> list[str]:
            return [str(tmp_path / "a"), str(tmp_path / "b")]

    settle()
    assert compiled(TwoDirs("ignored"))(X).tolist() == [2.0, 4.0]
    f = compiled(TwoDirs("ignored"))
    assert f.cache_outcome == "hit"
    write(tmp_path / "a" / "sub" / "part.h", "#define PART 2.0\n")  # in a subfolder
    f = compiled(TwoDirs("ignored"))
    assert f.cache_outcome == "built" and f(X).tolist() == [3.0, 6.0]
    write(tmp_path / "b" / "b_part.h", "#define B_PART 3.0\n")  # another dir, via a header
    f = compiled(TwoDirs("ignored"))
    assert f.cache_outcome == "built" and f(X).tolist() == [5.0, 10.0]


class ScaleFromFile(ExternalCOp):
    __props__ = ()

    def __init__(self, path: Path) -> None:
        super().__init__(str(path), "APPLY_SPECIFIC(scale)")

    def make_node(self, x: Any) -> Apply:
        return Apply(self, [x], [x.type()])


_SCALE_C = """#section support_code_apply
#include <scale.h>
int APPLY_SPECIFIC(scale)(PyArrayObject* x, PyArrayObject** z) {
    Py_XDECREF(*z);
    *z = (PyArrayObject*)PyArray_NewCopy(x, NPY_CORDER);
    if (*z == NULL) { return 1; }
    for (npy_intp i = 0; i < PyArray_SIZE(*z); ++i)
        ((npy_float64*)PyArray_DATA(*z))[i] *= SCALE;
    return 0;
}
"""


def test_an_angle_bracket_header_next_to_an_external_c_file(tmp_path: Path) -> None:
    source = write(tmp_path / "scale.c", _SCALE_C)
    write(tmp_path / "scale.h", "#define SCALE 2.0\n")
    settle()
    assert compiled(ScaleFromFile(source))(X).tolist() == [2.0, 4.0]
    write(tmp_path / "scale.h", "#define SCALE 4.0\n")
    f = compiled(ScaleFromFile(source))
    assert f.cache_outcome == "built" and f(X).tolist() == [4.0, 8.0]


class Scaled(ScaleBy):
    """z = x * code, with `support` as its support code."""

    __props__ = ("code", "support")

    def __init__(self, code: str = "2.0", support: str = "") -> None:
        self.code, self.support = code, support

    def c_support_code(self, **kwargs: Any) -> str:
        return self.support

    def factor(self) -> str:
        return self.code


def test_code_support_code_compiler_and_flags_each_give_a_new_module(tmp_path: Path) -> None:
    assert compiled(Scaled("2.0"))(X).tolist() == [2.0, 4.0]
    assert compiled(Scaled("3.0"))(X).tolist() == [3.0, 6.0]  # the C body
    support = "static double opw_factor() { return 5.0; }\n"
    assert compiled(Scaled("opw_factor()", support))(X).tolist() == [5.0, 10.0]
    changed = support.replace("5.0", "7.0")
    assert compiled(Scaled("opw_factor()", changed))(X).tolist() == [7.0, 14.0]  # support code

    with opweave.config.change_flags(gcc__cxxflags="-DOPW_FLAG=1"):  # flags
        f = compiled(Scaled("2.0"))
    assert f.cache_outcome == "built"
    wrapper = write(tmp_path / "bin" / "g++", '#!/bin/sh\nexec g++ "$@"\n')
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
    with opweave.config.change_flags(cxx=str(wrapper)):  # the compiler
        f = compiled(Scaled("2.0"))
    assert f.cache_outcome == "built" and f(X).tolist() == [2.0, 4.0]
    assert compiled(Scaled("2.0")).cache_outcome == "hit"


@pytest.mark.slow
def test_the_same_script_under_other_hash_seeds_gets_hits_only(
    isolated_cache: Path, tmp_path: Path
) -> None:
    write(tmp_path / "inc" / "opw_value.h", "#define OPW_VALUE 2.0\n")
    graphs = ["vtv:2", f"header:{tmp_path / 'inc'}"]
    for graph in graphs:
        for mode in ("C", "c|py"):
            run_graph(isolated_cache, graph, mode, env={"PYTHONHASHSEED": "0"})
    for seed in ("1", "2", "12345", "random"):
        for graph in graphs:
            for mode in ("C", "c|py"):
                report = run_graph(isolated_cache, graph, mode, env={"PYTHONHASHSEED": seed})
                assert set(report["outcomes"]) <= {"hit", None}, (seed, graph, mode, report)
