"""The Alembic chain on PostgreSQL: one shared layout for every agent (v036), equal to what the
models describe, upgraded once per database; the alembic CLI and the philont CLI take a URL."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import Engine, text
from sqlalchemy.engine import URL, make_url

from philont import migrate, settings
from philont.db import pg_layout as rules
from philont.db.agents import check_name
from philont.db.engine import create_engine
from philont.db.fts import (
    PG_MESSAGES_TEXT,
    PG_NOTES_TEXT,
    PG_SKILLS_TEXT,
    PG_WORDS_COLUMN,
    pg_words,
)
from philont.errors import (
    AgentRequiredError,
    InvalidInputError,
    MigrationError,
    SchemaError,
    SchemaOutOfDateError,
    UnknownSchemaVersionError,
    UnrecognizedSchemaError,
)
from philont.memory import Memory
from philont.store import Store
from tests.pg_support import _admin, in_schema, server_url

pytestmark = pytest.mark.postgres

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def scratch(worker_tag: str) -> Iterator[Callable[[], URL]]:
    """Factory of empty schemas (URLs whose connections work in them), dropped afterwards."""
    made: list[str] = []

    def new() -> URL:
        name = f"s{len(made)}_{worker_tag}"
        _admin(f'DROP SCHEMA IF EXISTS "{name}" CASCADE; CREATE SCHEMA "{name}"')
        made.append(name)
        return in_schema(server_url(), name)

    yield new
    for name in made:
        _admin(f'DROP SCHEMA IF EXISTS "{name}" CASCADE')


def _schema_objects(engine: Engine) -> dict[str, object]:
    """Columns (name, type, nullability, default), indexes (definition) and constraints of the
    engine's agent schema, for comparing two schemas built differently."""
    with engine.connect() as conn:
        schema = conn.execute(text("SELECT current_schema()")).scalar_one()
        columns = conn.execute(
            text(
                "SELECT table_name, column_name, data_type, is_nullable, column_default,"
                " is_generated, generation_expression FROM information_schema.columns"
                " WHERE table_schema = :s AND table_name != :v ORDER BY 1, 2"
            ),
            {"s": schema, "v": settings.VERSION_TABLE},
        ).all()
        indexes = conn.execute(
            text(
                "SELECT indexname, replace(indexdef, :s || '.', '') FROM pg_indexes"
                " WHERE schemaname = :s AND tablename != :v ORDER BY 1"
            ),
            {"s": schema, "v": settings.VERSION_TABLE},
        ).all()
        security = conn.execute(
            text(
                "SELECT c.relname, c.relkind, c.relrowsecurity, c.relforcerowsecurity,"
                " pg_get_partkeydef(c.oid), pg_get_expr(c.relpartbound, c.oid)"
                " FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
                " WHERE n.nspname = :s AND c.relkind IN ('r', 'p') AND c.relname != :v"
                " ORDER BY 1"
            ),
            {"s": schema, "v": settings.VERSION_TABLE},
        ).all()
        policies = conn.execute(
            text(
                "SELECT tablename, policyname, cmd, qual, with_check FROM pg_policies"
                " WHERE schemaname = :s ORDER BY 1, 2"
            ),
            {"s": schema},
        ).all()
        functions = conn.execute(
            text(
                "SELECT p.proname, pg_get_functiondef(p.oid) FROM pg_proc p"
                " JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = :s ORDER BY 1"
            ),
            {"s": schema},
        ).all()
        constraints = conn.execute(
            text(
                "SELECT c.conrelid::regclass::text, c.contype, pg_get_constraintdef(c.oid)"
                " FROM pg_constraint c JOIN pg_namespace n ON n.oid = c.connamespace"
                " WHERE n.nspname = :s ORDER BY 1, 2, 3"
            ),
            {"s": schema},
        ).all()
    return {
        "security": [tuple(r) for r in security],
        "policies": [tuple(r) for r in policies],
        "functions": [
            (r[0], str(r[1]).replace(f"{schema}.", "").replace(schema, "S")) for r in functions
        ],
        "columns": [tuple(r) for r in columns],
        "indexes": [tuple(r) for r in indexes],
        "constraints": [
            (str(r[0]).removeprefix(f"{schema}."), r[1], r[2])
            for r in constraints
            if not str(r[0]).startswith(f"{schema}.{settings.VERSION_TABLE}")
            and str(r[0]) != settings.VERSION_TABLE
        ],
    }


def test_upgrade_head_builds_what_the_models_describe(scratch: Callable[[], URL]) -> None:
    described, upgraded = scratch(), scratch()
    engine = create_engine(described)
    with engine.begin() as conn:
        for statement in rules.statements():  # the layout derived from the models now
            conn.exec_driver_sql(statement)
    report = migrate.upgrade(upgraded)  # v036 to v040 (a no-op here): frozen copies
    assert report.stamped == "v035" and report.applied == ["v036", "v037", "v038", "v039", "v040"]
    assert report.adopted is None  # a new schema: nothing of the original's was adopted
    other = create_engine(upgraded)
    try:
        built, migrated = _schema_objects(engine), _schema_objects(other)
        for section in built:
            assert built[section] == migrated[section], section
        security = {r[0]: r for r in migrated["security"]}  # type: ignore[attr-defined]
        assert all(r[2] and r[3] for name, r in security.items() if name != "philont_agents")
        for table in rules.PARTITIONED:
            assert security[table][4] == "HASH (agent_id)"
            parts = [r for r in security.values() if str(r[0]).startswith(f"{table}_p")]
            assert len(parts) == rules.PARTITIONS
        keys = [
            r[2]
            for r in migrated["constraints"]  # type: ignore[attr-defined]
            if r[1] in ("p", "u", "f") and r[0] != "philont_agents"
        ]
        assert keys and all("(agent_id" in k for k in keys), keys
        indexes = [r[1] for r in migrated["indexes"]]  # type: ignore[attr-defined]
        assert all("(agent_id" in i for i in indexes if " ON philont_agents " not in i), indexes
    finally:
        engine.dispose()
        other.dispose()


_WORD_INDEXES = {
    "philont_pg_raw_messages_words": ("memory_raw_messages", PG_MESSAGES_TEXT),
    "philont_pg_notes_words": ("memory_notes", PG_NOTES_TEXT),
    "philont_pg_skills_words": ("memory_skills", PG_SKILLS_TEXT),
}


def _word_lookups(engine: Engine, word: str, *, stored: bool) -> dict[str, tuple[int, bool]]:
    """Per word index: how many rows hold ``word`` by the stored words search reads since v039
    (``PG_WORDS_COLUMN``) or by the expression it asked before (``pg_words``), and whether the
    plan of that look-up matches the words in an index."""
    out: dict[str, tuple[int, bool]] = {}
    with engine.connect() as conn:
        conn.exec_driver_sql("SET enable_seqscan = off")
        for name, (table, expression) in _WORD_INDEXES.items():
            words = PG_WORDS_COLUMN if stored else pg_words(expression)
            where = f"{words} @@ phraseto_tsquery('english', %s)"
            found = conn.exec_driver_sql(f"SELECT count(*) FROM {table} WHERE {where}", (word,))
            plan = conn.exec_driver_sql(f"EXPLAIN SELECT 1 FROM {table} WHERE {where}", (word,))
            indexed = any("Index Cond" in r[0] and "@@" in r[0] for r in plan)
            out[name] = (int(found.scalar_one()), indexed)
    return out


def test_the_stored_words_compose_a_texts_first_characters_only(
    scratch: Callable[[], URL],
) -> None:
    """Each table's stored words compose (NFC) the text cut to PG_WORDS_CHARS, not the whole
    text and then the cut: composing a 16M-character text took a second a write (5 s for
    Greek letters that decompose to four), in every write and in v039's upgrade."""
    url = scratch()
    migrate.upgrade(url)
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            for table, _expression in _WORD_INDEXES.values():
                expression = conn.execute(
                    text(
                        "SELECT pg_get_expr(d.adbin, d.adrelid) FROM pg_attrdef d JOIN"
                        " pg_attribute a ON a.attrelid = d.adrelid AND a.attnum = d.adnum"
                        " WHERE a.attname = :column AND d.adrelid = CAST(:table AS regclass)"
                    ),
                    {"column": PG_WORDS_COLUMN, "table": table},
                ).scalar_one()
                composed = expression.split("NORMALIZE(", 1)[1]
                assert composed.startswith('"left"('), expression
    finally:
        engine.dispose()


@pytest.mark.parametrize("base", ["v037", "v038"])
def test_an_upgrade_stores_the_words_indexes_them_and_keeps_every_row(
    scratch: Callable[[], URL], base: str
) -> None:
    """v038 rebuilt the word indexes over the text with ASCII separators read as spaces, so a
    part of a shape PostgreSQL's parser keeps whole (``node`` of ``node.js``, ``example`` of
    ``bob@example.com``) is found; v039 stores those words in a generated column the indexes
    cover and search reads. From a database made before either, the rows are kept, the words
    of every row are stored and found by the index, search finds what it found, and the
    planner has the column's statistics; the words stored are those of the text composed, so
    a text in neither normal form is found by its composed words."""
    url = scratch()
    with migrate.isolated():
        command.upgrade(migrate.alembic_config(url), base)
    engine = create_engine(url)
    try:
        with Store(engine).begin(agent="kept") as mem:  # the layout before head: no check
            mem.timeline.append("We ported it to node.js; mail bob@example.com")
            mem.notes.add("The guide is at https://example.com/docs now")
            mem.skills.create("ship", "Tag v1.2.3 for example.com", ["release"], "1. tag it")
            mem.timeline.append(DOTTED)  # storable before: the parser kept it one long token
            mem.notes.add("Trip to vie\u0302\u0323t nam")  # in neither normal form (việt)
        before = _word_lookups(engine, "example", stored=False)
        assert before == dict.fromkeys(_WORD_INDEXES, (1, base == "v038"))
        report = migrate.upgrade(url)
        assert report.applied == (["v038", "v039", "v040"] if base == "v037" else ["v039", "v040"])
        assert _word_lookups(engine, "example", stored=True) == dict.fromkeys(
            _WORD_INDEXES, (1, True)
        )
        with engine.connect() as conn:  # the planner knows the new column's lexemes
            analyzed = (
                "SELECT tablename FROM pg_stats WHERE schemaname = current_schema()"
                f" AND attname = '{PG_WORDS_COLUMN}'"
            )
            assert {t for t, _i in _WORD_INDEXES.values()} <= set(
                conn.exec_driver_sql(analyzed).scalars()
            )
        with Store.open(url, upgrade=False) as store, store.begin(agent="kept") as mem:
            assert mem.timeline.count() == 2
            # the best hit (the other message follows as its neighbour)
            assert mem.search.messages("node")[0].id == 1
            assert mem.search.messages("w17")[0].id == 2
            assert len(mem.search.notes("example")) == len(mem.search.skills("v1")) == 1
            assert [n.content for n in mem.search.notes("việt")] == ["Trip to vie\u0302\u0323t nam"]
        # the words stored are the composed text's: the composed word alone finds it
        assert _word_lookups(engine, "việt", stored=True)["philont_pg_notes_words"] == (1, True)
    finally:
        engine.dispose()


DOTTED = ".".join(f"w{i}" for i in range(300_000))
"""2.3 MB of short words joined by dots (minified code, a long path): read as words it is more
than the 1 MB of lexemes a tsvector holds; an index reads only its first PG_WORDS_CHARS."""


@pytest.mark.parametrize("separator", [".", " ", "/"])
def test_a_text_with_more_words_than_a_tsvector_holds_is_stored_and_found(
    pg_layout: object, separator: str
) -> None:
    """Storing it failed ("string is too long for tsvector") once separators were read as
    spaces (v038), and a long text of plain words always had: the 16 M characters a text may
    hold were not true on PostgreSQL."""
    from tests.pg_support import Layout

    assert isinstance(pg_layout, Layout)
    name = pg_layout.new_agent()
    text = DOTTED.replace(".", separator)
    with Store.open(pg_layout.url) as store:
        with store.begin(agent=name) as mem:
            mem.timeline.append(text)
            mem.notes.add(text)
            mem.skills.create("long", text, ["bulk"], "1. read it")
        with store.begin(agent=name, write=False) as mem:
            assert len(mem.search.messages("w17")) == 1
            assert len(mem.search.notes("w17")) == 1
            assert [s.name for s in mem.search.skills("w17")] == ["long"]


def test_the_stored_words_cannot_be_written_and_follow_the_text(pg_layout: object) -> None:
    """The word column is generated: a write that names it is refused by PostgreSQL, and a
    row's words follow its text when the text changes (a note edited is found by its new
    words only)."""
    from tests.pg_support import Layout

    assert isinstance(pg_layout, Layout)
    name = pg_layout.new_agent()
    with Store.open(pg_layout.url) as store:
        with store.begin(agent=name) as mem:
            mem.notes.upsert("n1", "the tent is in the garage")
            mem.skills.create("pack", "Pack the tent", ["camping"], "1. fold it")
        with store.begin(agent=name) as mem:
            mem.notes.upsert("n1", "the stove is in the attic")
            mem.skills.update("pack", when_to_use="before a hike")
        with store.begin(agent=name, write=False) as mem:
            assert mem.search.notes("tent") == []
            assert [h.id for h in mem.search.notes("attic")] == ["n1"]
            assert [s.name for s in mem.search.skills("hike")] == ["pack"]
    engine = create_engine(pg_layout.url)
    try:
        with engine.connect() as conn, pytest.raises(Exception, match="generated column"):
            conn.exec_driver_sql(
                f"UPDATE memory_notes SET {PG_WORDS_COLUMN} = to_tsvector('x') WHERE false"
            )
    finally:
        engine.dispose()


def test_autogenerate_finds_no_difference_on_postgresql(pg_layout: object) -> None:
    from tests.pg_support import Layout

    assert isinstance(pg_layout, Layout)
    engine = create_engine(pg_layout.url)

    try:
        with engine.connect() as conn:
            ctx = MigrationContext.configure(
                conn,
                opts={
                    "include_name": migrate.include_name,
                    # the registry and the counters are no models (compared by the test above);
                    # a host's own tables may share the schema (tests of a host app do)
                    "include_object": lambda obj, name, type_, reflected, compare_to: (
                        not (
                            type_ == "table"
                            and (rules.layout_only(str(name)) or (reflected and compare_to is None))
                        )
                    ),
                    "compare_type": True,
                    "version_table": settings.VERSION_TABLE,
                },
            )
            diff = compare_metadata(ctx, rules.layout_metadata())
    finally:
        engine.dispose()
    assert diff == []


def test_epoch_millis_and_reals_keep_their_range_and_precision(
    pg_layout: object, pg_agent_name: Callable[[], str]
) -> None:
    from tests.pg_support import Layout

    assert isinstance(pg_layout, Layout)
    engine = create_engine(pg_layout.url)
    try:
        with engine.connect() as conn:
            types = dict(
                conn.execute(
                    text(
                        "SELECT column_name, data_type FROM information_schema.columns"
                        " WHERE table_schema = current_schema() AND table_name = 'memory_facts'"
                    )
                ).all()
            )
    finally:
        engine.dispose()
    assert types["created_at"] == "bigint"  # epoch ms overflow a 32-bit integer
    assert types["confidence"] == "double precision"  # SQLite REAL is an 8-byte double
    assert types["agent_id"] == "bigint"
    agent = pg_agent_name()
    with Memory.open(pg_layout.url, agent=agent) as mem:
        fact = mem.facts.store("user", "pi", 3.14159, confidence=0.123456789)
    with Memory.open(pg_layout.url, agent=agent) as mem:
        got = mem.facts.get("user", "pi")
    assert got is not None and got.confidence == 0.123456789
    assert got.created_at == fact.created_at


def test_a_second_upgrade_applies_nothing_whatever_the_number_of_agents(
    scratch: Callable[[], URL],
) -> None:
    url = scratch()
    migrate.upgrade(url)
    with Store.open(url) as store:
        for n in range(5):
            with store.begin(agent=f"agent{n}") as mem:
                mem.notes.add("hello")
    again = migrate.upgrade(url)
    assert again.applied == [] and again.stamped is None
    st = migrate.status(url)
    assert st.at_head and st.schema_version == str(settings.SCHEMA_VERSION)


@pytest.mark.postgres
@pytest.mark.parametrize("name", ["missing", 'Mixed"Case'])
def test_an_upgrade_makes_the_schema_its_search_path_names_instead_of_using_public(
    name: str, worker_tag: str
) -> None:
    schema = f"{name}_{worker_tag}"
    quoted = '"' + schema.replace('"', '""') + '"'
    url = in_schema(server_url(), quoted)
    try:
        migrate.upgrade(url)
        engine = create_engine(server_url())
        try:
            with engine.connect() as conn:
                where = "SELECT schemaname FROM pg_tables WHERE tablename = 'philont_agents'"
                found = set(conn.execute(text(where)).scalars())
                assert schema in found and "public" not in found
        finally:
            engine.dispose()
        assert migrate.status(url).at_head
    finally:
        _admin(f"DROP SCHEMA IF EXISTS {quoted} CASCADE")


def test_a_search_path_without_the_extensions_schema_is_refused_before_any_write(
    worker_tag: str,
) -> None:
    # The search indexes name pg_trgm's operator classes unqualified: without `public` (where
    # they live) on the path, PostgreSQL used to fail half-way ("gin_trgm_ops does not exist").
    schema = f"nopublic_{worker_tag}"
    url = make_url(server_url()).update_query_dict({"options": f"-csearch_path={schema}"})
    try:
        with pytest.raises(MigrationError, match=r"leaves out schema 'public'.*pg_trgm") as err:
            migrate.upgrade(url)
        assert "search_path%3D<your schema>,public" in str(err.value)
        engine = create_engine(server_url())
        try:
            with engine.connect() as conn:
                made = "SELECT count(*) FROM pg_namespace WHERE nspname = :s"
                assert conn.execute(text(made), {"s": schema}).scalar() == 0  # nothing written
        finally:
            engine.dispose()
        migrate.upgrade(in_schema(server_url(), schema))  # with `public` after it: works
        assert migrate.status(in_schema(server_url(), schema)).at_head
    finally:
        _admin(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def test_the_alembic_cli_upgrades_a_database_once(scratch: Callable[[], URL]) -> None:
    url = scratch()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    target = url.render_as_string(hide_password=False)
    done = subprocess.run(
        [sys.executable, "-m", "alembic", "-x", f"url={target}", "upgrade", "head"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert migrate.status(url).at_head


def test_memory_tables_without_our_version_table_are_refused_untouched(
    scratch: Callable[[], URL],
) -> None:
    url = scratch()
    engine = create_engine(url)
    try:
        with engine.begin() as conn:
            conn.execute(text("CREATE TABLE memory_facts (id TEXT PRIMARY KEY, body TEXT)"))
        with pytest.raises(UnrecognizedSchemaError):
            migrate.upgrade(url)
        with engine.connect() as conn:
            tables = conn.execute(
                text("SELECT tablename FROM pg_tables WHERE schemaname = current_schema()")
            ).scalars()
            assert set(tables) == {"memory_facts"}
    finally:
        engine.dispose()


def test_an_agent_schema_of_the_old_layout_is_refused_with_the_way_out(
    scratch: Callable[[], URL],
) -> None:
    url = scratch()
    engine = create_engine(url)
    try:
        with engine.begin() as conn:
            conn.execute(text(f"CREATE TABLE {settings.VERSION_TABLE} (version_num TEXT)"))
            conn.execute(text(f"INSERT INTO {settings.VERSION_TABLE} VALUES ('v034')"))
    finally:
        engine.dispose()
    with pytest.raises(UnrecognizedSchemaError, match="agents export-schema SCHEMA FILE"):
        migrate.upgrade(url)


_REFUSED_SCHEMAS = {
    "a later release's revision": [
        "CREATE TABLE {v} (version_num TEXT)",
        "INSERT INTO {v} VALUES ('v099')",
    ],
    "a revision no release has": [
        "CREATE TABLE {v} (version_num TEXT)",
        "INSERT INTO {v} VALUES ('zzz')",
    ],
    "the old per-agent layout": [
        "CREATE TABLE {v} (version_num TEXT)",
        "INSERT INTO {v} VALUES ('v030')",
    ],
    "memory tables without our version table": [
        "CREATE TABLE memory_facts (id TEXT PRIMARY KEY, body TEXT)",
    ],
}


@pytest.mark.parametrize("case", sorted(_REFUSED_SCHEMAS))
def test_a_schema_the_upgrade_refuses_is_refused_so_by_every_check(
    scratch: Callable[[], URL], case: str
) -> None:
    """``migrate.check`` (``db check``, ``Store.open``, ``stats``, ``export``) said "run
    `philont db upgrade`" (schema_out_of_date, exit 3) of a PostgreSQL schema the upgrade
    then refused; it checked only SQLite files as an upgrade would. Now every check raises the
    upgrade's own refusal, and an unknown revision is named by the column it is in (the
    upgrade named ``memory_meta.schema_version``, 'versions 1..31', for ``'v099'``)."""
    url = scratch()
    engine = create_engine(url)
    try:
        with engine.begin() as conn:
            for sql in _REFUSED_SCHEMAS[case]:
                conn.execute(text(sql.format(v=settings.VERSION_TABLE)))
        with pytest.raises(SchemaError) as refused:
            migrate.upgrade(url)
        assert not isinstance(refused.value, SchemaOutOfDateError)
        if isinstance(refused.value, UnknownSchemaVersionError):
            assert refused.value.column == f"{settings.VERSION_TABLE}.version_num"
        expected = (type(refused.value), refused.value.message)

        def opened() -> None:
            with Store.open(url, upgrade=False):
                pass

        def on_connection() -> None:
            with engine.connect() as conn:
                migrate.check(conn)

        for call in (lambda: migrate.check(url), on_connection, opened):
            with pytest.raises(SchemaError) as caught:
                call()
            assert (type(caught.value), caught.value.message) == expected
    finally:
        engine.dispose()
    cli = [sys.executable, "-m", "philont", "db", "check", "--db"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([*cli, url.render_as_string(hide_password=False)], env=env,
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    assert (proc.returncode, proc.stderr) == (1, f"error ({expected[0].code}): {expected[1]}\n")


@pytest.mark.parametrize("agent", ["", "Alice", "-a", ".a", "a b", "x" * 64, "a;b", None, 7])
def test_bad_agent_names_are_refused(agent: object) -> None:
    with pytest.raises(InvalidInputError):
        check_name(agent)


def test_a_unit_of_work_without_an_agent_is_refused(
    pg_layout: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.pg_support import Layout

    assert isinstance(pg_layout, Layout)
    monkeypatch.delenv(settings.AGENT_ENV, raising=False)
    with Store.open(pg_layout.url) as store:  # opening needs no agent: one Store for all
        with pytest.raises(AgentRequiredError, match="agent"), store.begin():
            pass
        with store.begin(agent="named_here") as mem:
            assert mem.agent == "named_here"


def test_the_cli_works_for_one_agent(scratch: Callable[[], URL]) -> None:
    url = scratch().render_as_string(hide_password=False)
    cli = [sys.executable, "-m", "philont", "--agent", "cli_agent"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    up = subprocess.run([*cli, "db", "upgrade", "--db", url], env=env, capture_output=True,
                        text=True, timeout=300)  # fmt: skip
    assert up.returncode == 0, up.stderr
    assert up.stdout.splitlines()[1:] == []  # a new schema: nothing adopted, nothing copied
    current = subprocess.run([*cli, "db", "current", "--db", url, "--json"], env=env,
                             capture_output=True, text=True, timeout=300)  # fmt: skip
    assert current.returncode == 0, current.stderr
    assert json.loads(current.stdout)["revision"] == migrate.head_revision()
    stats = subprocess.run([*cli, "stats", "--db", url, "--json"], env=env,
                           capture_output=True, text=True, timeout=300)  # fmt: skip
    assert stats.returncode == 4, stats.stderr  # no such agent yet: looking creates none
    with Store.open(url, upgrade=False) as store, store.begin(agent="cli_agent") as mem:
        mem.facts.store("user", "city", "Berlin")
    stats = subprocess.run([*cli, "stats", "--db", url, "--json"], env=env,
                           capture_output=True, text=True, timeout=300)  # fmt: skip
    assert stats.returncode == 0, stats.stderr


def test_a_failure_mid_upgrade_leaves_the_schema_empty(scratch: Callable[[], URL]) -> None:
    url = scratch()

    def fail_at_v036(revision: str) -> None:
        if revision == "v036":
            raise RuntimeError("injected failure")

    with pytest.raises(MigrationError):
        migrate.upgrade(url, on_step=fail_at_v036)
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            tables = conn.execute(
                text("SELECT tablename FROM pg_tables WHERE schemaname = current_schema()")
            ).scalars()
            assert list(tables) == []  # PostgreSQL's DDL is transactional: all or nothing
    finally:
        engine.dispose()
    assert migrate.upgrade(url).applied == ["v036", "v037", "v038", "v039", "v040"]


def test_concurrent_first_upgrades_of_one_database_all_succeed(
    scratch: Callable[[], URL],
) -> None:
    url = scratch().render_as_string(hide_password=False)
    # Processes, as in real life (Alembic's context is process-global, not thread-safe).
    code = (
        "import json, sys; from philont import migrate;"
        " print(json.dumps(migrate.upgrade(sys.argv[1]).applied))"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    args = [sys.executable, "-c", code, url]
    procs = [
        subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for _ in range(3)
    ]
    outputs = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0], [err for _out, err in outputs]
    applied = sorted((json.loads(out) for out, _err in outputs), key=len)
    assert applied == [[], [], ["v036", "v037", "v038", "v039", "v040"]]


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_from_engine_checks_the_database_the_hosts_connections_use(
    pg_layout: object, kind: str
) -> None:
    """A host engine whose database and search_path come from its connect_args, not its URL
    (credentials, a service name, a token: anything a connect hook supplies): the schema
    check runs through its connections, not through a connection of its own to the URL."""
    import asyncio

    from sqlalchemy import create_engine as host_engine
    from sqlalchemy.ext.asyncio import create_async_engine as host_async_engine

    from philont.aio import AsyncStore

    real = make_url(server_url())
    url = real.set(database="philont_no_such_database")  # what the URL alone would reach
    connect = {
        "dbname": real.database,
        "options": f"-csearch_path={pg_layout.schema},public",
    }
    agent = check_name(f"host-{kind}")
    if kind == "sync":
        engine = host_engine(url, connect_args=connect)
        with Store.from_engine(engine, agent=agent) as store, store.begin() as mem:
            mem.facts.store("user", "city", "Berlin")
            assert mem.facts.get("user", "city") is not None
        engine.dispose()
        return

    async def run() -> None:
        engine = host_async_engine(url, connect_args=connect)
        store = await AsyncStore.from_engine(engine, agent=agent)
        await store.run(lambda mem: mem.facts.store("user", "city", "Berlin"))
        assert await store.run(lambda mem: mem.facts.get("user", "city")) is not None
        await store.close()
        await engine.dispose()

    asyncio.run(run())
