"""Upgrades of a PostgreSQL database: one shared layout for every agent, upgraded once.

Revisions v001-v035 describe the SQLite file, one agent per file. On PostgreSQL the history
starts at v036, which builds the shared layout for any number of agents
(``philont.db.pg_layout``): a database without our version table is stamped ``v035``
(:data:`SQLITE_HISTORY_END`) and upgraded from there, so the SQLite-only steps never run on it.
Every inspection here asks for named relations of the connection's schema (``to_regclass``):
nothing scans the catalogs, whose size no longer depends on the number of agents anyway.
"""

from __future__ import annotations

from sqlalchemy import Connection, text
from sqlalchemy.engine import URL

from philont import settings
from philont.db.engine import check_utf8, create_engine
from philont.db.pg_layout import AGENTS_TABLE
from philont.errors import MigrationError, UnknownSchemaVersionError, UnrecognizedSchemaError
from philont.migrate.plan import VERSION_COLUMN, _Plan
from philont.migrate.report import Status
from philont.migrate.scripts import heads_for, known_revisions

__all__ = [
    "SQLITE_HISTORY_END",
    "check_extensions_on_path",
    "ensure_named_schema",
    "lock",
    "plan",
    "status",
    "status_on",
]

SQLITE_HISTORY_END = "v035"
"""The last revision of the one-agent-per-file history, stamped on a new PostgreSQL database."""

_LEGACY_HINT = (
    "this schema holds one agent in the old schema-per-agent layout; open the database's "
    "shared schema instead and move the agent with `philont agents export-schema SCHEMA FILE` "
    "then `philont --agent NAME import FILE` (README, PostgreSQL)"
)


def _exists(conn: Connection, name: str) -> bool:
    return bool(conn.execute(text("SELECT to_regclass(:n) IS NOT NULL"), {"n": name}).scalar())


def _revision(conn: Connection) -> str | None:
    if not _exists(conn, settings.VERSION_TABLE):
        return None
    row = conn.execute(text(f"SELECT version_num FROM {settings.VERSION_TABLE}")).first()
    return None if row is None else str(row[0])


def plan(conn: Connection) -> _Plan:
    """What upgrading the connection's schema would do; refuses, before any write, a database
    or connection not in UTF8, a schema philont did not make or one in the old per-agent
    layout."""
    check_utf8(conn)
    revision = _revision(conn)
    if revision is not None:
        if revision not in known_revisions():
            raise UnknownSchemaVersionError(revision, column=VERSION_COLUMN)
        if revision <= SQLITE_HISTORY_END:  # never left there: the stamp and v036 are one
            # transaction, so this is a schema of the old layout (one agent per schema)
            raise UnrecognizedSchemaError(f"revision {revision}: {_LEGACY_HINT}")
        return _Plan(revision=revision, stamp=None, has_data=True)
    if _exists(conn, "memory_raw_messages") or _exists(conn, "memory_facts"):
        raise UnrecognizedSchemaError(
            f"memory tables without {settings.VERSION_TABLE}: not made by philont"
        )
    return _Plan(revision=None, stamp=SQLITE_HISTORY_END, has_data=False)


def ensure_named_schema(conn: Connection) -> None:
    """Create the schema the connection's search_path names first when it does not exist yet:
    PostgreSQL would otherwise put the layout silently in the next schema of the path
    (usually ``public``)."""
    path = str(conn.execute(text("SHOW search_path")).scalar() or "")
    first = path.split(",")[0].strip()
    if first.startswith('"') and first.endswith('"'):
        first = first[1:-1].replace('""', '"')
    if first and first != "$user":
        quoted = '"' + first.replace('"', '""') + '"'
        conn.execute(text(f"CREATE SCHEMA IF NOT EXISTS {quoted}"))


_EXTENSIONS = ("pg_trgm", "btree_gin")
"""Extensions whose operator classes the search indexes name unqualified; an upgrade creates
them in ``public`` when the database has none."""


def check_extensions_on_path(conn: Connection) -> None:
    """Refuse, before any write, an upgrade whose search_path leaves out the schema holding an
    extension the search indexes need (else PostgreSQL fails half-way with "operator class
    gin_trgm_ops does not exist")."""
    on_path = set(conn.execute(text("SELECT unnest(current_schemas(false))")).scalars())
    rows = conn.execute(
        text(
            "SELECT e.extname, n.nspname FROM pg_extension e"
            " JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = ANY(:names)"
        ),
        {"names": list(_EXTENSIONS)},
    )
    installed = {str(name): str(schema) for name, schema in rows}
    for name in _EXTENSIONS:
        schema = installed.get(name, "public")
        if schema not in on_path:
            path = conn.execute(text("SHOW search_path")).scalar()
            raise MigrationError(
                f"the connection's search_path ({path}) leaves out schema {schema!r}, which"
                f" holds the {name} extension the search indexes need (an upgrade creates it"
                f" there); put it after your own schema, e.g. ?options=-csearch_path%3D"
                f"<your schema>,{schema}; the database was left as it was"
            )


def lock(conn: Connection) -> None:
    """One upgrade of a schema at a time (a second waits, then finds it at head)."""
    conn.execute(
        text("SELECT pg_advisory_xact_lock(hashtext('philont.migrate.' || current_schema()))")
    )


def status(url: URL, head: str) -> Status:
    """The database's revision (``schema_version`` is the layout's there: Philont's at a
    revision this release ships, else None)."""
    engine = create_engine(url, create=False)
    try:
        with engine.connect() as conn:
            return status_on(conn, head)
    finally:
        engine.dispose()


def status_on(conn: Connection, head: str) -> Status:
    """:func:`status` as ``conn`` sees the database (its search_path, its credentials); a
    database or connection not in UTF8 is refused (:func:`~philont.db.engine.check_utf8`:
    a host's connection may have been made without philont's guard)."""
    check_utf8(conn)
    revision = _revision(conn)
    # the schema version is the layout's, not recorded: only a revision we ship says it (a
    # later release's, or any other text, is not read as ours: 'v999' > 'v035' as text)
    ours = revision is not None and revision in known_revisions() and revision > SQLITE_HISTORY_END
    version = str(settings.SCHEMA_VERSION) if ours else None
    if ours and not _exists(conn, AGENTS_TABLE):  # pragma: no cover - damaged
        revision = None
    return Status(
        revision=revision, head=head, schema_version=version, heads=heads_for("postgresql")
    )
