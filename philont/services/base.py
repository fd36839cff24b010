"""The base of every service: bound to one unit of work, never committing it, and checking
what every public method is given on entry."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any, ClassVar

from sqlalchemy.orm import Session

from philont import arguments
from philont.clock import Clock
from philont.db.retry import is_database_error
from philont.errors import NotFoundError
from philont.finds import finds_of

if TYPE_CHECKING:
    from philont.memory import Memory


def _checked(fn: Callable[..., Any], cls: type[Service]) -> Callable[..., Any]:
    """``fn`` with its arguments checked before it runs (:func:`philont.arguments.wrap`): by
    their declared types, and as values a service stores or reads by; the keys of a method
    that finds rows (:func:`philont.finds.finds`) as keys."""
    rules = arguments.Rules(
        stored=True,
        searched_only=cls.searched_only,
        unstored=cls.unstored,
        finds=finds_of(fn),
    )
    return _explained(arguments.wrap(fn, rules, keeps_nul=_keeps_nul))


def _explained(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` whose not-found error says what it means on its unit of work's database
    (:meth:`philont.db.backend.Backend.explain`: the service knows its backend), and whose
    database errors leave it typed, as its unit of work's end would type them
    (:meth:`philont.memory.Memory.raised_in`), raised from the database's own."""
    if inspect.iscoroutinefunction(fn):
        return fn

    @functools.wraps(fn)
    def explained(self: Service, *args: Any, **kwargs: Any) -> Any:
        try:
            return fn(self, *args, **kwargs)
        except NotFoundError as exc:
            self.mem.backend.explain(exc)
            raise
        except Exception as exc:
            if not is_database_error(exc):
                raise  # philont's own typed error, or a bug: as it is
            typed = self.mem.raised_in(exc)
            if typed is None:
                raise
            raise typed from exc

    return explained


def _keeps_nul(service: Service) -> bool:
    return service.mem.backend.keeps_nul


class Service:
    """A service of one unit of work (``mem.facts``, ``mem.search``, ...). It reaches the
    transaction through the unit of work on every call, so a service kept past the end of
    its ``with`` block refuses to work (:class:`~philont.errors.UnitOfWorkError`) instead of
    beginning a transaction nobody ends. Services may flush; they never commit.

    Every public method of a subclass checks its arguments before it runs, by their declared
    types (:mod:`philont.arguments`, the same checks as every entry point's; on PostgreSQL text
    must hold no NUL character, unless it is ``unstored``; the keys of typed ``**options``,
    ``Unpack[SomeTypedDict]``, too), and as values a service stores or reads by: text anywhere
    in them must be valid Unicode (the arguments in ``searched_only`` may hold any text, but
    must be text), ``limit`` follows the one limit policy (``inputs.Limit``; None only where
    the method's default is None), and ``session_ids`` is never a single string. A refusal is
    an :class:`~philont.errors.InvalidInputError` naming the argument.

    A method that finds rows by text (a lookup, or a change or removal of the rows it finds)
    marks its keys with :func:`philont.finds.finds`: a key this database cannot hold (a NUL
    character on PostgreSQL) names nothing, so the method answers "not found" as it does on
    SQLite (None, ``[]``, False, 0, or its not-found error) instead of refusing the text; a
    write of such text is refused as above."""

    searched_only: ClassVar[frozenset[str]] = frozenset({"query"})
    """Arguments that are searched, never stored: any text is a query (the search plan makes
    it safe), lone surrogates included."""

    unstored: ClassVar[frozenset[str]] = frozenset()
    """Text arguments that never reach the database (a NUL character is fine in them on
    PostgreSQL too)."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for name, attr in list(vars(cls).items()):
            if not name.startswith("_") and inspect.isfunction(attr):
                setattr(cls, name, _checked(attr, cls))

    def __init__(self, mem: Memory) -> None:
        self.mem = mem

    @property
    def session(self) -> Session:
        return self.mem.session

    @property
    def clock(self) -> Clock:
        return self.mem.clock

    def _now(self) -> datetime:
        """The clock's time, aware UTC at storage precision (:meth:`Memory.clock`)."""
        return self.mem.clock()
