"""What begins the consolidator's units of work: ``units(write=...)`` -> a unit of work
(:meth:`Consolidator.for_store` builds it from a Store)."""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Annotated, Protocol

from pydantic import PlainValidator

from philont.arguments import ASYNC_REFUSED, is_async
from philont.memory import Memory
from philont.store import Store

__all__ = ["Units", "UnitsOf"]


class Units(Protocol):
    """Begins a unit of work: ``with units(write=True) as mem: ...`` commits on success. Each
    call begins one of its own (``store.begin``): the consolidator calls it from two threads
    and refuses a unit inside a caller's transaction (``store.join``)."""

    def __call__(self, *, write: bool = True) -> AbstractContextManager[Memory]: ...


def _units(value: object) -> object:
    """A units-of-work factory (``units(write=...)`` -> a unit of work); a Store is not one."""
    if isinstance(value, Store):
        raise ValueError(
            "a Store is not a units-of-work factory: use Consolidator.for_store(store, model)"
        )
    if not callable(value):
        raise ValueError(f"must be callable, got {type(value).__name__}")
    if is_async(value):
        raise ValueError(ASYNC_REFUSED)
    return value


UnitsOf = Annotated[Units, PlainValidator(_units)]
