"""The declarative base every philont model derives from."""

from __future__ import annotations

from sqlalchemy import MetaData, event
from sqlalchemy.orm import DeclarativeBase

from philont.db.cursors import refuse_undecoded_key


class Base(DeclarativeBase):
    """Declarative base; table, column and index names are Philont's own, spelled out."""

    metadata = MetaData()


# A row whose key was stored as text that is not UTF-8 cannot be written through the ORM
# (philont.db.cursors): refused by name before its UPDATE or DELETE, for every model.
for _event in ("before_update", "before_delete"):
    event.listen(Base, _event, refuse_undecoded_key, propagate=True)
