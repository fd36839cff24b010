"""README's one-transaction example (``Store.from_engine`` over a host's engine, joined to the
host's Session) runs as written on a new SQLite file: it said ``Store.from_engine(engine)``,
which refuses a database philont has not migrated (SchemaOutOfDateError)."""

from __future__ import annotations

import re
from pathlib import Path

from sqlalchemy import String, select
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column

from philont.db.engine import create_engine
from philont.store import Store

README = Path(__file__).resolve().parents[2] / "README.md"


class _Base(DeclarativeBase):
    pass


class Customer(_Base):
    """The host's own table."""

    __tablename__ = "customers"
    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(80))


def _example() -> str:
    text = README.read_text(encoding="utf-8")
    start = text.index("- **One transaction for host and philont writes**")
    found = re.search(r"```python\n(.*?)```", text[start:], re.S)
    assert found is not None
    return "\n".join(line.removeprefix("  ") for line in found.group(1).splitlines())


def test_the_one_transaction_example_runs_as_written_on_a_new_file(tmp_path: Path) -> None:
    engine = create_engine(tmp_path / "host.sqlite")
    try:
        _Base.metadata.create_all(engine)
        exec(
            _example(), {"Store": Store, "Session": Session, "Customer": Customer, "engine": engine}
        )
        with Session(engine) as session:
            assert session.scalars(select(Customer.name)).all() == ["Ada"]
        store = Store.from_engine(engine)
        with store.begin(write=False) as mem:
            fact = mem.facts.get("user", "city")
            assert fact is not None and fact.value == "Berlin"
        store.close()
    finally:
        engine.dispose()
