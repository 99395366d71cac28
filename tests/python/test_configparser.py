"""opweave.config: OPWEAVE_FLAGS parsing, validation and change_flags."""

from __future__ import annotations

import pytest

import opweave
from opweave.configparser import OpweaveConfig


def test_flags_are_parsed_and_typed() -> None:
    config = OpweaveConfig("compiledir=/tmp/x, cxx=g++ ,compile__timeout=12.5")
    assert config.compiledir == "/tmp/x"
    assert config.cxx == "g++"
    assert config.compile__timeout == 12.5


def test_unknown_flag_warns_and_names_known_options() -> None:
    with pytest.warns(UserWarning, match="unknown option 'compildir'.*compiledir"):
        OpweaveConfig("compildir=/tmp/x")


def test_bad_values_raise() -> None:
    with pytest.raises(ValueError, match="compile__timeout"):
        OpweaveConfig("compile__timeout=-1")
    with pytest.raises(ValueError, match="expected name=value"):
        OpweaveConfig("compiledir")
    config = OpweaveConfig()
    with pytest.raises(AttributeError, match="no configuration option"):
        config.no_such_option = 1
    with pytest.raises(AttributeError, match="no configuration option"):
        _ = config.no_such_option


def test_change_flags_restores_values() -> None:
    before = opweave.config.compiledir
    with opweave.config.change_flags(compiledir="/tmp/elsewhere", cxx_launcher="ccache"):
        assert opweave.config.compiledir == "/tmp/elsewhere"
        assert opweave.config.cxx_launcher == "ccache"
    assert opweave.config.compiledir == before
    assert opweave.config.cxx_launcher == ""


def test_default_compiler_is_found() -> None:
    assert OpweaveConfig().cxx.endswith(("c++", "g++", "clang++"))
