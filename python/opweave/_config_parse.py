"""The parsers of opweave's configuration options (:mod:`opweave._config_options`):
each turns an option's text into its value, or raises ValueError."""

from __future__ import annotations

__all__ = [
    "MODE_NAMES",
    "SANITIZERS",
    "parse_bool",
    "parse_count",
    "parse_float_dtype",
    "parse_linker",
    "parse_mode",
    "parse_optional_size",
    "parse_owner",
    "parse_paths",
    "parse_positive_float",
    "parse_remote",
    "parse_sanitize",
    "parse_size",
    "parse_unused_input",
]


def parse_bool(text: str) -> bool:
    lowered = text.strip().lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off", ""):
        return False
    raise ValueError(f"expected a boolean (true/false), got {text!r}")


def parse_positive_float(text: str) -> float:
    value = float(text)
    if value <= 0:
        raise ValueError(f"expected a positive number, got {text!r}")
    return value


def parse_count(text: str) -> int:
    value = int(text)
    if value < 0:
        raise ValueError(f"expected a count (0 or more), got {text!r}")
    return value


def _one_of(text: str, choices: tuple[str, ...]) -> str:
    """``text``, stripped, if it is one of ``choices``; else ValueError
    naming them ("expected a, b or c")."""
    value = text.strip()
    if value not in choices:
        listed = f"{', '.join(choices[:-1])} or {choices[-1]}"
        raise ValueError(f"expected {listed}, got {text!r}")
    return value


def parse_float_dtype(text: str) -> str:
    return _one_of(text, ("float64", "float32", "float16"))


def parse_linker(text: str) -> str:
    value = text.strip()
    if value in ("", "auto"):
        return "auto"
    if not value.replace("-", "").replace(".", "").isalnum():
        raise ValueError(f"expected auto, default or a linker name (gold, lld, bfd), got {text!r}")
    return value


# Every mode name and what it runs: a linker of opweave.compile.mode
# ("c", "c|py", "py") or DebugMode ("debug"). The one list: the mode module
# reads it, and the configuration checks config.mode against it before that
# module can be imported.
MODE_NAMES: dict[str, str] = {
    "C": "c",
    "c": "c",
    "FAST_RUN": "c",
    "py": "py",
    "PY": "py",
    "FAST_COMPILE": "py",
    "c|py": "c|py",
    "CVM": "c|py",
    "cvm": "c|py",
    "C_VM": "c|py",
    "vm": "c|py",
    "DebugMode": "debug",
    "DEBUG_MODE": "debug",
}


def parse_mode(text: str) -> str:
    value = text.strip()
    if value not in MODE_NAMES:
        raise ValueError(f"unknown mode {text!r}; expected one of {', '.join(MODE_NAMES)}")
    return value


def parse_unused_input(text: str) -> str:
    return _one_of(text, ("raise", "warn", "ignore"))


def parse_size(text: str) -> int:
    """Bytes in a size such as ``500M``, ``2G``, ``1.5GiB`` or ``4096`` (K, M
    and G are powers of 1024). Raises ValueError for anything else."""
    units = {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3, "T": 1024**4}
    cleaned = text.strip().upper().removesuffix("IB").removesuffix("B")
    suffix = cleaned[-1:] if cleaned[-1:] in ("K", "M", "G", "T") else ""
    number = cleaned[: len(cleaned) - len(suffix)]
    try:
        value = float(number) * units[suffix]
    except ValueError:
        raise ValueError(f"not a size: {text!r} (e.g. 500M, 2G)") from None
    if not value >= 0 or value == float("inf"):
        raise ValueError(f"not a size: {text!r} (e.g. 500M, 2G)")
    return int(value)


SANITIZERS = ("address", "undefined")


def parse_sanitize(text: str) -> str:
    """A list of sanitizers (separated by commas, ``+`` or spaces) as the
    ``-fsanitize=`` value, e.g. ``"address,undefined"``; empty for none."""
    names = [n for n in text.replace("+", ",").replace(" ", ",").split(",") if n]
    for name in names:
        if name not in SANITIZERS:
            raise ValueError(
                f"unknown sanitizer {name!r}; expected some of {', '.join(SANITIZERS)}"
            )
    return ",".join(dict.fromkeys(names))


def parse_paths(text: str) -> tuple[str, ...]:
    return tuple(part for part in text.split(":") if part.strip())


def parse_owner(text: str) -> int | None:
    """A user name or a uid; empty: none."""
    text = text.strip()
    if not text:
        return None
    if text.isdigit():
        return int(text)
    import pwd

    try:
        return pwd.getpwnam(text).pw_uid
    except KeyError:
        raise ValueError(f"no user named {text!r} on this machine") from None


def parse_remote(text: str) -> str:
    text = text.strip()
    if text and not text.startswith(("redis://", "rediss://", "unix://")):
        shown = text.partition(":")[0][:20]  # never the rest: it may hold a password
        raise ValueError(f"not a remote cache URL: {shown!r}:... (expected redis://host:port/db)")
    return text


def parse_optional_size(text: str) -> int | None:
    return None if text.strip().lower() in ("", "none", "0") else parse_size(text)
