"""A small host application: its own models and Alembic history, in philont's database file."""
