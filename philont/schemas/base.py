"""Common configuration of read models."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class ReadModel(BaseModel):
    """Immutable read model built from an ORM row inside the transaction. Its numbers are
    finite: a stored infinity (a REAL column holds one; PostgreSQL's NaN too) is no value a
    record can print as JSON, so it fails the record and the read takes the column's default
    instead (:mod:`philont.db.stored_values`)."""

    model_config = ConfigDict(from_attributes=True, frozen=True, allow_inf_nan=False)
