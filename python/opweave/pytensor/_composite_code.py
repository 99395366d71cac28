# mypy: disable-error-code="import-not-found"
"""A ``Composite``'s scalar code with each ``switch`` computing only the arm
it takes.

PyTensor's ``Composite`` computes every inner node of its graph, one after
the other, before a ``Switch`` picks one of two values: a PyMC likelihood
such as ``switch(y, -softplus(-x), -softplus(x))`` (a Bernoulli with logits)
calls ``exp`` and ``log1p`` for both arms of every element, and keeps one.
Here the same statements (each inner node's own C code, with PyTensor's
names for its support code) are arranged so that what only one arm of a
``Switch`` needs is computed inside that arm (``if (cond) { ...; z = a; }
else { ...; z = b; }``). An element's values are computed by the same code
in the same order, so they are bitwise equal to PyTensor's.

A node is left where PyTensor computes it (before the ``Switch``) when
another arm or the rest of the graph also needs it, when its code can fail
(``%(fail)s``: an unselected arm would no longer raise), or when no arm
holds a call to a transcendental function (a branch there would cost more
than it saves, and keep GCC from vectorising the loop).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

__all__ = ["composite_task"]

# Calls worth a branch: the C library's transcendental functions (float and
# long double forms too), and PyTensor's special functions in C.
_COSTLY_CALL = re.compile(
    r"\b(?:(?:exp|exp2|expm1|log|log2|log10|log1p|pow|sin|cos|tan|asin|acos|atan|"
    r"atan2|sinh|cosh|tanh|asinh|acosh|atanh|erf|erfc|tgamma|lgamma|cbrt|hypot)[fl]?"
    r"|erfinv|erfcinv|erfcx|_psi|_tri_gamma|GammaP|GammaQ|Chi2SF|j0|j1|jn|y0|y1|yn|"
    r"i0e|i1e|i0|i1)\s*\("
)


def composite_task(
    composite: Any, name: str, inputs: list[str], outputs: list[str], sub: Any
) -> str | None:
    """The C statements of ``composite`` (a PyTensor ``Composite``) for one
    element, inputs and outputs named ``inputs`` and ``outputs``, with its
    switches' arms computed only where taken; None when PyTensor's own code
    is kept: no switch worth it, or code this arrangement does not read
    (a ``%``, which PyTensor's template formats a second time)."""
    from pytensor.scalar.basic import Composite

    if type(composite) is not Composite or not sub.get("fail"):
        return None
    plan = _Plan(composite, name, inputs, sub)
    if not plan.readable or not any(plan.lazy(node) for node in plan.order):
        return None
    lines = [f"{plan.dtype(v)} {plan.names[v]};" for v in plan.temporaries]
    lines += plan.block(list(composite.fgraph.outputs), frozenset())
    lines += [
        f"{o} = {plan.names[v]};" for o, v in zip(outputs, composite.fgraph.outputs, strict=True)
    ]
    return "{\n" + "\n".join(lines) + "\n}\n"


class _Plan:
    """A Composite's inner nodes, their names and code, and which of its
    switches compute their arms lazily."""

    def __init__(self, composite: Any, name: str, inputs: list[str], sub: Any) -> None:
        from pytensor.graph.basic import Constant

        graph = composite.fgraph
        self.order: list[Any] = list(graph.toposort())
        self.index = {node: j for j, node in enumerate(self.order)}
        self.names: dict[Any, str] = dict(zip(graph.inputs, inputs, strict=True))
        for var in graph.variables:
            if var.owner is None and var not in self.names and isinstance(var, Constant):
                self.names[var] = f"({var.type.c_literal(var.data)})"
        identity = sub.get("id", "_DUMMY_ID_")
        self.temporaries: list[Any] = []
        for node in self.order:
            for out in node.outputs:
                if out not in self.names:
                    self.names[out] = f"V{identity}_tmp{len(self.temporaries) + 1}"
                    self.temporaries.append(out)
        self.fail: str = sub["fail"]
        self.codes: dict[Any, str] = {}
        self.readable = True
        for j, node in enumerate(self.order):
            code = node.op.c_code(
                node,
                f"{name}_subnode{j}",
                [self.names[v] for v in node.inputs],
                [self.names[v] for v in node.outputs],
                dict(fail=sub["fail"], id=f"{identity}_{j}"),
            )
            self.readable &= "%" not in code
            self.codes[node] = code
        self._ancestors: dict[Any, frozenset[Any]] = {}
        self._lazy: dict[Any, bool] = {}

    @staticmethod
    def dtype(var: Any) -> str:
        """The C type of an inner variable."""
        return str(var.type.dtype_specs()[1])

    def ancestors(self, var: Any) -> frozenset[Any]:
        """The inner nodes ``var`` is computed from, its own included."""
        node = var.owner
        if node is None:
            return frozenset()
        if node not in self._ancestors:
            found = {node}
            for v in node.inputs:
                found |= self.ancestors(v)
            self._ancestors[node] = frozenset(found)
        return self._ancestors[node]

    def lazy(self, node: Any) -> bool:
        """Whether ``node`` is a switch whose arms are computed only where
        taken: real dtypes (an ``if`` assigns as the conditional operator
        converts), and a costly call among the nodes only its arms need."""
        if node not in self._lazy:
            self._lazy[node] = self._worth_a_branch(node)
        return self._lazy[node]

    def _worth_a_branch(self, node: Any) -> bool:
        from pytensor.scalar.basic import Switch

        if type(node.op) is not Switch or any(
            v.type.dtype.startswith("complex") for v in [*node.inputs, *node.outputs]
        ):
            return False
        cond, ift, iff = node.inputs
        arms = (self.ancestors(ift) | self.ancestors(iff)) - self.ancestors(cond)
        return any(_COSTLY_CALL.search(self.codes[n]) for n in arms)

    def strict(self, targets: Iterable[Any], done: frozenset[Any]) -> set[Any]:
        """The nodes ``targets`` need whatever the switches pick: a lazy
        switch needs its condition; ``done``: nodes already computed."""
        found: set[Any] = set()
        stack = [v.owner for v in targets if v.owner is not None]
        while stack:
            node = stack.pop()
            if node in found or node in done:
                continue
            found.add(node)
            used = node.inputs[:1] if self.lazy(node) else node.inputs
            stack.extend(v.owner for v in used if v.owner is not None)
        return found

    def hoisted(self, targets: list[Any], done: frozenset[Any]) -> set[Any]:
        """The nodes computed in this block: the strict ones, and those the
        arms of its switches would need twice (two arms, or an arm and a
        nested one) or that may fail."""
        here = self.strict(targets, done)
        while True:
            arms: dict[Any, set[tuple[Any, int]]] = {}
            for node in here:
                if self.lazy(node):
                    for k in (1, 2):
                        for n in self.ancestors(node.inputs[k]) - here - done:
                            arms.setdefault(n, set()).add((node, k))
            more = [n for n, seen in arms.items() if len(seen) > 1 or self.fail in self.codes[n]]
            if not more:
                return here
            here |= self.strict([n.outputs[0] for n in more], done)

    def block(self, targets: list[Any], done: frozenset[Any]) -> list[str]:
        """The statements that compute ``targets``, given the nodes ``done``
        by the enclosing blocks."""
        here = self.hoisted(targets, done)
        inner = done | here
        lines: list[str] = []
        for node in sorted(here, key=self.index.__getitem__):
            if not self.lazy(node):
                lines.append(self.codes[node])
                continue
            (z,) = node.outputs
            cond, ift, iff = node.inputs
            lines.append(f"if ({self.names[cond]}) {{")
            lines += [*self.block([ift], inner), f"{self.names[z]} = {self.names[ift]};"]
            lines.append("} else {")
            lines += [*self.block([iff], inner), f"{self.names[z]} = {self.names[iff]};"]
            lines.append("}")
        return lines
