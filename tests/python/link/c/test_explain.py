"""Why a graph was a hit or a miss (link/c/_graph_lookup.py): one line per
graph names the process memo or the graph record (DEBUG: a hit stays quiet
at INFO), or, when the ops were asked for code (INFO), why (no record, the
dependency that changed) and what the module cache did."""

from __future__ import annotations

import logging

import numpy as np
import pytest
from support.ops import TwoWays, copy_and_update

import opweave
from opweave.link.c._context import CONTEXT
from opweave.link.c._key_diff import fields_of
from opweave.tensor import dvector

LOGGER = "opweave.link.c._graph_lookup"


def lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    found = [r.getMessage() for r in caplog.records if r.name == LOGGER]
    caplog.clear()
    return found


def test_each_way_to_a_module_is_named(tmp_path, caplog: pytest.LogCaptureFixture) -> None:
    x = dvector("x")
    out = TwoWays()(x)
    with opweave.config.change_flags(compiledir=str(tmp_path)), caplog.at_level(logging.DEBUG):
        f = opweave.function([x], out)
        [first] = lines(caplog)
        assert "ops asked for code (no graph record " in first and first.endswith(": built")
        opweave.function([x], out)
        [memo] = lines(caplog)
        assert ": this process's memo (module " in memo
        CONTEXT.graphs.clear()  # as a fresh process: the graph index
        opweave.function([x], out)
        [indexed] = lines(caplog)
        assert ": graph record " in indexed and "(module " in indexed
    np.testing.assert_array_equal(f(np.array([1.0])), [2.0])


class Scaled(TwoWays):
    """C code that reads a class attribute: part of its dependency list."""

    FACTOR = 2.0

    def c_code(self, node, name, inp, out, sub):
        (x,), (z,) = inp, out
        return copy_and_update(x, z, sub["fail"], f"*value *= {type(self).FACTOR};")


def test_a_changed_dependency_is_named(tmp_path, monkeypatch, caplog) -> None:
    x = dvector("x")
    with opweave.config.change_flags(compiledir=str(tmp_path)):
        opweave.function([x], Scaled()(x))
        CONTEXT.graphs.clear()
        monkeypatch.setattr(Scaled, "FACTOR", 3.0)
        with caplog.at_level(logging.INFO):
            f = opweave.function([x], Scaled()(x))
        [line] = lines(caplog)
    assert "ops asked for code (graph record " in line and " not used: " in line, line
    np.testing.assert_array_equal(f(np.array([1.0])), [3.0])


def test_a_compiled_module_names_the_key_fields_it_changed(tmp_path, caplog) -> None:
    """A module compiled for ops that had one before names what differs
    from the nearest such module: a flag, or the source alone."""
    x = dvector("x")
    with opweave.config.change_flags(compiledir=str(tmp_path)):
        opweave.function([x], Scaled()(x))
        with opweave.config.change_flags(cmodule__remove_gxx_opt=True):
            with caplog.at_level(logging.INFO):
                opweave.function([x], Scaled()(x))
            [flags] = lines(caplog)
        assert "module " in flags and ": built (unlike module " in flags, flags
        assert "opt_level" in flags.split("(unlike module ")[1], flags
        assert "source" not in flags.split("(unlike module ")[1], flags

        class Tripled(Scaled):  # the same ops' label, another source of the same size
            FACTOR = 3.0

        Tripled.__name__ = Tripled.__qualname__ = "Scaled"
        with caplog.at_level(logging.INFO):
            f = opweave.function([x], Tripled()(x))
        [source] = lines(caplog)
    assert source.endswith(": source (same size))"), source
    np.testing.assert_array_equal(f(np.array([1.0])), [3.0])


def test_key_fields_are_read_with_their_continuation_lines() -> None:
    material = "layout: module 3\ncompiler:\n  gcc 12\n  path /usr/bin/c++\nflags: -O2\n"
    assert fields_of(material) == {
        "layout": "layout: module 3",
        "compiler": "compiler:\n  gcc 12\n  path /usr/bin/c++",
        "flags": "flags: -O2",
    }
