"""The bases of opweave's kernels for PyTensor ops (see :mod:`._kernels`):
:class:`Kernel`, the C hooks opweave uses for one op, and
:class:`OpCodeKernel`, a kernel that rewrites part of its op's own C."""

from __future__ import annotations

from typing import Any

from opweave.graph.utils import EqualByProps

__all__ = ["NO_CARRIED_DEPENDENCES", "Kernel", "OpCodeKernel"]

_VERSION = (1,)

# Put before a loop whose iterations are independent, so that GCC may
# vectorise it without alias checks (clang ignores the pragma and checks at
# run time): an Elemwise kernel's element i depends on elements i of its
# inputs only, and an output is new or exactly an input it destroys
# (PyTensor's destroy handler refuses an input that is a view of the
# destroyed one); a reduction's innermost loop over outputs that are not
# reduced. An operator, not a preprocessor line: a module that holds a line
# starting with "#" exports none of its other nodes
# (link/c/_export_context.py), and a region of a per-node graph holds many
# nodes.
NO_CARRIED_DEPENDENCES = """_Pragma("GCC ivdep")
"""


class Kernel(EqualByProps):
    """The C hooks opweave uses for one PyTensor op (``self.op``): equal
    when of one class with equal ``__props__`` (the op, and what a subclass
    adds that its code depends on), and naming the op in messages.
    Subclasses define ``c_code`` and, where they need it,
    ``c_support_code``."""

    __props__: tuple[str, ...] = ("op",)

    def __init__(self, op: Any) -> None:
        self.op = op

    def __str__(self) -> str:
        return str(self.op)

    @property
    def destroy_map(self) -> dict[int, list[int]]:
        """The op's: what its outputs destroy."""
        return getattr(self.op, "destroy_map", {})

    @property
    def view_map(self) -> dict[int, list[int]]:
        """The op's: what its outputs view."""
        return getattr(self.op, "view_map", {})

    def c_code_cache_version(self) -> tuple[int, ...]:
        """The kernel's code version (its text is also in the key)."""
        return _VERSION


class OpCodeKernel(Kernel):
    """A kernel that rewrites part of its op's own C code: every C hook but
    ``c_code`` and the version (headers, support code, libraries, ...) is
    the op's. ``tag`` and ``version`` name the rewrite in the op's version."""

    tag = ""
    version = 0

    def __getattr__(self, name: str) -> Any:
        if name.startswith("c_"):
            return getattr(self.op, name)
        raise AttributeError(name)

    def c_code_cache_version_apply(self, node: Any) -> tuple[Any, ...]:
        """The op's version for ``node`` and the rewrite's, or () when the
        op's is unversioned."""
        version = self.op.c_code_cache_version_apply(node)
        return ((self.tag, self.version), version) if version else ()
