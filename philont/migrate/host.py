"""For a host application that shares the database: filters that keep philont's objects out of
the host's own Alembic autogenerate."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from philont import settings

__all__ = ["host_include_name", "host_include_object", "is_philont_table"]

_FTS_SHADOWS = ("_data", "_idx", "_content", "_docsize", "_config")


@functools.cache
def _philont_names() -> frozenset[str]:
    """Every table philont creates: the models, the FTS5 indexes, the version table."""
    from philont.db.fts import FTS_INDEXES
    from philont.db.schema import metadata

    names = set(metadata.tables) | {index.name for index in FTS_INDEXES}
    return frozenset(names | {settings.VERSION_TABLE})


def is_philont_table(name: str | None) -> bool:
    """Whether a table of the database is philont's: a model table, an FTS5 index or one of its
    shadow tables, our version table, any ``philont_*`` table of ours, or a hash partition of
    PostgreSQL's layout."""
    if not name:
        return False
    from philont.db.pg_layout import layout_only

    names = _philont_names()
    if name in names or name.startswith("philont_") or layout_only(name):
        return True
    return any(name.endswith(s) and name[: -len(s)] in names for s in _FTS_SHADOWS)


def host_include_name(name: str | None, type_: str, parent_names: Mapping[str, Any]) -> bool:
    """``include_name`` for a host's ``context.configure``: False for philont's tables (and
    their columns, indexes and constraints), so the host's ``alembic revision --autogenerate``
    proposes neither creating nor dropping them. Runs before reflection: philont's tables are
    not even read."""
    if type_ == "table":
        return not is_philont_table(name)
    if type_ == "index" and name is not None and name.startswith("philont_pg_"):
        return False  # PostgreSQL search indexes (made by DDL events, not models)
    return not is_philont_table(parent_names.get("table_name"))


def host_include_object(
    obj: Any, name: str | None, type_: str, reflected: bool, compare_to: Any
) -> bool:
    """``include_object`` for a host's ``context.configure``: the same rule as
    :func:`host_include_name`, for objects (a host whose Alembic predates ``include_name``, or
    that combines both)."""
    if type_ == "table":
        return not is_philont_table(name)
    table = getattr(obj, "table", None)
    return not is_philont_table(getattr(table, "name", None))
