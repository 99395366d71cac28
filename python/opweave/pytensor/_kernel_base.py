"""The bases of opweave's kernels for PyTensor ops (see :mod:`._kernels`):
:class:`Kernel`, the C hooks opweave uses for one op, and
:class:`OpCodeKernel`, a kernel that rewrites part of its op's own C."""

from __future__ import annotations

from typing import Any

__all__ = ["Kernel", "OpCodeKernel"]

_VERSION = (1,)


class Kernel:
    """The C hooks opweave uses for one PyTensor op (``self.op``): equal
    when of one class with equal ``__props__`` (the op, and what a subclass
    adds that its code depends on), and naming the op in messages.
    Subclasses define ``c_code`` and, where they need it,
    ``c_support_code``."""

    __props__: tuple[str, ...] = ("op",)

    def __init__(self, op: Any) -> None:
        self.op = op

    def _props(self) -> tuple[Any, ...]:
        return tuple(getattr(self, name) for name in self.__props__)

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other) and self._props() == other._props()  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash((type(self), self._props()))

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
