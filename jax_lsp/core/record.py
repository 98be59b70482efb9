"""Immutable value classes that cost nothing to define.

`@dataclass(frozen=True)` writes the methods of each class as source text and compiles them as
the module is imported, about 1 ms a class, and importing `dataclasses` costs ~9 ms more
(inspect, ast, dis): together a third of the start of a `jax-lsp check` that has nothing to
parse. The classes every check imports derive from `Record` instead, whose methods are
written once and read the fields from `__slots__`. A record behaves as the frozen dataclass of
the same fields: equal (and hashed) by its compared fields when of the same class, ordered by
them as tuples (`OrderedRecord`), shown as `Class(field=value, ...)`, refusing assignment,
picklable, and copied with changes by `replace(**changes)` (`dataclasses.replace`).

Each class declares its fields in `__slots__` and writes its `__init__`, taking them in that
order and storing them with `_assign`.
"""

from __future__ import annotations

from operator import attrgetter

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, ClassVar

    from typing_extensions import Self


_set_field = object.__setattr__  # past the record's own __setattr__, which refuses


class Record:
    __slots__: tuple[str, ...] = ()
    # Fields left out of equality, hashing and order (dataclasses' `field(compare=False)`).
    uncompared: ClassVar[tuple[str, ...]] = ()
    _compared: ClassVar[attrgetter[Any]]  # the compared fields: their tuple, or the only one

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        compared = [name for name in cls.__slots__ if name not in cls.uncompared]
        if compared:  # not in OrderedRecord, which has no fields
            cls._compared = attrgetter(*compared)

    def _assign(self, *values: object) -> None:
        for name, value in zip(self.__slots__, values):
            _set_field(self, name, value)

    def _values(self) -> tuple[Any, ...]:
        return tuple(getattr(self, name) for name in self.__slots__)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return bool(self._compared(self) == self._compared(other))

    def __hash__(self) -> int:
        return hash(self._compared(self))

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={value!r}" for name, value in zip(self.__slots__, self._values()))
        return f"{self.__class__.__qualname__}({fields})"

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"cannot delete field {name!r}")

    def __reduce__(self) -> tuple[type[Self], tuple[Any, ...]]:
        return self.__class__, self._values()

    def replace(self, **changes: Any) -> Self:
        """A copy with the fields named in `changes` changed."""
        return self.__class__(**{**dict(zip(self.__slots__, self._values())), **changes})


class OrderedRecord(Record):
    """A record ordered as the tuple of its compared fields (dataclasses' `order=True`)."""

    __slots__ = ()

    def __lt__(self, other: Self) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return bool(self._compared(self) < self._compared(other))

    def __le__(self, other: Self) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return bool(self._compared(self) <= self._compared(other))

    def __gt__(self, other: Self) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return bool(self._compared(self) > self._compared(other))

    def __ge__(self, other: Self) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return bool(self._compared(self) >= self._compared(other))
