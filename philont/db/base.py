"""The declarative base every philont model derives from."""

from __future__ import annotations

from sqlalchemy import MetaData
from sqlalchemy.orm import DeclarativeBase


class Base(DeclarativeBase):
    """Declarative base; table, column and index names are Philont's own, spelled out."""

    metadata = MetaData()
