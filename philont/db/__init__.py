"""Storage: SQLAlchemy models, column types, FTS5 DDL and engine set-up."""
