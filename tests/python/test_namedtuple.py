"""opweave._namedtuple.NamedTuple makes the classes typing.NamedTuple makes
(fields, defaults, methods, pickling), without evaluating annotations."""

from __future__ import annotations

import pickle
import typing

import pytest

from opweave._namedtuple import NamedTuple


class Step(NamedTuple):
    """A step."""

    run: typing.Callable[..., int]
    label: str
    outcomes: list[int] | None = None
    packed: bool = False

    def describe(self) -> str:
        return f"{self.label} ({len(self.outcomes or [])})"


class TypingStep(typing.NamedTuple):
    run: typing.Callable[..., int]
    label: str
    outcomes: list[int] | None = None
    packed: bool = False


def test_a_class_has_the_fields_defaults_and_methods_of_typing_namedtuple() -> None:
    step = Step(len, "node 3", [1, 2])
    assert Step._fields == TypingStep._fields == ("run", "label", "outcomes", "packed")
    assert Step._field_defaults == TypingStep._field_defaults == {"outcomes": None, "packed": False}
    assert tuple(step) == tuple(TypingStep(len, "node 3", [1, 2])) == (len, "node 3", [1, 2], False)
    assert step.describe() == "node 3 (2)"
    assert step._replace(packed=True).packed is True
    assert step._asdict()["label"] == "node 3"
    assert Step.__doc__ == "A step." and Step.__name__ == "Step"
    assert Step.__qualname__ == "Step" and Step.__module__ == __name__
    assert isinstance(step, tuple) and step == (len, "node 3", [1, 2], False)
    with pytest.raises(AttributeError):
        step.extra = 1  # type: ignore[attr-defined]  # __slots__: no instance dict
    with pytest.raises(TypeError):
        Step(len)  # type: ignore[call-arg]  # label has no default


def test_a_class_pickles_by_its_name() -> None:
    step = Step(len, "node 3")
    again = pickle.loads(pickle.dumps(step))
    assert type(again) is Step and again == step


def test_a_field_without_a_default_after_one_with_a_default_is_refused() -> None:
    with pytest.raises(TypeError, match="Wrong: a field without a default follows"):

        class Wrong(NamedTuple):
            a: int = 0
            b: int
