"""The package's public API: what ``import philont`` exports, and what it does not load."""

from __future__ import annotations

import subprocess
import sys

import philont

HEAVY = ("alembic", "typer", "rich", "structlog", "dateutil", "croniter", "mcp", "psycopg")


def test_every_name_in_all_is_exported() -> None:
    for name in philont.__all__:
        assert getattr(philont, name) is not None, name


def test_the_store_the_unit_of_work_and_the_tools_are_public() -> None:
    assert {"Store", "Memory", "tools", "PhilontError", "FactRecord"} <= set(philont.__all__)
    assert philont.tools.call.__module__ == "philont.tools.dispatch"


def test_importing_philont_loads_no_cli_migration_or_tool_libraries() -> None:
    code = (
        "import sys, philont\n"
        f"heavy = {HEAVY!r}\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & set(heavy)))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
