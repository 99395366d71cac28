"""The built-in ops :class:`ViewOp` and :class:`DeepCopyOp`, and the
registries that give them C code per type.

Neither op knows how to copy or alias a value in C by itself: each type
registers the C code to use (:func:`register_view_op_c_code`,
:func:`register_deep_copy_op_c_code`). The code is a ``%``-format string
that may use ``%(iname)s`` (the input's C variable), ``%(oname)s`` (the
output's) and ``%(fail)s`` (the statement to run on error). For a type with
no registered code, ``c_code`` raises NotImplementedError: ``mode="c|py"``
then runs the op's Python ``perform`` for that node, and ``mode="c"`` names
the node as having no C code.

This module registers the code of :class:`~opweave.tensor.type.TensorType`
and :class:`~opweave.scalar.basic.ScalarType` when it is imported.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from opweave.graph.basic import Apply, Variable, fresh_variable, is_variable, make_apply
from opweave.link.c._c_code_registry import (
    fill_code,
    find_entry,
    missing_code,
    registry_version,
    store_entry,
)
from opweave.link.c.op import COp
from opweave.link.thunk import set_output_copy

if TYPE_CHECKING:
    from opweave.compile.from_function import FromFunctionOp, as_op, wrap_py

__all__ = [
    "DeepCopyOp",
    "FromFunctionOp",
    "ViewOp",
    "as_op",
    "deep_copy_op",
    "register_deep_copy_op_c_code",
    "register_view_op_c_code",
    "view_op",
    "wrap_py",
]


def register_view_op_c_code(type: type, code: str, version: tuple[Any, ...] = ()) -> None:
    """Gives :class:`ViewOp` the C code ``code`` for variables whose type is
    an instance of the class ``type`` (or of a subclass that registers
    nothing itself). ``version`` is the code's cache version; ``()`` means
    unversioned."""
    store_entry(ViewOp.c_code_and_version, type, (code, version))


def register_deep_copy_op_c_code(typ: type, code: str, version: tuple[Any, ...] = ()) -> None:
    """Gives :class:`DeepCopyOp` the C code ``code`` for variables whose type
    is exactly of the class ``typ`` (subclasses must register their own).
    ``version`` is the code's cache version; ``()`` means unversioned."""
    store_entry(DeepCopyOp.c_code_and_version, typ, (code, version))


def _one_variable(op: Any, x: Any) -> Variable:
    if not is_variable(x):  # opweave's, or another graph library's
        raise TypeError(f"{op} expects a graph variable, got {type(x).__name__} ({x!r})")
    return x


def _same_type_node(op: Any, x: Any) -> Apply:
    """An apply of ``op`` on the variable ``x`` (opweave's, or another graph
    library's: see :func:`~opweave.graph.basic.fresh_variable` and
    :func:`~opweave.graph.basic.make_apply`) whose output has ``x``'s type."""
    x = _one_variable(op, x)
    return make_apply(op, [x], [fresh_variable(x)])


class ViewOp(COp):
    """Returns its input: the output is a view of (the same object as) the
    input. It exists to mark where a graph returns an alias of a value.

    In C it uses the code registered with :func:`register_view_op_c_code`
    for the input's type class or the nearest base class in its MRO."""

    __props__ = ()
    view_map: ClassVar[dict[int, list[int]]] = {0: [0]}
    _f16_ok = True
    c_code_and_version: ClassVar[dict[type, tuple[str, tuple[Any, ...]]]] = {}

    def make_node(self, x: Any) -> Apply:
        """An apply of this op on the variable ``x``; the output has ``x``'s
        type (see :func:`_same_type_node`)."""
        return _same_type_node(self, x)

    def perform(self, node: Apply, inputs: Sequence[Any], output_storage: list[list[Any]]) -> None:
        """The output is the input object itself."""
        output_storage[0][0] = inputs[0]

    def python_constant_folding(self, node: Apply) -> bool:
        """True: folding this op on constants needs no compiled module."""
        return True

    def c_code(
        self, node: Apply, name: str, inputs: list[str], outputs: list[str], sub: dict[str, str]
    ) -> str:
        """The registered code for the input's type (searched along its
        class's MRO). NotImplementedError if no class in it has code."""
        entry = find_entry(self.c_code_and_version, type(node.inputs[0].type), walk_mro=True)
        if entry is None:
            raise missing_code(self, node, "register_view_op_c_code")
        values = {"iname": inputs[0], "oname": outputs[0], "fail": sub["fail"], "name": name}
        return fill_code(self, node, entry[0], values)

    def c_code_cache_version(self) -> tuple[Any, ...]:
        """``((str(type_class), version), ...)`` over every registered type,
        sorted; ``()`` (with a warning) if one of them is unversioned."""
        return registry_version(self.c_code_and_version, "ViewOp")


view_op = ViewOp()


class DeepCopyOp(COp):
    """Returns a copy of its input that shares no memory with it.

    In C it uses the code registered with
    :func:`register_deep_copy_op_c_code` for exactly the input's type class;
    in Python it calls the value's ``copy()`` method, or ``copy.deepcopy``."""

    __props__ = ()
    check_input = False
    c_code_and_version: ClassVar[dict[type, tuple[str, tuple[Any, ...]]]] = {}

    def make_node(self, x: Any) -> Apply:
        """An apply of this op on the variable ``x``; the output has ``x``'s
        type (see :func:`_same_type_node`)."""
        return _same_type_node(self, x)

    def perform(self, node: Apply, inputs: Sequence[Any], output_storage: list[list[Any]]) -> None:
        """Copies the input: ``value.copy()`` if it has that method, else
        ``copy.deepcopy(value)``."""
        value = inputs[0]
        if hasattr(value, "copy"):
            output_storage[0][0] = value.copy()
        else:
            output_storage[0][0] = copy.deepcopy(value)

    def python_constant_folding(self, node: Apply) -> bool:
        """True: folding this op on constants needs no compiled module."""
        return True

    def c_code(
        self, node: Apply, name: str, inputs: list[str], outputs: list[str], sub: dict[str, str]
    ) -> str:
        """The registered code for exactly the input's type class.
        NotImplementedError if that class has none (a subclass does not
        inherit its base class's code: a subclass may hold more state)."""
        entry = self.c_code_entry(node.inputs[0].type)
        if entry is None:
            raise missing_code(self, node, "register_deep_copy_op_c_code")
        values = {"iname": inputs[0], "oname": outputs[0], "fail": sub["fail"], "name": name}
        return fill_code(self, node, entry[0], values)

    @classmethod
    def c_code_entry(cls, variable_type: Any) -> tuple[str, tuple[Any, ...]] | None:
        """The registered ``(code, version)`` for exactly the class of
        ``variable_type``, or None."""
        return find_entry(cls.c_code_and_version, type(variable_type), walk_mro=False)

    def c_code_cache_version(self) -> tuple[Any, ...]:
        """As :meth:`ViewOp.c_code_cache_version`, with a trailing ``1`` for
        this op's own code when versioned."""
        version = registry_version(self.c_code_and_version, "DeepCopyOp")
        return (*version, 1) if version else ()


deep_copy_op = DeepCopyOp()
set_output_copy(deep_copy_op)  # how linkers copy an output a later node destroys


# --- C code of the built-in types ---------------------------------------------

# A tensor view holds its own reference to the input array.
_TENSOR_VIEW = """
Py_XDECREF(%(oname)s);
%(oname)s = %(iname)s;
Py_XINCREF(%(oname)s);
"""

# The output array is reused only when this code's variable holds the only
# reference to it (nobody outside can see the overwrite), it is writeable and
# its dimensions are the input's; otherwise a new array is allocated.
# DeepCopyOp turns off input checks, so a NULL or non-array input (another
# op's bug) is tested for: a TypeError rather than a crash.
_TENSOR_DEEP_COPY = """
{
    if (%(iname)s == NULL || !PyArray_Check((PyObject*)%(iname)s)) {
        PyErr_SetString(PyExc_TypeError, "DeepCopyOp: expected an ndarray input");
        %(fail)s
    }
    int opw_reuse = %(oname)s != NULL && Py_REFCNT(%(oname)s) == 1
        && PyArray_ISWRITEABLE(%(oname)s)
        && PyArray_NDIM(%(oname)s) == PyArray_NDIM(%(iname)s);
    for (int opw_k = 0; opw_reuse && opw_k < PyArray_NDIM(%(iname)s); ++opw_k) {
        opw_reuse = PyArray_DIMS(%(oname)s)[opw_k] == PyArray_DIMS(%(iname)s)[opw_k];
    }
    if (opw_reuse) {
        if (PyArray_CopyInto(%(oname)s, %(iname)s) != 0) {
            %(fail)s
        }
    } else {
        Py_XDECREF(%(oname)s);
        %(oname)s = (PyArrayObject*)PyArray_NewCopy(%(iname)s, NPY_ANYORDER);
        if (%(oname)s == NULL) {
            %(fail)s
        }
    }
}
"""

# A C scalar is a plain value: assignment is both a view and a copy.
_SCALAR_ASSIGN = """
%(oname)s = %(iname)s;
"""


def _register_builtin_types() -> None:
    from opweave.scalar.basic import ScalarType
    from opweave.tensor.type import TensorType

    register_view_op_c_code(TensorType, _TENSOR_VIEW, version=(1,))
    register_deep_copy_op_c_code(TensorType, _TENSOR_DEEP_COPY, version=(1,))
    register_view_op_c_code(ScalarType, _SCALAR_ASSIGN, version=(1,))
    register_deep_copy_op_c_code(ScalarType, _SCALAR_ASSIGN, version=(1,))


_register_builtin_types()


_FROM_FUNCTION = ("FromFunctionOp", "as_op", "wrap_py")


def __getattr__(name: str) -> Any:
    # Python functions as ops (PyTensor has them here) load on first use.
    if name in _FROM_FUNCTION:
        from opweave.compile import from_function

        return getattr(from_function, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
