"""Models + DDL events and the Alembic chain build the same schema, and it is Philont's."""

from __future__ import annotations

from contextlib import closing
from pathlib import Path

from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext

from philont import migrate, settings
from philont.db.engine import create_engine
from philont.db.schema import metadata
from philont.testing.schema import normalized_schema, schema_diff

# Objects we add after v031 (additive; Philont schema-31 software ignores them).
OUR_ADDITIONS = {
    "tables": {
        "philont_skill_recipes",
        "philont_skill_revisions",
        "philont_learning_batches",
        "philont_cases",
        "philont_judge_verdicts",
        "philont_vector_index",
        "philont_message_vectors",
        "philont_message_codes",
        "philont_note_vectors",
        "philont_skill_vectors",
    },
    "indexes": {
        "idx_philont_skill_revisions_skill",
        "idx_philont_raw_messages_session_time",
        "idx_philont_cases_skill",
        "idx_philont_judge_verdicts_skill",
    },
    "triggers": {
        "philont_raw_messages_words_ai",
        "philont_raw_messages_words_ad",
        "philont_raw_messages_words_au",
        "philont_notes_words_ai",
        "philont_notes_words_ad",
        "philont_notes_words_au",
        "philont_skills_words_ai",
        "philont_skills_words_ad",
        "philont_skills_words_au",
    },
    "virtual_tables": {
        "philont_raw_messages_words_fts",
        "philont_notes_words_fts",
        "philont_skills_words_fts",
        "philont_raw_messages_fts_trigrams",
    },
}
IGNORE = {settings.VERSION_TABLE}


def _create_all(path: Path) -> Path:
    engine = create_engine(path)
    metadata.create_all(engine)
    engine.dispose()
    return path


def test_create_all_and_upgrade_head_build_the_same_schema(tmp_path: Path) -> None:
    a = _create_all(tmp_path / "a.sqlite")
    b = tmp_path / "b.sqlite"
    migrate.upgrade(b)
    diff = schema_diff(
        normalized_schema(a, ignore_tables=IGNORE), normalized_schema(b, ignore_tables=IGNORE)
    )
    assert diff == []


def test_every_object_of_the_original_schema_exists_with_the_same_definition(
    tmp_path: Path, philont_fixtures: Path
) -> None:
    ours = normalized_schema(_create_all(tmp_path / "m.sqlite"), ignore_tables=IGNORE)
    original = normalized_schema(philont_fixtures / "empty-v31.sqlite")
    for section, objects in original.items():
        for name, definition in objects.items():
            assert name in ours[section], f"{section}: {name} missing"
            assert ours[section][name] == definition, f"{section}: {name} differs"
    extra = {s: set(ours[s]) - set(original[s]) for s in ours}
    assert extra == OUR_ADDITIONS


def test_autogenerate_finds_no_difference_between_models_and_migrations(
    tmp_path: Path,
) -> None:
    db = tmp_path / "m.sqlite"
    migrate.upgrade(db)
    engine = create_engine(db)
    with closing(engine.connect()) as conn:
        ctx = MigrationContext.configure(
            conn,
            opts={
                "include_name": migrate.include_name,
                "compare_type": True,
                "version_table": settings.VERSION_TABLE,
            },
        )
        diff = compare_metadata(ctx, metadata)
    engine.dispose()
    assert diff == []


def test_the_revision_chain_has_one_head_at_the_end(tmp_path: Path) -> None:
    script = migrate.script_directory()
    assert len(script.get_heads()) == 1
    revs = [r for r, _doc in migrate.history()]
    philont_chain = [f"v{n:03d}" for n in range(1, 32)]
    assert revs[:31] == philont_chain
    assert revs[-1] == migrate.head_revision()
