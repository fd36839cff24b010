"""A database is named alike in every message whatever the driver reaching it: an SQLite file
by its path, a PostgreSQL database by its URL without password or driver (an AsyncStore said
"the Store of sqlite+aiosqlite:////..." where the Store said the same file otherwise)."""

from __future__ import annotations

import pytest
from sqlalchemy.engine import make_url

from philont.db.engine import database_name


@pytest.mark.parametrize(
    ("urls", "name"),
    [
        (["sqlite:////srv/m.sqlite", "sqlite+aiosqlite:////srv/m.sqlite"], "/srv/m.sqlite"),
        (
            [
                "postgresql://app:s3cret@db:5432/memory",
                "postgresql+psycopg://app:s3cret@db:5432/memory",
                "postgresql+psycopg_async://app:s3cret@db:5432/memory",
            ],
            "postgresql://app:***@db:5432/memory",
        ),
    ],
)
def test_every_driver_of_a_database_gives_one_name_without_its_password(
    urls: list[str], name: str
) -> None:
    assert {database_name(make_url(u)) for u in urls} == {name}
