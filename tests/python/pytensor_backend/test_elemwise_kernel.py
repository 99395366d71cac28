"""opweave's flat loop for PyTensor's ``Elemwise`` (opweave/pytensor/
_elemwise_kernel.py): where every operand but the broadcast scalars is
contiguous and of the output's size, one loop with each scalar read once;
elsewhere PyTensor's strided loop. Either way the values are bitwise those
of PyTensor's own C back end, and PyTensor's back ends are unchanged."""

from __future__ import annotations

import json
import logging
import re
import shutil
import subprocess

import numpy as np
import pytest

pytensor = pytest.importorskip("pytensor", reason="needs opweave[pytensor] (Python >= 3.12)")

import pytensor.tensor as pt  # noqa: E402
from pytensor.compile.mode import Mode, get_mode  # noqa: E402
from pytensor.tensor.elemwise import Elemwise  # noqa: E402

import opweave.pytensor  # noqa: E402,F401
from opweave.compile.debugmode import DebugMode  # noqa: E402
from opweave.link.c.kernels import code_op  # noqa: E402
from opweave.pytensor import OpweaveLinker  # noqa: E402
from opweave.pytensor._elemwise_kernel import (  # noqa: E402
    ElemwiseKernel,
    elemwise_kernel,
    expand_aliases,
)

OPWEAVE = Mode(linker="opweave", optimizer=None)
PYTENSOR_C = Mode(linker="c", optimizer=None)
OPWEAVE_FUSED = Mode(linker="opweave", optimizer="fast_run")
PYTENSOR_C_FUSED = Mode(linker="c", optimizer="fast_run")


def both(inputs, outputs, fused: bool = False):
    """The graph under opweave and under PyTensor's C linker."""
    modes = (OPWEAVE_FUSED, PYTENSOR_C_FUSED) if fused else (OPWEAVE, PYTENSOR_C)
    return [pytensor.function(inputs, outputs, mode=m, accept_inplace=True) for m in modes]


def kernels(f) -> list[object]:
    """The code object of each Elemwise node of ``f``."""
    nodes = f.maker.fgraph.toposort()
    return [code_op(n) for n in nodes if isinstance(n.op, Elemwise)]


def same(got, expected) -> None:
    """Bitwise equal, NaNs in the same places."""
    got = got if isinstance(got, list) else [got]
    expected = expected if isinstance(expected, list) else [expected]
    for g, e in zip(got, expected, strict=True):
        assert g.dtype == e.dtype and g.shape == e.shape
        assert g.flags.f_contiguous == e.flags.f_contiguous  # the same memory order
        bits = lambda a: np.ascontiguousarray(a).view(np.uint8)  # noqa: E731
        np.testing.assert_array_equal(bits(g), bits(e))


def normal_like(rng, shape, layout: str) -> np.ndarray:
    """A float64 array of ``shape``: contiguous (C), Fortran (F), a strided
    view, or a transposed view."""
    if layout == "strided":
        return rng.normal(size=(*shape[:-1], 2 * shape[-1]))[..., ::2]
    if layout == "transposed":
        return rng.normal(size=shape[::-1]).T
    a = rng.normal(size=shape)
    return np.asfortranarray(a) if layout == "F" else a


@pytest.mark.parametrize("layout", ["C", "F", "strided", "transposed"])
@pytest.mark.parametrize("shape", [(0,), (1,), (7,), (900,), (30, 17), (3, 4, 5)])
def test_a_log_density_term_is_bitwise_pytensors(layout, shape) -> None:
    x = pt.tensor("x", shape=(None,) * len(shape))
    mu, sigma = pt.scalar("mu"), pt.scalar("sigma")
    term = -0.5 * ((x - mu) / sigma) ** 2 - pt.log(sigma)
    fo, fc = both([x, mu, sigma], term)
    assert any(isinstance(k, ElemwiseKernel) for k in kernels(fo))
    rng = np.random.default_rng(len(shape))
    args = [normal_like(rng, shape, layout), np.array(0.3), np.array(1.7)]
    same(fo(*args), fc(*args))


@pytest.mark.parametrize("layout", ["C", "F", "strided"])
def test_fused_composites_with_two_outputs_are_bitwise_pytensors(layout) -> None:
    x, y = pt.matrix("x"), pt.matrix("y")
    s = pt.scalar("s")
    a = pt.exp(x / s) * y
    outs = [a + 1.0, pt.sqrt(a * a + y) / s]
    fo, fc = both([x, y, s], outs, fused=True)
    assert any(isinstance(k, ElemwiseKernel) for k in kernels(fo))
    rng = np.random.default_rng(2)
    args = [normal_like(rng, (40, 9), layout), normal_like(rng, (40, 9), "C"), np.array(0.7)]
    same(fo(*args), fc(*args))


def test_a_partly_broadcast_operand_takes_pytensors_loop_with_the_same_values() -> None:
    x, row = pt.matrix("x"), pt.row("row")
    s = pt.scalar("s")
    fo, fc = both([x, row, s], (x - row) / s)
    rng = np.random.default_rng(3)
    args = [rng.normal(size=(6, 5)), rng.normal(size=(1, 5)), np.array(3.0)]
    same(fo(*args), fc(*args))
    np.testing.assert_allclose(fo(*args), (args[0] - args[1]) / 3.0, rtol=0)


def test_inplace_and_repeated_inputs_are_bitwise_pytensors() -> None:
    x, s = pt.vector("x"), pt.scalar("s")
    inplace = Elemwise(pt.add(x, x).owner.op.scalar_op, {0: 0})
    fo, fc = both([x, s], inplace(x, x * s))
    assert all(isinstance(k, ElemwiseKernel) for k in kernels(fo))
    rng = np.random.default_rng(4)
    v = rng.normal(size=33)
    same(fo(np.copy(v), np.array(2.5)), fc(np.copy(v), np.array(2.5)))
    np.testing.assert_array_equal(fo(np.copy(v), np.array(2.5)), v + v * 2.5)


@pytest.mark.parametrize("dtype", ["int64", "int32", "float32", "uint8", "bool"])
def test_other_dtypes_are_pytensors(dtype) -> None:
    x, y = pt.vector("x", dtype=dtype), pt.scalar("y", dtype=dtype)
    out = x * y if dtype != "bool" else pt.and_(x, y)
    fo, fc = both([x, y], [out, pt.maximum(x, y)])
    rng = np.random.default_rng(5)
    xv = (rng.normal(size=50) * 9).astype(dtype)
    yv = np.array(3, dtype=dtype)
    same(fo(xv, yv), fc(xv, yv))


def test_integer_division_by_zero_fails_as_pytensors() -> None:
    x, y = pt.vector("x", dtype="int64"), pt.scalar("y", dtype="int64")
    fo, fc = both([x, y], x // y)
    xv = np.arange(10, dtype="int64")
    same(fo(xv, np.array(3)), fc(xv, np.array(3)))
    results = []
    for f in (fo, fc):
        try:
            results.append(("value", f(xv, np.array(0)).tolist()))
        except Exception as error:  # what PyTensor's C gives, opweave must give
            results.append(("error", type(error).__name__))
    assert results[0] == results[1]


def test_a_wrong_length_raises_as_pytensors() -> None:
    x, y, s = pt.vector("x"), pt.vector("y"), pt.scalar("s")
    fo, fc = both([x, y, s], x * s + y)
    args = [np.ones(4), np.ones(5), np.array(1.0)]
    with pytest.raises(ValueError) as from_c:
        fc(*args)
    with pytest.raises(ValueError) as from_opweave:
        fo(*args)
    assert str(from_c.value).split("\n")[0] == str(from_opweave.value).split("\n")[0]


def test_outside_its_cases_the_kernel_declines(caplog) -> None:
    x, s = pt.vector("x"), pt.scalar("s")
    scalar_kernel = elemwise_kernel((s * s).owner)
    assert isinstance(scalar_kernel, ElemwiseKernel) and not scalar_kernel.flat  # 0-d: no loop
    half = pt.vector("h", dtype="float16")
    assert elemwise_kernel((half * half).owner) is None  # float16: no C code
    openmp = Elemwise((x * s).owner.op.scalar_op, openmp=True)
    openmp_node = openmp(x, s.dimshuffle("x")).owner
    assert elemwise_kernel(openmp_node) is None
    assert elemwise_kernel((x * s).owner).flat
    with caplog.at_level(logging.DEBUG, logger="opweave.link.c.kernels"):
        f = pytensor.function([x, s], openmp(x, s.dimshuffle("x")), mode=OPWEAVE)
    np.testing.assert_array_equal(f(np.array([1.0, 2.0]), np.array(3.0)), [3.0, 6.0])
    # PyTensor's own C code runs: said at DEBUG, not at INFO (only a node
    # left to perform is worth an INFO line)
    declined = [r for r in caplog.records if "does not cover these inputs" in r.getMessage()]
    assert declined and all(r.levelno == logging.DEBUG for r in declined)
    assert "its own C code runs" in declined[0].getMessage()


def test_debug_mode_checks_the_flat_loop_against_perform() -> None:
    mode = Mode(
        linker=OpweaveLinker("debug", debug_mode=DebugMode(check_refcounts=True)), optimizer=None
    )
    x, s = pt.matrix("x"), pt.scalar("s")
    f = pytensor.function([x, s], pt.exp(x / s) - s, mode=mode)
    rng = np.random.default_rng(6)
    for layout in ("C", "F", "strided"):
        xv = normal_like(rng, (12, 5), layout)
        np.testing.assert_allclose(f(xv, np.array(2.0)), np.exp(xv / 2.0) - 2.0, rtol=1e-15)


def test_pytensors_own_back_ends_do_not_use_the_kernel() -> None:
    x, s = pt.vector("x"), pt.scalar("s")
    f = pytensor.function([x, s], x / s, mode=PYTENSOR_C)
    (node,) = [n for n in f.maker.fgraph.toposort() if isinstance(n.op, Elemwise)]
    assert type(node.op) is Elemwise and not hasattr(node.op, "_flat_loop")
    code = node.op.c_code(node, "n", ["a", "b"], ["z"], {"fail": "goto fail;"})
    assert "n_flat" not in code
    kernel = ElemwiseKernel(node.op)
    assert "n_flat" in kernel.c_code(node, "n", ["a", "b"], ["z"], {"fail": "goto fail;"})


@pytest.mark.skipif(shutil.which("clang++") is None, reason="needs clang++ (CI installs it)")
def test_clang_builds_the_kernels_without_a_warning(tmp_path) -> None:
    """Every kernel (a flat loop that calls exp, which clang cannot
    vectorise; the views, the sum's vector extension, the increments, the
    split, the gather, a partial reduction) built by clang++ as opweave builds it, without a
    warning. (With -Wall, clang also reports GCC's ivdep pragma as unknown,
    and opweave's own glue has unused typedefs.)"""
    import opweave

    x, s = pt.vector("x"), pt.scalar("s")
    a, b = pt.split(x * 2.0, [1, 3])
    y = pt.log1p(pt.exp(x / s)) + x / s
    outs = [pt.inc_subtensor(y[1:], b).sum() + a[0], pt.set_subtensor(y[0], s), x[[0, 2]]]
    outs.append(pt.max(pt.outer(x, y), axis=0))  # a partial reduction
    with opweave.config.change_flags(cxx="clang++", compiledir=str(tmp_path)):
        f = pytensor.function([x, s], outs, mode=get_mode("OPWEAVE"))
        g = pytensor.function([x, s], outs, mode=get_mode("CVM"))
        args = (np.arange(4.0), np.array(2.0))
        for got, expected in zip(f(*args), g(*args), strict=True):
            np.testing.assert_allclose(got, expected, rtol=1e-15)
    entries = [m.parent for m in tmp_path.rglob("meta.json")]
    sources = {e: "".join(c.read_text() for c in e.glob("*.cpp")) for e in entries}
    markers = ("n_flat", "opweave_same_view", "opweave_pairwise_sum", "xview_offset", "opw_local")
    for marker in markers:
        assert any(marker in text for text in sources.values()), marker
    for entry in entries:
        meta = json.loads((entry / "meta.json").read_text())
        if meta["kind"] == "graph":  # a graph record: nothing compiled
            continue
        # Its compiles (a module linked from units has a link of objects too,
        # which names no source).
        command = "\n".join(c for c in meta["command"].split("\n")[1:] if ".cpp" in c)
        assert "clang++" in command
        command = re.sub(r"-MF \S+", "-MF /dev/null", re.sub(r"-o \S+\.o", "-o /dev/null", command))
        built = subprocess.run(command, shell=True, cwd=entry, capture_output=True, text=True)
        assert built.returncode == 0, built.stderr[-2000:]
        warnings = re.findall(r"\.cpp:\d+:\d+: (warning: .*)", built.stderr)
        assert warnings == [], built.stderr[-2000:]
        # With -Wall (opweave's own -Wno-... flags still follow), nothing
        # from the kernels' text: their branch-free test uses ints, not bools.
        command = command.replace("clang++", "clang++ -Wall", 1)
        built = subprocess.run(command, shell=True, cwd=entry, capture_output=True, text=True)
        assert "-Wbitwise-instead-of-logical" not in built.stderr, built.stderr[-2000:]


def test_in_place_aliases_are_expanded_as_the_preprocessor_would() -> None:
    text = "\n".join([
        "int a = 1;",
        "#define o0_i i0_i",
        "#define o1_i o0_i",
        'o0_i = o1_i + x_o0_i; puts("o0_i"); // o0_i',
        "#undef o1_i",
        "#undef o0_i",
        "o0_i = 2;",
    ])  # fmt: skip
    assert expand_aliases(text) == "\n".join([
        "int a = 1;",
        'i0_i = i0_i + x_o0_i; puts("o0_i"); // o0_i',
        "o0_i = 2;",
    ])  # fmt: skip
    assert expand_aliases("#define A B\nA;") is None  # never undone: it reaches later code
    assert expand_aliases("#define A (B + 1)\nA;\n#undef A") is None  # not an alias
    assert expand_aliases("#pragma omp parallel for\nf();") is None
    assert expand_aliases("#undef A") is None
    assert expand_aliases("#define A B\nx = \\\nA;\n#undef A") is None  # a continued line


@pytest.mark.parametrize("length", [None, 1], ids=["vector", "one-element (no flat loop)"])
def test_in_place_code_has_no_preprocessor_line_and_pytensors_values(length) -> None:
    x, y = pt.tensor("x", shape=(length,)), pt.tensor("y", shape=(length,))
    mode = get_mode("OPWEAVE")  # PyTensor's rewrites make the loop in place
    made = pt.cumsum(x)  # a result of its own: destroyable
    out = pt.exp(made * 2.0) + y
    fo = pytensor.function([x, y], [out, out * y], mode=mode)
    fc = pytensor.function([x, y], [out, out * y], mode=get_mode("CVM"))
    nodes = [n for n in fo.maker.fgraph.toposort() if isinstance(n.op, Elemwise)]
    assert any(n.op.inplace_pattern for n in nodes)
    for node in nodes:
        kernel = code_op(node)
        names = [f"i{k}" for k in range(len(node.inputs))]
        outs = [f"o{k}" for k in range(len(node.outputs))]
        code = kernel.c_code(node, "n", names, outs, {"fail": "goto fail;"})
        assert not re.search(r"^\s*#", code, re.M), code
    rng = np.random.default_rng(9)
    args = [rng.normal(size=length or 5), rng.normal(size=length or 5)]
    for g, e in zip(fo(*args), fc(*args), strict=True):
        np.testing.assert_array_equal(g, e)


@pytest.mark.parametrize("layout", ["C", "F", "strided"])
def test_operands_broadcast_along_whole_axes_take_the_rows_loop(layout) -> None:
    """An outer product's (n, 1) and (1, m), a row, a column and a full
    matrix: the loop over rows (C-contiguous operands) or PyTensor's loop,
    bitwise the C back end's values either way."""
    col, row = pt.matrix("col", shape=(None, 1)), pt.matrix("row", shape=(1, None))
    full, s = pt.matrix("full"), pt.scalar("s")
    outs = [pt.exp(-((col - row) ** 2) / s) * full, col * row + s, pt.log1p(pt.exp(row)) - full]
    fo, fc = both([col, row, full, s], outs)
    node = next(
        n
        for n in fo.maker.fgraph.toposort()
        if isinstance(n.op, Elemwise) and col in n.inputs and row in n.inputs
    )
    kernel = elemwise_kernel(node)
    code = kernel.c_code(
        node, "n", [f"i{k}" for k in range(len(node.inputs))], ["o0"], {"fail": "f"}
    )
    assert "r_rows" in code  # the rows loop is there
    rng = np.random.default_rng(11)
    args = [
        normal_like(rng, (7, 1), layout),
        normal_like(rng, (1, 9), layout),
        normal_like(rng, (7, 9), layout),
        np.array(2.0),
    ]
    for got, expected in zip(fo(*args), fc(*args), strict=True):
        assert got.tobytes() == np.ascontiguousarray(expected).tobytes() or np.array_equal(
            got, expected
        )
        np.testing.assert_array_equal(got, expected)
    empty = [args[0][:0], args[1], args[2][:0], args[3]]
    for got, expected in zip(fo(*empty), fc(*empty), strict=True):
        assert got.shape == expected.shape
