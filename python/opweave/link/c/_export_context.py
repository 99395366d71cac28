"""Whether a module may export a node's code: an export is compiled after
everything the module holds, but its key (the node's *code key*, see
:mod:`._node_keys`) covers only what the node's own module holds. So a
module exports a node only when nothing else it holds can change what the
node's code means there (issue 36):

- every header it includes that the node's own module does not is a system
  header (``<...>``), and then the node's own code has no preprocessor line
  (an ``#ifdef`` may test what such a header defines), and
- the rest of the user's code it holds (other ops' support code, other
  nodes' definitions) has no preprocessor line (a macro reaches every line
  after it) and declares, at its top level, no name that the node's own
  code names (a type, a function, an overload, a variable). One form of
  support code with preprocessor lines passes: an include guard around
  the whole text (``#ifndef G``, ``#define G``, code without preprocessor
  lines, ``#endif``, as PyTensor's ``ParamsType`` and scalar functions
  write theirs). All it does to later code is define ``G`` (empty) and
  declare what its code declares, so ``G`` counts as one of its declared
  names: a node whose code names ``G`` (its own guard of other text, an
  ``#ifdef G``) is not exported there. A ``_Pragma("...")`` operator
  counts as a preprocessor line, but for those that apply to the next loop
  only (``GCC ivdep``, ``GCC unroll N``, ``clang loop ...``).

Otherwise the node's code is not exported there; a graph that needs it
later compiles the node's own module, which its key does cover. What this
does not see: an overload that a system header another node includes adds
to a function the node calls (every module includes Python's and NumPy's
headers, ``<math.h>`` among them, so the common ones are always there).
"""

from __future__ import annotations

import re
from typing import Any

from opweave import _core

__all__ = ["ModuleContext", "include_guard", "top_level_names"]

_WORD = re.compile(r"[A-Za-z_]\w*")
_DIRECTIVE = re.compile(r"^\s*#", re.M)
# A pragma operator can do what a pragma line does (pack later structs, turn
# optimisations off): one counts as a preprocessor line unless it applies to
# the next loop only.
_PRAGMA = re.compile(r'\b_Pragma\s*\(\s*"((?:\\.|[^"\\])*)"\s*\)')
_LOOP_PRAGMA = re.compile(r"\s*(GCC\s+ivdep|GCC\s+unroll\s+\d+|clang\s+loop\s.*)\s*")
_SEPARATORS = frozenset("(=;[,")
_TAGS = frozenset({"struct", "class", "union", "enum", "namespace"})
# Keywords and built-in types: never a declared name.
_NOT_NAMES = frozenset(
    "const static inline extern volatile unsigned signed return if while for switch sizeof "
    "int long short char float double void bool auto operator template typename "
    # specifiers followed by parentheses: `__attribute__((noinline)) int f(...)`
    "__attribute__ __declspec __extension__ alignas decltype noexcept static_assert".split()
)


def _code_only(text: str) -> str:
    """``text`` without comments, string and character literals."""
    return re.sub(
        r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', " ", text, flags=re.S
    )


def _declares(previous: str, word: str) -> bool:
    """Whether ``previous`` then ``word``, at the top level, declare a name:
    a name before a separator, or after a type keyword."""
    if word in _SEPARATORS:
        return bool(_WORD.fullmatch(previous)) and previous not in _NOT_NAMES
    return previous in _TAGS and bool(_WORD.fullmatch(word))


def top_level_names(text: str) -> set[str]:
    """The names ``text`` declares outside every function and class body
    (a namespace's or ``extern "C"``'s braces do not count): functions,
    types, typedefs and variables. Over-approximated: any identifier at the
    top level before ``(``, ``=``, ``;``, ``[`` or ``,``, or after a type
    keyword."""
    code = _code_only(text)
    names: set[str] = set()
    depth = 0
    scopes: list[bool] = []  # per open brace: whether it opens a body
    previous = qualifier = before = ""  # qualifier: the token before `previous`, if "::"
    parens = 0  # inside a declarator's parentheses: parameters, not names
    for token in re.finditer(r"[A-Za-z_]\w*|::|[{}()=;\[,*]", code):
        word, at = token.group(), token.start()
        if word == "{":
            head = code[max(code.rfind(";", 0, at), code.rfind("}", 0, at)) + 1 : at]
            body = not re.search(r"\bnamespace\b|\bextern\b", head)
            scopes.append(body)
            depth += body
        elif word == "}":
            depth -= scopes.pop() if scopes else 0
        elif depth == 0 and parens == 0 and not qualifier and _declares(previous, word):
            names.add(previous if word in _SEPARATORS else word)
        elif depth == 0 and parens == 1 and before + previous == "(*" and _WORD.fullmatch(word):
            names.add(word)  # int (*name)(int): a pointer to a function
        parens += (word == "(") - (word == ")")
        qualifier = previous if previous == "::" and _WORD.fullmatch(word) else ""
        before, previous = previous, word
    return names


class ModuleContext:
    """What a module of ``spec`` holds before its exports: its headers, and
    its user code (support code, definitions, members, step functions)."""

    def __init__(self, spec: _core.ModuleSpec) -> None:
        self.headers = list(spec.headers)
        # Each piece of support code, and each definition and step function
        # whole (its user fragments inside the glue that opweave wrote
        # around them): (text, whether the user's part has a preprocessor
        # line). The members are inside a struct: they declare no global.
        # Parts with no user fragment are opweave's own text, which the
        # node's own module holds too.
        self.parts: list[tuple[str, bool]] = [
            (f.text, _has_directive([f]) and include_guard(f.text) is None)
            for f in spec.support_code
            if f.origin >= 0
        ]
        for definition in [*spec.definitions, *spec.step_functions]:
            if any(f.origin >= 0 for f in definition):
                text = "".join(f.text for f in definition)
                self.parts.append((text, _has_directive(definition)))
        self.parts = list(dict.fromkeys(self.parts))
        self.member_directive = _has_directive(spec.members)
        self._declared: dict[str, set[str]] = {}

    def _names(self, text: str) -> set[str]:
        """The names ``text`` declares at its top level, its include
        guard's macro among them (memoised)."""
        found = self._declared.get(text)
        if found is None:
            guard = include_guard(text)
            found = top_level_names(text) | ({guard} if guard else set())
            self._declared[text] = found
        return found

    def holds_alone(self, export: dict[str, Any]) -> bool:
        """Whether the node whose export parts are ``export`` (see
        _node_keys.export_parts) compiles here as in its own module."""
        own_headers = set(export["headers"])
        extra = [h for h in self.headers if h not in own_headers]
        if any(not h.startswith("<") for h in extra):
            return False
        own_texts = [*export["support"], *(t for d in export["definitions"] for t, _ in d)]
        if extra and any(_preprocesses(text) for text in own_texts):
            return False  # its own #if may test what another header defines
        if self.member_directive:
            return False
        own = set(export["support"])
        own.update("".join(text for text, _ in d) for d in export["definitions"])
        used = {w for text in own for w in _WORD.findall(_code_only(text))}
        used.update(_WORD.findall(export["text"]))
        # The node's own definitions are named by their content: a module
        # that declares one of those names declares that same thing.
        used.difference_update(export["names"])
        for text, directive in self.parts:
            if text in own:
                continue
            if directive or not self._names(text).isdisjoint(used):
                return False
        return True


def include_guard(text: str) -> str | None:
    """``G`` when ``text`` (comments and literals aside) is one include
    guard around all its code: ``#ifndef G`` and ``#define G`` first,
    ``#endif`` last, and no other preprocessor line; else None."""
    code = _code_only(text)
    lines = [m.group(1).split() for m in re.finditer(r"^\s*#(.*)$", code, re.M)]
    if len(lines) != 3 or [len(words) for words in lines] != [2, 2, 1]:
        return None
    (if_not, guard), (define, defined), (end,) = lines
    if (if_not, define, end) != ("ifndef", "define", "endif") or defined != guard:
        return None
    before, _, rest = code.partition("#")
    after = rest[rest.rindex("endif") + len("endif") :]
    if before.strip() or after.strip() or not _WORD.fullmatch(guard):
        return None
    return guard


def _has_directive(fragments: Any) -> bool:
    """Whether a user fragment (origin >= 0) holds a preprocessor line."""
    return any(f.origin >= 0 and _preprocesses(f.text) for f in fragments)


def _preprocesses(text: str) -> bool:
    """Whether ``text`` holds a preprocessor line, or a ``_Pragma`` that
    does not apply to the next loop only."""
    if _DIRECTIVE.search(text):
        return True
    return any(not _LOOP_PRAGMA.fullmatch(m.group(1)) for m in _PRAGMA.finditer(text))
