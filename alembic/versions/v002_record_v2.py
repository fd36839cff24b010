"""Philont schema v2: no structural change; only records ``schema_version = 2``.

Mirrors Philont schema version 2. INFERRED: Philont never defined versions 1 and 2 in code and
nothing distinguishes them (spec 2.2, 2.5: every version below 3 takes the same upgrade path).
The v2 shape (see ``v2.sqlite``) is built entirely by v001, so this revision only records the
version, letting a database stamped at schema 2 be adopted at revision ``v002``.

Forward-only: ``downgrade()`` raises NotImplementedError (philont schema history is forward-only).
"""

from __future__ import annotations

from philont import migration_ops as mo

revision = "v002"
down_revision = "v001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    mo.set_schema_version(2)


def downgrade() -> None:
    """Not supported: philont schema history is forward-only."""
    raise NotImplementedError("philont schema history is forward-only")
