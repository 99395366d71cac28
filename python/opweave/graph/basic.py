"""Graph nodes: :class:`Variable`, :class:`Constant` and :class:`Apply`, and
the walks over them (:func:`io_toposort`, :func:`graph_inputs`, ...)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, TypeGuard

if TYPE_CHECKING:
    from opweave.graph.op import Op
    from opweave.graph.type import Type

__all__ = [
    "Apply",
    "Constant",
    "NominalVariable",
    "Variable",
    "ancestors",
    "fresh_variable",
    "graph_clients",
    "graph_inputs",
    "graph_variables",
    "io_toposort",
    "is_constant",
    "is_variable",
    "make_apply",
    "vars_between",
]


class Variable:
    """A value in a graph: its ``type``, the :class:`Apply` node that computes it
    (``owner``, None for a graph input), its position among that node's
    outputs (``index``) and an optional ``name``."""

    def __init__(
        self,
        type: Type,
        owner: Apply | None = None,
        index: int | None = None,
        name: str | None = None,
    ) -> None:
        self.type = type
        self.owner = owner
        self.index = index
        self.name = name
        self.tag: dict[str, Any] = {}

    def __str__(self) -> str:
        if self.name is not None:
            return self.name
        if self.owner is not None:
            op = str(self.owner.op)
            if len(self.owner.outputs) == 1:
                return f"{op}.out"
            return f"{op}.{self.index}"
        return f"<{self.type}>"

    def __repr__(self) -> str:
        return str(self)

    def clone(self, name: str | None = None) -> Variable:
        """A new, ownerless variable of the same type (and class)."""
        new = object.__new__(type(self))
        new.__dict__.update(self.__dict__)
        new.owner, new.index, new.tag = None, None, dict(self.tag)
        if name is not None:
            new.name = name
        return new


# Python's operators on variables, each refused with one clear message:
# opweave has no math library, so `x + y` would otherwise be a bare TypeError.
_BINARY = {
    "add": "+", "sub": "-", "mul": "*", "truediv": "/", "floordiv": "//", "mod": "%",
    "pow": "**", "matmul": "@", "and": "&", "or": "|", "xor": "^", "lshift": "<<",
    "rshift": ">>",
}  # fmt: skip
_UNARY = {"neg": "unary -", "pos": "unary +", "abs": "abs()", "invert": "~"}


def _no_arithmetic(symbol: str) -> Callable[..., Any]:
    """An operator method that raises TypeError naming ``symbol`` and what
    to do instead."""

    def refuse(self: Variable, *other: Any) -> Any:
        raise TypeError(
            f"opweave variables have no arithmetic ({symbol} on {self}): opweave compiles "
            "the Ops you define and has no math library of its own. Apply an Op to the "
            "variables (op(x, y)), or build the graph with PyTensor and compile it with "
            'mode="OPWEAVE" after `import opweave.pytensor` (docs/pytensor-backend.md).'
        )

    return refuse


for _name, _symbol in _BINARY.items():
    for _method in (f"__{_name}__", f"__r{_name}__"):
        setattr(Variable, _method, _no_arithmetic(_symbol))
for _name, _symbol in _UNARY.items():
    setattr(Variable, f"__{_name}__", _no_arithmetic(_symbol))


class Constant(Variable):
    """A variable with a fixed value. ``data`` is ``type.filter(data)``.

    Theano's ``gof.Constant(type, data, name)`` spelling is accepted as is."""

    def __init__(self, type: Type, data: Any, name: str | None = None) -> None:
        super().__init__(type, None, None, name)
        self.data = type.filter(data)

    def __str__(self) -> str:
        if self.name is not None:
            return self.name
        text = repr(self.data)
        return text if len(text) <= 20 else text[:10] + "..." + text[-7:]

    def signature(self) -> tuple[Type, Any]:
        """What identifies this constant: its type and its value."""
        return (self.type, self.data)

    def clone(self, name: str | None = None) -> Constant:
        new = super().clone(name)
        assert isinstance(new, Constant)
        return new


class NominalVariable(Variable):
    """A graph input identified by a number and a type, so that two graphs
    built separately can share their inputs (PyTensor uses them for
    structural graph keys). ``NominalVariable(id, type)`` returns the same
    object for the same ``(id, type)``; ``name`` renames it."""

    _interned: ClassVar[dict[tuple[Any, Any], NominalVariable]] = {}
    id: Any  # set by __new__

    def __new__(cls, id: Any, typ: Type, name: str | None = None) -> NominalVariable:
        key = (id, typ)
        found = cls._interned.get(key)
        if found is None or type(found) is not cls:
            found = super().__new__(cls)
            Variable.__init__(found, typ, None, None, name)
            found.id = id
            cls._interned[key] = found
        return found

    def __init__(self, id: Any, typ: Type, name: str | None = None) -> None:
        if name is not None:
            self.name = name

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.id, self.type, self.name))

    def clone(self, name: str | None = None) -> NominalVariable:
        """The variable itself (it is identified by its id and type)."""
        if name is not None:
            self.name = name
        return self


class Apply:
    """One application of an :class:`~opweave.graph.op.Op` to input variables,
    producing output variables. Creating it sets each output's ``owner`` and
    ``index``."""

    def __init__(self, op: Op, inputs: Sequence[Variable], outputs: Sequence[Variable]) -> None:
        self.op = op
        self.inputs = _checked_variables(inputs, "inputs", op)
        self.outputs = _checked_variables(outputs, "outputs", op)
        for index, output in enumerate(self.outputs):
            if output.owner is not None and (output.owner is not self or output.index != index):
                raise ValueError(
                    f"{op}: output {index} ({output}) already belongs to another Apply node"
                )
            output.owner, output.index = self, index
        self.tag: dict[str, Any] = {}

    @property
    def nin(self) -> int:
        """The number of inputs."""
        return len(self.inputs)

    @property
    def nout(self) -> int:
        """The number of outputs."""
        return len(self.outputs)

    @property
    def out(self) -> Variable:
        """The single output (ValueError if there are several)."""
        if len(self.outputs) != 1:
            raise ValueError(f"{self.op} has {len(self.outputs)} outputs, not one")
        return self.outputs[0]

    def default_output(self) -> Variable:
        """The output ``Op.__call__`` returns: ``op.default_output`` if set,
        else the only output."""
        index = getattr(self.op, "default_output", None)
        if index is not None:
            return self.outputs[index]
        return self.out

    def __str__(self) -> str:
        return f"{self.op}({', '.join(str(i) for i in self.inputs)})"

    def __repr__(self) -> str:
        return str(self)


def _checked_variables(values: Sequence[Variable], what: str, op: Op) -> list[Variable]:
    values = list(values)
    for position, value in enumerate(values):
        if not is_variable(value):
            raise TypeError(
                f"{op}: Apply {what}[{position}] must be a Variable, got {type(value).__name__} "
                f"({value!r}); convert it first (e.g. with as_tensor_variable)"
            )
    return values


def ancestors(outputs: Iterable[Variable], blockers: Iterable[Variable] = ()) -> Iterator[Variable]:
    """Every variable that ``outputs`` depend on (including them), depth first,
    not walking past ``blockers``."""
    stop = set(map(id, blockers))
    seen: set[int] = set()
    stack = list(outputs)[::-1]
    while stack:
        variable = stack.pop()
        if id(variable) in seen:
            continue
        seen.add(id(variable))
        yield variable
        if variable.owner is not None and id(variable) not in stop:
            stack.extend(reversed(variable.owner.inputs))


def graph_inputs(outputs: Iterable[Variable], blockers: Iterable[Variable] = ()) -> list[Variable]:
    """The variables without an owner (or in ``blockers``) that ``outputs``
    depend on, in depth-first order."""
    stop = set(map(id, blockers))
    return [v for v in ancestors(outputs, blockers) if v.owner is None or id(v) in stop]


def io_toposort(inputs: Iterable[Variable], outputs: Iterable[Variable]) -> list[Apply]:
    """The Apply nodes between ``inputs`` and ``outputs``, each after the nodes
    computing its inputs. The order is deterministic: it follows the order of
    the outputs and of each node's inputs."""
    stop = set(map(id, inputs))
    order: list[Apply] = []
    done: set[int] = set()
    for output in outputs:
        _visit(output, stop, done, order)
    return order


def _visit(root: Variable, stop: set[int], done: set[int], order: list[Apply]) -> None:
    # Iterative post-order walk, so deep graphs do not hit the recursion limit.
    stack: list[tuple[Apply, int]] = []
    node = root.owner if id(root) not in stop else None
    if node is None or id(node) in done:
        return
    stack.append((node, 0))
    done.add(id(node))
    while stack:
        node, position = stack.pop()
        if position < len(node.inputs):
            stack.append((node, position + 1))
            parent = node.inputs[position].owner
            if parent is not None and id(node.inputs[position]) not in stop:
                if id(parent) not in done:
                    done.add(id(parent))
                    stack.append((parent, 0))
        else:
            order.append(node)


def vars_between(inputs: Iterable[Variable], outputs: Iterable[Variable]) -> list[Variable]:
    """Every variable on a path from ``inputs`` to ``outputs``, inputs and
    outputs included."""
    return list(ancestors(outputs, inputs))


# --- the graph protocol ---------------------------------------------------
#
# What opweave's linkers ask of a graph, so that they take graphs built by
# another library (PyTensor's, or any that follows the protocol) as well as
# opweave's own: see docs/pytensor-compat.md, "Graphs from other libraries".


def is_variable(value: Any) -> bool:
    """Whether ``value`` is a graph variable: one of opweave's, or any object
    with a ``type`` and an ``owner`` (another library's variable)."""
    return isinstance(value, Variable) or (hasattr(value, "type") and hasattr(value, "owner"))


def is_constant(variable: Any) -> TypeGuard[Constant]:
    """Whether ``variable`` is a constant: an opweave :class:`Constant`, or
    another library's variable with no owner, a ``data`` attribute (its
    value) and a ``signature()`` method, as PyTensor's constants have.
    opweave's other variables (shared, nominal) are never constants. (For
    type checkers it narrows to :class:`Constant`, whose ``type``, ``data``
    and ``name`` every constant has.)"""
    if isinstance(variable, Variable):
        return isinstance(variable, Constant)
    return (
        getattr(variable, "owner", None) is None
        and hasattr(variable, "data")
        and callable(getattr(variable, "signature", None))
    )


def fresh_variable(like: Any) -> Any:
    """A new variable with no owner, of ``like``'s type and of the class of
    ``like``'s graph library, never a constant.

    For opweave's variables it is ``like.type()``. For another library's, it
    is ``like.clone()`` renamed ``None`` (the protocol: ``clone()`` returns
    a new ownerless variable of the same class); for one whose ``clone()``
    cannot give that (a constant, or an interned variable, whose clone is
    itself) it is ``like.type()``, the type's own variable class."""
    if isinstance(like, Variable) or is_constant(like):
        return like.type()
    made = like.clone()
    if made is like or is_constant(made) or getattr(made, "owner", None) is not None:
        return like.type()
    made.name = None
    return made


def make_apply(op: Any, inputs: Sequence[Any], outputs: Sequence[Any], like: Any = None) -> Any:
    """A new apply node of ``op`` from ``inputs`` to ``outputs``, of the
    class of ``like`` (an apply node) if given, else of the class of the
    node owning the first input that has one, else opweave's
    :class:`Apply`. The class is called as ``cls(op, inputs, outputs)``;
    when it refuses them with a TypeError (another library's node given one
    of opweave's variables, e.g. a constant made by folding), and has taken
    none of the outputs, the node is opweave's :class:`Apply`."""
    if like is None:
        like = next((v.owner for v in inputs if getattr(v, "owner", None) is not None), None)
    if like is not None and type(like) is not Apply:
        try:
            return type(like)(op, list(inputs), list(outputs))
        except TypeError:
            if any(getattr(v, "owner", None) is not None for v in outputs):
                raise
    return Apply(op, list(inputs), list(outputs))


def graph_variables(fgraph: Any, nodes: Sequence[Any] | None = None) -> list[Any]:
    """Every variable of ``fgraph``, each once, in a fixed order: its inputs,
    then each node's inputs and outputs (in the order of ``nodes``, by
    default ``fgraph.toposort()``), then its outputs. It needs only
    ``inputs``, ``outputs`` and ``toposort()`` of the graph."""
    found: dict[int, Any] = {id(v): v for v in fgraph.inputs}
    for node in fgraph.toposort() if nodes is None else nodes:
        for variable in [*node.inputs, *node.outputs]:
            found.setdefault(id(variable), variable)
    for variable in fgraph.outputs:
        found.setdefault(id(variable), variable)
    return list(found.values())


def graph_clients(
    fgraph: Any, nodes: Sequence[Any] | None = None
) -> dict[int, list[tuple[Any, int]]]:
    """``id(variable)`` -> ``[(node, input position), ...]``: the nodes of
    ``fgraph`` (or ``nodes``, its ``toposort()`` when not given) that use each
    variable, computed from the nodes (a graph's own ``clients`` may be keyed
    by variable or by id, and hold output markers)."""
    clients: dict[int, list[tuple[Any, int]]] = {}
    for node in fgraph.toposort() if nodes is None else nodes:
        for position, variable in enumerate(node.inputs):
            clients.setdefault(id(variable), []).append((node, position))
    return clients
