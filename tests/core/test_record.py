"""The value classes every check imports (`core.record.Record`) behave as the frozen dataclasses
they replace: equality, hashing, order, repr, immutability, pickling and `replace`."""

from __future__ import annotations

import copy
import dataclasses
import importlib
import inspect
import operator
import pickle
from pathlib import Path
from typing import Any

import pytest

from jax_lsp.cli.output import Place, Report
from jax_lsp.core.codes import Code, Family
from jax_lsp.core.config import Settings
from jax_lsp.core.findings import Edit, Finding, Fix, InternalError, Position, Severity, Span
from jax_lsp.core.record import OrderedRecord, Record
from jax_lsp.core.text.python_versions import RequiredPython, SkippedStatement
from jax_lsp.engine.files import Source
from jax_lsp.engine.result_cache import FileResult

SPAN = Span.of(1, 2, 1, 5)
FIX = Fix("use the other", True, (Edit("a.py", SPAN, "x"),))
# Each class with two sets of arguments that differ in a compared field.
EXAMPLES: list[tuple[type[Record], tuple[Any, ...], tuple[Any, ...]]] = [
    (Position, (1, 2), (1, 3)),
    (Span, (Position(1, 2), Position(3, 4)), (Position(0, 9), Position(3, 4))),
    (Edit, ("a.py", SPAN, "x"), ("a.py", SPAN, "y")),
    (Fix, ("t", True, ()), ("t", False, ())),
    (Finding, ("a.py", "JAX101", Severity.ERROR, "m", SPAN), ("a.py", "JAX102", Severity.ERROR, "m", SPAN)),
    (
        Finding,
        ("a.py", "JAX101", Severity.ERROR, "m", SPAN, (FIX,)),
        ("b.py", "JAX101", Severity.ERROR, "m", SPAN),
    ),
    (InternalError, ("a.py", 3, "resolving the site", "TypeError: x"), ("a.py", 4, "resolving", "e")),
    (
        Settings,
        (
            ("JAX1",),
            ("JAX112",),
            ("build",),
            ("src",),
            {"JAX101": Severity.WARNING},
            (3, 11),
            0.5,
            "always",
            {"m.py": "m:f"},
        ),
        (("JAX",), (), (), (), {}, None, 1.0, "detect", {}),
    ),
    (Place, ("a.py", None, SPAN), ("a.py", 2, SPAN)),
    (RequiredPython, ((3, 12), "requires-python"), ((3, 11), "requires-python")),
    (SkippedStatement, (4, (3, 12), "type parameters"), (5, (3, 12), "type parameters")),
    (FileResult, ("d1", {"b.py": "d2"}, ("b.py",), ()), ("d1", {}, (), ())),
    (Source, ("x = 1\n", "utf-8", "\n"), ("x = 1\n", "utf-8-sig", "\r\n")),
    (Code, ("JAX1", "n", Family.RULE, Severity.ERROR, "s"), ("JAX1", "n", Family.FILE, Severity.ERROR, "s")),
]
IDS = [f"{cls.__name__}-{i}" for i, (cls, _, _) in enumerate(EXAMPLES)]


def _dataclass_twin(cls: type[Record]) -> type:
    """The frozen dataclass of the same fields, defaults and options as `cls`."""
    defaults = cls.__init__.__defaults__ or ()
    names = cls.__slots__
    fields: list[Any] = []
    for index, name in enumerate(names):
        options: dict[str, Any] = {"compare": name not in cls.uncompared}
        default_index = index - (len(names) - len(defaults))
        if default_index >= 0:
            options["default"] = defaults[default_index]
        fields.append((name, Any, dataclasses.field(**options)))
    return dataclasses.make_dataclass(
        cls.__qualname__, fields, frozen=True, order=issubclass(cls, OrderedRecord)
    )


@pytest.mark.parametrize(("cls", "first", "second"), EXAMPLES, ids=IDS)
def test_a_record_behaves_as_the_frozen_dataclass_of_its_fields(
    cls: type[Record], first: tuple[Any, ...], second: tuple[Any, ...]
) -> None:
    twin = _dataclass_twin(cls)
    records = [cls(*first), cls(*first), cls(*second)]
    twins = [twin(*first), twin(*first), twin(*second)]
    assert [repr(r) for r in records] == [repr(t) for t in twins]
    for a, b, ta, tb in [
        (records[0], other, twins[0], twin_other) for other, twin_other in zip(records, twins)
    ]:
        assert (a == b, a != b) == (ta == tb, ta != tb)
        if issubclass(cls, OrderedRecord):
            for compare in (operator.lt, operator.le, operator.gt, operator.ge):
                assert compare(a, b) == compare(ta, tb)
    assert records[0] != twins[0]  # only a record of the same class is equal
    try:
        hash(twins[0])
    except TypeError:  # a dict among the fields
        with pytest.raises(TypeError):
            hash(records[0])
    else:
        assert hash(records[0]) == hash(records[1])
    with pytest.raises(AttributeError):
        records[0].__setattr__(cls.__slots__[0], None)
    with pytest.raises(AttributeError):
        delattr(records[0], cls.__slots__[0])
    for restored in (
        pickle.loads(pickle.dumps(records[2])),
        copy.deepcopy(records[2]),
        copy.copy(records[2]),
    ):
        assert restored == records[2] and repr(restored) == repr(records[2])
    changes = {cls.__slots__[-1]: getattr(records[2], cls.__slots__[-1]), cls.__slots__[0]: first[0]}
    assert repr(records[2].replace(**changes)) == repr(dataclasses.replace(twins[2], **changes))


def test_a_field_left_out_of_comparison_is_still_kept() -> None:
    plain = Finding("a.py", "JAX101", Severity.ERROR, "m", SPAN)
    related = plain.replace(related=(("b.py", SPAN),))
    assert related == plain and hash(related) == hash(plain)
    assert related.related == (("b.py", SPAN),)


def test_a_default_container_is_new_for_each_record() -> None:
    assert Settings().severity == {} and Settings().severity is not Settings().severity


def test_replace_refuses_unknown_fields() -> None:
    with pytest.raises(TypeError):
        Position(1, 2).replace(row=3)


def test_report_defaults_read_nothing() -> None:
    report = Report(findings=[])
    assert report.source_lines("a.py") == [] and report.notebook(str(Path("a.ipynb"))) is None


def _records(cls: type[Record] = Record) -> list[type[Record]]:
    found = []
    for sub in cls.__subclasses__():
        found += ([sub] if sub.__slots__ else []) + _records(sub)
    return found


def test_every_record_stores_each_argument_in_its_field() -> None:
    # The records of the analysis too: the policies, sites, tables and rule examples.
    for module in (
        "core.policies.resolve",
        "core.policies.sites",
        "core.policies.tables",
        "core.jax_api",
        "core.binding.return_paths",
        "rules.base",
    ):
        importlib.import_module(f"jax_lsp.{module}")
    records = _records()
    assert {"Finding", "Settings", "Site", "PolicyFunction", "Example"} <= {cls.__name__ for cls in records}
    for cls in records:
        if cls.__name__ == "Example":  # stores its code flush left: the test below
            continue
        values = [object() for _ in cls.__slots__]
        record = cls(*values)
        assert [getattr(record, name) for name in cls.__slots__] == values, cls.__qualname__
        assert list(inspect.signature(cls).parameters) == list(cls.__slots__), cls.__qualname__


def test_an_example_stores_its_code_and_fixed_text_flush_left() -> None:
    from jax_lsp.rules.base import Example

    example = Example("\n    a = 1\n    if a:\n        b = 2\n", fixed="\n    a = 2\n", error="E", lines=(2,))
    assert (example.code, example.fixed) == ("a = 1\nif a:\n    b = 2\n", "a = 2\n")
    assert (example.error, example.misbehaves, example.lines) == ("E", None, (2,))
    assert Example("x = 1\n").fixed is None
