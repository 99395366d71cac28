"""PyTensor's own ops compiled, cached and called by opweave through
``mode="OPWEAVE"``: every result is checked against NumPy, and every
function is checked to be opweave's (never a PyTensor linker's)."""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np
import pytest

pytensor = pytest.importorskip("pytensor", reason="needs opweave[pytensor] (Python >= 3.12)")
pt = pytest.importorskip("pytensor.tensor")

import opweave.pytensor  # noqa: E402
from opweave import _core  # noqa: E402
from opweave.link.c import cmodule  # noqa: E402
from opweave.pytensor import OpweaveLinker  # noqa: E402

MODES = ["OPWEAVE", pytensor.compile.mode.Mode(linker="opweave_c|py", optimizer="fast_run")]


def compiled(inputs, outputs, mode="OPWEAVE", **kwargs):
    """pytensor.function under ``mode``, checked to be linked by opweave."""
    f = pytensor.function(inputs, outputs, mode=mode, **kwargs)
    assert isinstance(f.vm, _core.CellCall), type(f.vm)
    assert isinstance(f.maker.linker, OpweaveLinker)
    return f


def test_names_are_registered_and_config_mode_takes_them() -> None:
    from pytensor.compile.mode import get_mode, predefined_linkers

    assert isinstance(predefined_linkers["opweave"], OpweaveLinker)
    assert predefined_linkers["opweave_c|py"].kind == "c|py"
    assert isinstance(get_mode("OPWEAVE").linker, OpweaveLinker)
    assert get_mode("OPWEAVE").linker.c_thunks
    with pytensor.config.change_flags(mode="OPWEAVE"):
        x = pt.dvector("x")
        f = pytensor.function([x], x * 2)
        assert isinstance(f.vm, _core.CellCall)
        np.testing.assert_array_equal(f(np.arange(3.0)), [0.0, 2.0, 4.0])
    with pytest.raises(ValueError):
        pytensor.config.mode = "NO_SUCH_MODE"


def test_modules_are_built_for_this_cpu() -> None:
    from opweave.configparser import config

    if config.is_set("cmodule__march") and config.cmodule__march != "native":
        pytest.skip("cmodule__march is given in OPWEAVE_FLAGS")
    assert config.cmodule__march == "native"
    x = pt.dvector("x")
    f = compiled([x], pt.exp(x) + 1)
    entry = Path(f.vm.function.library).parent
    assert "-march=" in (entry / "meta.json").read_text()


def test_the_whole_graph_is_one_module() -> None:
    x, y = pt.dvectors("x", "y")
    f = compiled([x, y], pt.exp(x) * y + x.sum())
    assert f.vm.function.is_compiled
    with open(f.vm.function.source) as source:
        assert source.read().count("PyInit_") == 1
    labels = [entry.label for entry in cmodule.get_module_cache().list()]
    assert any("Elemwise" in label or "CAReduce" in label for label in labels), labels
    a, b = np.arange(4.0), np.linspace(0, 1, 4)
    np.testing.assert_allclose(f(a, b), np.exp(a) * b + a.sum())


@pytest.mark.parametrize("mode", MODES, ids=["opweave", "opweave_c|py"])
@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64"])
def test_elemwise_and_composite(mode, dtype) -> None:
    x, y = pt.vector("x", dtype=dtype), pt.vector("y", dtype=dtype)
    out = (
        (x + y) * (x - 1) + pt.maximum(x, y) // 2
        if dtype.startswith("int")
        else (pt.exp(x) * pt.sin(y) + x**2 / (1 + pt.abs(y)))
    )
    f = compiled([x, y], [out, (x > y) & (y >= 0)], mode)
    a = np.arange(-3, 5).astype(dtype)
    b = np.arange(8)[::-1].astype(dtype) - 2
    want = (
        (a + b) * (a - 1) + np.maximum(a, b) // 2
        if dtype.startswith("int")
        else np.exp(a) * np.sin(b) + a**2 / (1 + np.abs(b))
    )
    got, mask = f(a, b)
    assert got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=1e-5)
    np.testing.assert_array_equal(mask, (a > b) & (b >= 0))


def test_bool_logic() -> None:
    p, q = pt.vector("p", dtype="bool"), pt.vector("q", dtype="bool")
    f = compiled([p, q], [p & ~q, pt.xor(p, q), pt.any(p), pt.all(q)])
    a, b = np.array([True, False, True]), np.array([False, False, True])
    got = f(a, b)
    np.testing.assert_array_equal(got[0], a & ~b)
    np.testing.assert_array_equal(got[1], a ^ b)
    assert bool(got[2]) is True and bool(got[3]) is False


@pytest.mark.parametrize("mode", MODES, ids=["opweave", "opweave_c|py"])
def test_reductions_and_blas(mode) -> None:
    A, B, C = pt.dmatrices("A", "B", "C")
    v, w = pt.dvectors("v", "w")
    outs = [
        A.sum(axis=0),
        A.max(axis=1),
        A.mean(),
        pt.dot(A, B) + 2 * C,
        pt.dot(A, v),
        pt.outer(v, w) + A,
        A.prod(axis=1),
    ]
    f = compiled([A, B, C, v, w], outs, mode)
    rng = np.random.default_rng(0)
    a, b, c = (rng.normal(size=(4, 4)) for _ in range(3))
    x, y = rng.normal(size=4), rng.normal(size=4)
    for _ in range(3):  # storage kept between calls must not change results
        got = f(a, b, c, x, y)
        want = [a.sum(0), a.max(1), a.mean(), a @ b + 2 * c, a @ x, np.outer(x, y) + a, a.prod(1)]
        for g, e in zip(got, want, strict=True):
            np.testing.assert_allclose(g, e, rtol=1e-10)


def test_blas_replaces_non_contiguous_inputs_without_releasing_the_callers() -> None:
    import sys

    A = pt.dmatrix("A")
    f = compiled([A], [pt.dot(A[:, ::2], A[::2, :]), pt.dot(A.T, A)])
    m = np.random.default_rng(1).normal(size=(6, 6))
    f(m)  # the function's input cell keeps the last argument
    before = sys.getrefcount(m)
    for _ in range(5):
        got = f(m)
        np.testing.assert_allclose(got[0], m[:, ::2] @ m[::2, :])
        np.testing.assert_allclose(got[1], m.T @ m)
    del got
    assert sys.getrefcount(m) == before


def test_unused_outputs_and_repeated_inputs() -> None:
    x = pt.dvector("x")
    first, _ = pt.split(x, [2, 3], n_splits=2)
    f = compiled([x], [first * 2, x * x * x * x, pt.clip(x, 0, x)])
    a = np.arange(5.0)
    got = f(a)
    np.testing.assert_array_equal(got[0], a[:2] * 2)
    np.testing.assert_array_equal(got[1], a**4)
    np.testing.assert_array_equal(got[2], a)


def test_views_of_intermediates_stay_the_callers_across_calls() -> None:
    x = pt.dvector("x")
    f = compiled([x], [(x * 2)[1:], (x + 1)[::-1]])
    first = f(np.arange(4.0))
    second = f(np.arange(4.0) + 10)
    np.testing.assert_array_equal(first[0], [2.0, 4.0, 6.0])
    np.testing.assert_array_equal(first[1], [4.0, 3.0, 2.0, 1.0])
    np.testing.assert_array_equal(second[0], [22.0, 24.0, 26.0])


def test_inplace_ops_with_gradients() -> None:
    x = pt.dvector("x")
    loss = (pt.tanh(x[1:]) ** 2).sum() + (pt.exp(-x) * x).sum()
    g = pytensor.grad(loss, x)
    f = compiled([x], [loss, g])
    assert any(n.op.destroy_map for n in f.maker.fgraph.apply_nodes)  # inplace rewrites ran
    a = np.linspace(-1, 1, 5)
    for _ in range(2):
        val, grad = f(a)
        np.testing.assert_allclose(val, (np.tanh(a[1:]) ** 2).sum() + (np.exp(-a) * a).sum())
        want = np.exp(-a) * (1 - a)
        want[1:] += 2 * np.tanh(a[1:]) * (1 - np.tanh(a[1:]) ** 2)
        np.testing.assert_allclose(grad, want, rtol=1e-10)


def test_shared_updates_pickling_copy_and_free() -> None:
    x = pt.dvector("x")
    s = pytensor.shared(np.zeros(3), name="s")
    f = compiled([x], (s * 2).sum(), updates={s: s + x})
    assert f(np.ones(3)) == 0.0
    assert f(np.ones(3)) == 6.0
    np.testing.assert_array_equal(s.get_value(), [2.0, 2.0, 2.0])
    g = pickle.loads(pickle.dumps(f))
    assert isinstance(g.vm, _core.CellCall)
    assert g(np.ones(3)) == 12.0
    np.testing.assert_array_equal(s.get_value(), [2.0, 2.0, 2.0])  # g has its own s
    h = f.copy()
    assert h(np.ones(3)) == 12.0
    np.testing.assert_array_equal(s.get_value(), [3.0, 3.0, 3.0])  # h shares s
    f.free()
    assert f(np.ones(3)) == 18.0


def test_free_releases_what_the_module_keeps_and_reading_the_map_frees_nothing() -> None:
    import gc
    import weakref

    x = pt.dvector("x")
    f = compiled([x], (x[::-1] + 1) * 2)  # x[::-1]: a view of the input, kept in C
    assert not f.vm.allow_gc  # the whole-graph module keeps its intermediates
    a = np.zeros(3)
    np.testing.assert_array_equal(f(a), [2.0, 2.0, 2.0])
    for container in f.input_storage:
        container.storage[0] = None  # only the module holds the input now
    kept = weakref.ref(a)
    del a
    gc.collect()
    assert kept() is not None  # the view the module keeps holds it
    shared = f.copy(share_memory=True)  # iterates the storage map
    assert len(list(f.vm.storage_map.items())) > 0
    gc.collect()
    assert kept() is not None  # reading the map released nothing
    f.free()
    gc.collect()
    assert kept() is None  # free() released the view, and with it the input
    np.testing.assert_array_equal(f(np.ones(3)), [4.0, 4.0, 4.0])
    np.testing.assert_array_equal(shared(np.ones(3)), [4.0, 4.0, 4.0])


def test_scan_and_ifelse() -> None:
    from pytensor.ifelse import ifelse

    x = pt.dvector("x")
    c = pt.bscalar("c")
    ys = pytensor.scan(
        lambda v, acc: acc + v, sequences=[x], outputs_info=[pt.zeros(())], return_updates=False
    )
    f = compiled([x, c], [ys, ifelse(c, x * 2, x + 1), pt.median(x)])
    a = np.array([1.0, 2.0, 3.0, 4.0])
    got = f(a, 1)
    np.testing.assert_array_equal(got[0], np.cumsum(a))
    np.testing.assert_array_equal(got[1], a * 2)
    assert got[2] == 2.5
    np.testing.assert_array_equal(f(a, 0)[1], a + 1)


def test_errors_carry_pytensors_report() -> None:
    A, v = pt.dmatrix("A"), pt.dvector("v")
    f = compiled([A, v], pt.dot(A, v) * 2)
    with pytensor.config.change_flags(exception_verbosity="medium"):
        with pytest.raises(ValueError) as info:
            f(np.ones((2, 3)), np.ones(4))
    notes = "\n".join([str(info.value), *getattr(info.value, "__notes__", [])])
    node = f.vm.nodes[f.vm.position_of_error]
    assert "Gemv" in type(node.op).__name__ or "Dot" in type(node.op).__name__
    assert "Apply node that caused the error" in notes
    assert "Inputs shapes" in notes


def test_the_error_report_shows_the_real_intermediate_inputs() -> None:
    A, v = pt.dmatrix("A"), pt.dvector("v")
    f = compiled([A, v], pt.dot(pt.exp(A), pt.exp(v)))
    with pytensor.config.change_flags(exception_verbosity="high"):
        with pytest.raises(ValueError) as info:
            f(np.zeros((2, 3)), np.zeros(4))
    notes = "\n".join([str(info.value), *getattr(info.value, "__notes__", [])])
    shapes = next(line for line in notes.splitlines() if line.startswith("Inputs shapes"))
    assert "(2, 3)" in shapes and "(4,)" in shapes and "No shapes" not in shapes
    node = f.vm.nodes[f.vm.position_of_error]
    cells = f.vm.thunks[f.vm.position_of_error].inputs
    by_shape = {np.shape(cell[0]): cell[0] for cell in cells}
    np.testing.assert_array_equal(by_shape[(2, 3)], np.ones((2, 3)))  # exp(0), computed again
    np.testing.assert_array_equal(by_shape[(4,)], np.ones(4))
    assert any(variable.owner is not None for variable in node.inputs)


def test_float16_without_f16_code_is_right() -> None:
    h = pt.vector("h", dtype="float16")
    f = compiled([h], [h.mean(), h * 2])
    a = np.full(4, 15360, dtype="float16")
    got = f(a)
    assert float(got[0]) == 15360.0
    np.testing.assert_array_equal(got[1], a * 2)


def test_debug_mode_checks_refcounts_of_pytensors_ops() -> None:
    from opweave.compile.debugmode import DebugMode

    mode = pytensor.compile.mode.Mode(
        linker=OpweaveLinker("debug", debug_mode=DebugMode(check_refcounts=True)),
        optimizer="fast_run",
    )
    A, v = pt.dmatrix("A"), pt.dvector("v")
    f = compiled([A, v], [pt.exp(A) * 2 + pt.dot(A, v)[:, None]], mode)
    a, x = np.arange(6.0).reshape(2, 3) / 6, np.ones(3)
    np.testing.assert_allclose(f(a, x)[0], np.exp(a) * 2 + (a @ x)[:, None])
    checks = f.vm.function.node_checks
    assert checks and all(check.mode.check_refcounts for check in checks)


def test_an_untested_pytensor_version_warns() -> None:
    with pytest.warns(UserWarning, match="not tested"):
        assert not opweave.pytensor.check_version("9.0.0")
    assert opweave.pytensor.check_version(pytensor.__version__)


def test_float16_scalars_without_c_types_run_in_python() -> None:
    import pytensor.scalar as ps

    h = ps.float16("h")
    f = compiled([h], ps.cast(h, "complex64") * 2)
    assert f(np.float16(1.5)) == np.complex64(3.0)


def test_literal_inputs_are_names_in_op_code() -> None:
    # ScalarLoop pastes its input names into C identifiers: a constant input
    # is a local variable, never a literal, in the code it is given.
    import pytensor.scalar as ps
    from pytensor.scalar.loop import ScalarLoop

    x0 = ps.int32("x0")
    x = x0.type()
    op = ScalarLoop(init=[x], update=[x + 1])
    f = compiled([x0], op(np.int32(5), x0))
    assert f(np.int32(2)) == 7


def test_scan_gradients_with_preallocated_outputs() -> None:
    x = pt.dvector("x")
    w = pt.dscalar("w")
    ys = pytensor.scan(
        lambda v, acc, w: acc * w + v,
        sequences=[x],
        outputs_info=[pt.zeros(())],
        non_sequences=[w],
        return_updates=False,
        mode="OPWEAVE",
    )
    cost = ys[-1]
    f = compiled([x, w], [cost, pytensor.grad(cost, w)])
    a = np.array([1.0, 2.0, 3.0])
    value, grad = f(a, np.array(0.5))
    assert value == 1.0 * 0.25 + 2.0 * 0.5 + 3.0
    assert grad == 1.0 * 2 * 0.5 + 2.0


def test_profile_counts_calls() -> None:
    x = pt.dvector("x")
    f = compiled([x], pt.exp(x) * 2, profile=True)
    f(np.zeros(2))
    f(np.ones(2))
    assert f.profile.fct_callcount == 2
    assert f.profile.linker_time > 0


def test_an_output_a_later_inplace_node_destroys_keeps_its_value() -> None:
    import pytensor.scalar as ps
    from pytensor.tensor.elemwise import Elemwise

    add_inplace = Elemwise(ps.add, inplace_pattern={0: 0})
    x = pt.dvector("x")
    mid = x * 2
    one = pt.constant(np.array([1.0]))
    outputs = [mid, add_inplace(mid, one), mid]
    cpy = pytensor.compile.mode.Mode(linker="opweave_c|py", optimizer="fast_run")
    for mode in ("OPWEAVE", cpy):
        f = compiled([x], outputs, mode=mode, accept_inplace=True)
        got = f(np.array([1.0, 2.0]))
        np.testing.assert_array_equal(got[0], [2.0, 4.0])
        np.testing.assert_array_equal(got[1], [3.0, 5.0])
        np.testing.assert_array_equal(got[2], [2.0, 4.0])
