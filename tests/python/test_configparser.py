"""opweave.config: OPWEAVE_FLAGS parsing, validation and change_flags."""

from __future__ import annotations

import pytest

import opweave
from opweave.configparser import OpweaveConfig


def test_flags_are_parsed_and_typed() -> None:
    config = OpweaveConfig("compiledir=/tmp/x, cxx=g++ ,cache__lock_timeout=12.5")
    assert config.compiledir == "/tmp/x"
    assert config.cxx == "g++"
    assert config.cache__lock_timeout == 12.5


def test_the_old_spelling_of_an_option_is_the_same_option_and_warns_once(monkeypatch) -> None:
    import warnings

    from opweave import configparser

    monkeypatch.setattr(configparser, "_warned_spellings", set())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        config = OpweaveConfig("compile__timeout=7")
        assert config.cache__lock_timeout == config.compile__timeout == 7.0
        assert config.is_set("cache__lock_timeout") and config.is_set("compile__timeout")
        config.compile__timeout = 9
        assert config.cache__lock_timeout == 9.0
        with config.change_flags(compile__timeout=3):
            assert config.cache__lock_timeout == 3.0
        assert config.cache__lock_timeout == 9.0
    old = [w for w in caught if issubclass(w.category, FutureWarning)]
    assert len(old) == 1 and "compile__timeout is the old spelling of cache__lock_timeout" in str(
        old[0].message
    )
    assert old[0].filename == __file__  # it points at the user's line


@pytest.mark.filterwarnings("ignore:opweave option compile__timeout is the old spelling")
def test_a_bad_value_is_reported_under_the_name_the_user_typed() -> None:
    config = OpweaveConfig()
    with pytest.raises(ValueError, match=r"option compile__timeout \(the old spelling of"):
        config.compile__timeout = "soon"
    with pytest.raises(ValueError, match=r"option compile__timeout \("):
        with config.change_flags(compile__timeout=-1):
            pass
    with pytest.raises(ValueError, match=r"option cache__lock_timeout: "):
        config.cache__lock_timeout = -1
    with pytest.warns(UserWarning, match=r"option compile__timeout \(the old.*keeps its default"):
        OpweaveConfig("compile__timeout=never")


def test_the_lock_timeout_defaults_to_the_cores() -> None:
    from opweave import _core

    assert OpweaveConfig().cache__lock_timeout == _core.DEFAULT_LOCK_TIMEOUT == 1800.0
    cache_arguments = _core.ModuleCache.__init__.__doc__ or ""
    assert "lock_timeout: typing.SupportsFloat | typing.SupportsIndex = 1800.0" in cache_arguments


def test_unknown_flag_warns_and_names_known_options() -> None:
    with pytest.warns(UserWarning, match="unknown option 'compildir'.*compiledir"):
        OpweaveConfig("compildir=/tmp/x")


def test_bad_flags_warn_and_keep_the_defaults() -> None:
    with pytest.warns(UserWarning, match="cache__lock_timeout.*keeps its default"):
        config = OpweaveConfig("cache__lock_timeout=-1,cxx=clang++")
    assert config.cache__lock_timeout == 1800.0 and config.cxx == "clang++"
    with pytest.warns(UserWarning, match=r"expected name=value, got 'compiledir'.*\\,"):
        OpweaveConfig("compiledir")


def test_bad_values_set_at_run_time_raise() -> None:
    config = OpweaveConfig()
    with pytest.raises(ValueError, match="cache__lock_timeout"):
        config.cache__lock_timeout = -1
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


def test_an_escaped_comma_stays_in_the_value() -> None:
    config = OpweaveConfig(r"cmodule__sanitize=address\,undefined,floatX=float32")
    assert config.cmodule__sanitize == "address,undefined"
    assert config.floatX == "float32"
    assert OpweaveConfig("cmodule__sanitize=address+undefined").cmodule__sanitize == (
        "address,undefined"
    )


def test_an_unescaped_comma_in_a_value_warns_but_imports(tmp_path) -> None:
    import os
    import subprocess
    import sys

    env = {"OPWEAVE_FLAGS": "cmodule__sanitize=address,undefined", "PATH": "/usr/bin:/bin"}
    if "PYTHONPATH" in os.environ:  # e.g. the developer build's tree
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    code = "import opweave; print(repr(opweave.config.cmodule__sanitize))"
    result = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "'address'"
    assert "expected name=value, got 'undefined'" in result.stderr


def test_unknown_sanitizers_are_refused() -> None:
    config = OpweaveConfig()
    with pytest.raises(ValueError, match="unknown sanitizer 'memory'"):
        config.cmodule__sanitize = "memory"


def test_is_set_tells_given_options_from_defaults_read() -> None:
    from opweave.configparser import OpweaveConfig

    config = OpweaveConfig("cxx=g++")
    assert config.is_set("cxx")
    assert config.cmodule__march == ""  # reading a default does not set it
    config.snapshot()
    assert not config.is_set("cmodule__march")
    with config.change_flags(cmodule__march="native"):
        assert config.is_set("cmodule__march")
    assert not config.is_set("cmodule__march")
    config.cmodule__march = "znver3"
    assert config.is_set("cmodule__march")
