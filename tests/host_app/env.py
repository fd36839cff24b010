"""The host's Alembic env.py, as the README recommends: philont's chain runs first (its own
version table, its own transaction), then the host's history; the host's autogenerate is told to
leave philont's objects alone. Copied into each test's temporary Alembic directory.

``philont_mode = env`` in the ini runs philont's chain here; ``revision`` leaves it to a host
revision (``philont.migrate.upgrade(op.get_bind())``). On PostgreSQL the URL's search_path
names the schema that holds the host's tables and philont's layout (every agent's memory).
"""

from __future__ import annotations

from alembic import context
from sqlalchemy import create_engine

import philont.migrate
from tests.host_app.models import HostBase

config = context.config
url = config.get_main_option("sqlalchemy.url")
assert url is not None
mode = config.get_main_option("philont_mode", "env")


def run_migrations_online() -> None:
    if mode == "env":
        philont.migrate.upgrade(url)
    engine = create_engine(url)
    try:
        with engine.connect() as connection:
            context.configure(
                connection=connection,
                target_metadata=HostBase.metadata,
                include_name=philont.migrate.host_include_name,
                include_object=philont.migrate.host_include_object,
            )
            with context.begin_transaction():
                context.run_migrations()
    finally:
        engine.dispose()


run_migrations_online()
