"""Text ordered in code point order on both backends, as Python compares it and as SQLite's
BINARY collation does: PostgreSQL's default collation follows its database's locale, under
which ``apple`` sorts before ``Banana`` and ``a_b`` before ``A-B``, so a listing cut by a limit
kept other rows there."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Text
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql import coercions, roles
from sqlalchemy.sql.elements import ColumnElement
from sqlalchemy.sql.visitors import InternalTraversal

__all__ = ["CODE_POINT", "code_points", "in_code_points"]

CODE_POINT = 'COLLATE "C"'
"""What follows a text column of an ``ORDER BY`` on PostgreSQL (raw SQL)."""


class code_points(ColumnElement[str]):
    """``column`` to sort by in code point order (``COLLATE "C"`` on PostgreSQL; SQLite's
    default, BINARY, is that order): usable in statements built once for both backends."""

    inherit_cache = True
    type = Text()
    _traverse_internals = [("column", InternalTraversal.dp_clauseelement)]  # noqa: RUF012 - as SQLAlchemy declares it

    def __init__(self, column: Any) -> None:
        # The column's expression, not an ORM attribute: traversals (an adaptation onto an
        # alias or subquery, the ORM's compile) copy and adapt only ClauseElements.
        self.column = coercions.expect(roles.ExpressionElementRole, column)

    @property
    def _from_objects(self) -> list[Any]:
        """The column's FROMs: selected (under a label), it brings its table."""
        return list(self.column._from_objects)


@compiles(code_points)
def _binary(element: code_points, compiler: Any, **kw: Any) -> str:
    return str(compiler.process(element.column, **kw))


@compiles(code_points, "postgresql")
def _c_collation(element: code_points, compiler: Any, **kw: Any) -> str:
    return f"{compiler.process(element.column, **kw)} {CODE_POINT}"


def in_code_points(column: str, postgres: bool) -> str:
    """Raw SQL's ``column`` to sort by in code point order (:class:`code_points`)."""
    return f"{column} {CODE_POINT}" if postgres else column
