"""Our additive tables of optional semantic recall (revision v037): stored vectors and the
record of the model that built them. Philont schema-31 software never reads them."""

from __future__ import annotations

from typing import Any

from sqlalchemy import LargeBinary, Text, text
from sqlalchemy.orm import Mapped, mapped_column

from philont.db.base import Base
from philont.db.types import Int

_DERIVED: Any = {"info": {"derived": True}}
"""Derived data: export leaves these tables out (the target embeds again)."""


class VectorIndex(Base):
    """The one row saying which model and dimension built every stored vector."""

    __tablename__ = "philont_vector_index"
    __table_args__ = _DERIVED

    id: Mapped[int] = mapped_column(Int, primary_key=True, autoincrement=False)
    model_id: Mapped[str] = mapped_column(Text, nullable=False)
    dimension: Mapped[int] = mapped_column(Int, nullable=False)
    generation: Mapped[int] = mapped_column(Int, nullable=False, server_default=text("1"))
    created_at: Mapped[int] = mapped_column(Int, nullable=False)


class MessageVector(Base):
    """A message's unit-length float32 vector."""

    __tablename__ = "philont_message_vectors"
    __table_args__ = _DERIVED

    message_id: Mapped[int] = mapped_column(Int, primary_key=True, autoincrement=False)
    vector: Mapped[bytes] = mapped_column(LargeBinary, nullable=False)


class MessageCode(Base):
    """A message vector's sign bits (the coarse search pass reads only these)."""

    __tablename__ = "philont_message_codes"
    __table_args__ = _DERIVED

    message_id: Mapped[int] = mapped_column(Int, primary_key=True, autoincrement=False)
    code: Mapped[bytes] = mapped_column(LargeBinary, nullable=False)


class NoteVector(Base):
    """A note's vector and the hash of the text it was made from."""

    __tablename__ = "philont_note_vectors"
    __table_args__ = _DERIVED

    note_id: Mapped[str] = mapped_column(Text, primary_key=True)
    text_hash: Mapped[str] = mapped_column(Text, nullable=False)
    vector: Mapped[bytes] = mapped_column(LargeBinary, nullable=False)


class SkillVector(Base):
    """A skill's vector and the hash of the text it was made from."""

    __tablename__ = "philont_skill_vectors"
    __table_args__ = _DERIVED

    skill_id: Mapped[str] = mapped_column(Text, primary_key=True)
    text_hash: Mapped[str] = mapped_column(Text, nullable=False)
    vector: Mapped[bytes] = mapped_column(LargeBinary, nullable=False)
