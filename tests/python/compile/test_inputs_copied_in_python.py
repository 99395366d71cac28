"""An in-place node on an input whose type has no DeepCopyOp C code runs in
every mode: in C mode the input is copied in Python before each call (issue
36), so the caller's value is never changed, whether it is passed by
position or by name, unless the input is mutable."""

from __future__ import annotations

from typing import Any

import pytest

import opweave
from opweave.compile.io import In
from opweave.compile.ops import DeepCopyOp
from opweave.graph.basic import Apply
from opweave.link.c.op import COp
from opweave.link.c.type import generic


class AppendOne(COp):
    """Appends 1 to a list, in place (``destroy_map = {0: [0]}``)."""

    __props__ = ()
    destroy_map = {0: [0]}  # noqa: RUF012

    def make_node(self, x: Any) -> Apply:
        return Apply(self, [x], [generic()])

    def perform(self, node: Any, inputs: list[Any], outputs: list[list[Any]]) -> None:
        inputs[0].append(1)
        outputs[0][0] = inputs[0]

    def c_code_cache_version(self) -> tuple[int, ...]:
        return (1,)

    def c_code(self, node: Any, name: str, inp: list[str], out: list[str], sub: dict) -> str:
        return f"""
        {{
            PyObject* one = PyLong_FromLong(1);
            int failed = one == NULL || PyList_Append({inp[0]}, one) != 0;
            Py_XDECREF(one);
            if (failed) {sub["fail"]}
        }}
        Py_XDECREF({out[0]});
        {out[0]} = {inp[0]};
        Py_INCREF({out[0]});
        """


def test_the_type_has_no_deep_copy_c_code() -> None:
    assert DeepCopyOp.c_code_entry(generic) is None


@pytest.mark.parametrize("mode", [None, "FAST_RUN", "C", "c|py", "py"])
def test_the_callers_value_is_never_destroyed(mode) -> None:
    x = generic("x")
    f = opweave.function([x], AppendOne()(x), mode=mode)
    given = [0]
    assert f(given) == [0, 1]
    assert f(x=given) == [0, 1]
    assert given == [0]
    assert f.mode.linker_name in ("c", "c|py", "py")


def test_a_mutable_input_is_destroyed_in_c_mode() -> None:
    x = generic("x")
    f = opweave.function([In(x, mutable=True)], AppendOne()(x), mode="C")
    given = [0]
    assert f(given) == [0, 1]
    assert given == [0, 1]
