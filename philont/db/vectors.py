"""Vector search engines: what a database adds to the portable search (philont.embed.search).

The portable path, on every backend, is a coarse pass over sign-bit codes (Hamming distance,
computed in Python: numpy when installed) followed by exact cosine rescoring of the pool it
keeps. An engine may do the coarse pass inside the database instead: on SQLite,
:class:`SqliteVectors` uses sqlite-vec's ``vec_distance_hamming`` when the extension loads into
the connection (the pip package ``sqlite-vec`` and a Python whose sqlite3 can load extensions);
it returns the same pool the Python pass would. Nothing in the schema depends on it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import Any, ClassVar

from philont.db.backend import Raw
from philont.db.queries.vectors import MESSAGE_CODES, MESSAGES
from philont.log import get_logger
from philont.services.search.scoring import Filter

__all__ = ["ExtensionVectors", "SqliteVectors", "VectorEngine", "sqlite_vec_unavailable"]

log = get_logger(__name__)


class VectorEngine:
    """The portable path only (no database-side help)."""

    name = "python"

    def available(self, raw: Raw) -> bool:
        """Whether :meth:`nearest_messages` works on this connection."""
        return False

    def reason(self) -> str | None:
        """Why the database-side search is not used (None: it is)."""
        return "no vector extension for this database"

    def prepare(self, raw: Raw, dimension: int) -> None:
        """Set up database-side structures for vectors of ``dimension`` (a new index)."""

    def put_messages(self, raw: Raw, rows: Sequence[tuple[int, Sequence[float]]]) -> None:
        """Also store these (id, vector) rows database-side, where the engine keeps a copy."""

    def nearest_messages(
        self, raw: Raw, query: Sequence[float], query_code: bytes, flt: Filter, pool: int
    ) -> list[int]:
        """The ``pool`` message ids nearest the query, passing ``flt``."""
        raise NotImplementedError


class ExtensionVectors(VectorEngine):
    """An engine backed by a database extension: named after it while it is used, ``python``
    (the portable path) while not, with the reason."""

    extension: ClassVar[str]
    _reason: str | None

    @property
    def name(self) -> str:  # type: ignore[override]
        return self.extension if self._reason is None else "python"

    def reason(self) -> str | None:
        return self._reason


# --- sqlite-vec --------------------------------------------------------------------------------

_LOADED = "philont_sqlite_vec"
"""The attribute of a DB-API connection that tells whether sqlite-vec was loaded into it: None
(loaded) or why not. On the connection itself, not in a table keyed by ``id()``: a connection
closed and freed hands its id to the next one, which then passed for loaded, or for refused
with no reason told. Every SQLite connection philont makes takes attributes
(:class:`philont.db.cursors.TrackedConnection`); one that does not is tried each time."""
_UNTRIED = object()


def sqlite_vec_unavailable(conn: Any | None = None) -> str | None:
    """Why sqlite-vec cannot be used (None: it can be loaded)."""
    if conn is not None and not hasattr(conn, "enable_load_extension"):
        return "this Python's sqlite3 cannot load extensions (built without them)"
    try:
        import sqlite_vec  # noqa: F401
    except ModuleNotFoundError:
        return "the sqlite-vec package is not installed (pip install 'philont[embeddings]')"
    return None


class SqliteVectors(ExtensionVectors):
    """sqlite-vec's Hamming distance over our plain codes table, when the extension loads."""

    extension = "sqlite-vec"

    def __init__(self) -> None:
        self._reason = sqlite_vec_unavailable()

    def available(self, raw: Raw) -> bool:
        if self._reason is not None:
            return False
        conn = raw.connection
        reason = getattr(conn, _LOADED, _UNTRIED)
        if reason is _UNTRIED:
            reason = self._load(conn)
            with contextlib.suppress(AttributeError):  # a plain sqlite3.Connection
                setattr(conn, _LOADED, reason)
        if reason is not None:
            self._reason = str(reason)
            return False
        return True

    def _load(self, conn: Any) -> str | None:
        """Load sqlite-vec into ``conn``: None, or why it did not load."""
        reason = sqlite_vec_unavailable(conn)
        if reason is None:
            try:
                import sqlite_vec

                conn.enable_load_extension(True)
                try:
                    sqlite_vec.load(conn)
                finally:
                    conn.enable_load_extension(False)
            except Exception as exc:  # the library is missing or refuses this SQLite
                reason = f"sqlite-vec did not load: {exc}"
        if reason is not None:
            log.info("vectors.sqlite_vec_unavailable", reason=reason)
        return reason

    def nearest_messages(
        self, raw: Raw, query: Sequence[float], query_code: bytes, flt: Filter, pool: int
    ) -> list[int]:
        join = (
            f" CROSS JOIN {MESSAGES} AS b ON b.id = c.message_id{raw.same_agent('b', 'c')}"
            if flt.sql
            else ""
        )
        rows = raw.rows(
            f"SELECT c.message_id FROM {MESSAGE_CODES} AS c{join}{raw.where(flt.sql, alias='c')}"
            " ORDER BY vec_distance_hamming(vec_bit(c.code), vec_bit(?)), c.message_id DESC"
            " LIMIT ?",
            [*flt.params, query_code, pool],
        )
        return [int(r[0]) for r in rows]
