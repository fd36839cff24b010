"""Common configuration of read models."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class ReadModel(BaseModel):
    """Immutable read model built from an ORM row inside the transaction."""

    model_config = ConfigDict(from_attributes=True, frozen=True)
