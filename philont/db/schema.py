"""The complete metadata: every model plus the FTS5 DDL events (import this, not models alone)."""

from __future__ import annotations

from sqlalchemy import MetaData

import philont.db.fts as fts  # noqa: F401  # registers the FTS5 DDL events
import philont.db.models as models  # noqa: F401  # registers every table
from philont.db.base import Base

metadata: MetaData = Base.metadata
