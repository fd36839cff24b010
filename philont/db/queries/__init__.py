"""Lean reads on the DB-API connection, one module per table, returning named rows.

Hot paths (search, retriever, prefix, append) skip SQLAlchemy's per-statement and per-row
machinery, but not each other's SQL: every such statement lives here, next to the NamedTuple
its rows come back as (``row.created_at``, never ``row[9]``), so a column added or moved breaks
loudly in one place. Statements use the backend's placeholder (``raw.mark``) and id lists
(``raw.in_ids``); nothing rewrites SQL.
"""
