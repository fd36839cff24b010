"""Alembic environment for philont: all the logic (URL resolution, adoption of unversioned
Philont databases, backups, one transaction for the whole chain) lives in philont.migrate."""

from alembic import context

from philont.migrate import run_env

run_env(context)
