"""The PostgreSQL test set-up refuses to start on a server whose ``public`` schema holds
philont's tables, naming them (tests/pg_support.py): such tables made every PostgreSQL test
fail far from the cause. Checked on a schema of this test's own, never on ``public``."""

from __future__ import annotations

import pytest

from tests import pg_support

pytestmark = pytest.mark.postgres


@pytest.mark.parametrize(
    ("tables", "found"),
    [
        ((), []),
        (("notes_of_mine", "philontish", "memoryless"), []),
        (("philont_agents", "memory_facts", "other"), ["memory_facts", "philont_agents"]),
    ],
)
def test_philont_tables_are_named(
    pg_layout: pg_support.Layout, tables: tuple[str, ...], found: list[str]
) -> None:
    schema = f"{pg_layout.schema}_guard"
    made = "".join(f' CREATE TABLE "{schema}"."{t}" (x int);' for t in tables)
    pg_support._admin(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE; CREATE SCHEMA "{schema}";{made}')
    try:
        assert pg_support.philont_tables(schema) == found
    finally:
        pg_support._admin(f'DROP SCHEMA "{schema}" CASCADE')


def test_the_run_started_on_a_clean_public_schema(pg_layout: pg_support.Layout) -> None:
    assert pg_support.philont_tables("public") == []
    pg_support.refuse_populated_public()  # passes: nothing there
