"""Our own revision: PostgreSQL's shared layout for any number of agents (schema_version 31).

On PostgreSQL the history starts here: a new database is stamped ``v035`` (v001-v035 describe
the SQLite file, one agent per file; ``philont.migrate.postgres``) and this revision builds
one set of tables for every agent, created once per database:

* the agents registry ``philont_agents`` (creating an agent is a row in it) and the per-agent id
  counters ``philont_agent_ids``, with the functions ``philont_agent()`` (the transaction's agent,
  ``set_config('philont.agent_id', ..., true)``), ``philont_current_agent()`` (the same, refusing
  when unset) and ``philont_next_id(table)`` (ids numbered per agent, as SQLite numbers them);
* every model table (v035's learning tables too) with ``agent_id`` leading its primary key,
  unique constraints, foreign keys and indexes, and referencing the registry (``ON DELETE SET
  NULL`` names its own columns, never ``agent_id``: PostgreSQL 15 or later); messages, actions
  and the access log hash-partitioned by ``agent_id`` into 16 partitions;
* the search indexes (GIN over ``agent_id`` and the text, with ``pg_trgm`` and ``btree_gin``);
* row-level security, enabled and forced on every table: a row is seen and written only while its
  agent is the transaction's.

The statements are a frozen copy of ``philont.db.pg_layout.statements()`` at the time of writing;
a parity test builds both and compares the catalogs. On SQLite this revision is a no-op.

Forward-only: ``downgrade()`` raises NotImplementedError (philont schema history is forward-only).
"""

from __future__ import annotations

from alembic import op

from philont import migration_ops as mo

revision = "v036"
down_revision = "v035"
branch_labels = None
depends_on = None
backends = ("postgresql",)
"""The backends this revision changes; on SQLite it does nothing (``heads_for``)."""

STATEMENTS = (
    "CREATE EXTENSION IF NOT EXISTS pg_trgm WITH SCHEMA public",
    "CREATE EXTENSION IF NOT EXISTS btree_gin WITH SCHEMA public",
    (
        "CREATE TABLE philont_agents ( id BIGINT GENERATED ALWAYS AS IDENTITY, name TEXT NOT "
        "NULL, created_at BIGINT NOT NULL, PRIMARY KEY (id), UNIQUE (name) )"
    ),
    (
        "CREATE TABLE philont_agent_ids ( agent_id BIGINT NOT NULL, name TEXT NOT NULL, "
        "last_value BIGINT NOT NULL, PRIMARY KEY (agent_id, name), FOREIGN KEY(agent_id) "
        "REFERENCES philont_agents (id) )"
    ),
    (
        "CREATE OR REPLACE FUNCTION philont_agent() RETURNS bigint LANGUAGE sql STABLE AS $$ "
        "SELECT NULLIF(current_setting('philont.agent_id', true), '')::bigint $$"
    ),
    (
        "CREATE OR REPLACE FUNCTION philont_current_agent() RETURNS bigint LANGUAGE plpgsql "
        "STABLE AS $$ BEGIN IF philont_agent() IS NULL THEN RAISE EXCEPTION 'philont: no "
        "agent is set for this transaction (philont.agent_id)' USING ERRCODE = '42501'; END "
        "IF; RETURN philont_agent(); END $$"
    ),
    (
        "CREATE OR REPLACE FUNCTION philont_next_id(counter text) RETURNS bigint LANGUAGE sql"
        " VOLATILE SET search_path FROM CURRENT AS $$ INSERT INTO philont_agent_ids AS c "
        "(agent_id, name, last_value) VALUES (philont_current_agent(), counter, 1) ON "
        "CONFLICT (agent_id, name) DO UPDATE SET last_value = c.last_value + 1 RETURNING "
        "c.last_value $$"
    ),
    (
        "CREATE TABLE autonomous_budget ( agent_id BIGINT DEFAULT philont_current_agent() NOT"
        " NULL, user_id TEXT NOT NULL, date TEXT NOT NULL, llm_tokens_used BIGINT DEFAULT 0 "
        "NOT NULL, tool_calls_used BIGINT DEFAULT 0 NOT NULL, initiatives_run BIGINT DEFAULT "
        "0 NOT NULL, PRIMARY KEY (agent_id, user_id, date), FOREIGN KEY(agent_id) REFERENCES "
        "philont_agents (id) )"
    ),
    (
        "CREATE TABLE config_rules ( agent_id BIGINT DEFAULT philont_current_agent() NOT "
        "NULL, id BIGINT DEFAULT philont_next_id('config_rules') NOT NULL, scope TEXT NOT "
        "NULL, key TEXT, value_json TEXT NOT NULL, source TEXT NOT NULL, confidence TEXT "
        "DEFAULT 'provisional' NOT NULL, evidence TEXT, audit_ref TEXT, success_count BIGINT "
        "DEFAULT 0 NOT NULL, failure_count BIGINT DEFAULT 0 NOT NULL, consecutive_successes "
        "BIGINT DEFAULT 0 NOT NULL, consecutive_failures BIGINT DEFAULT 0 NOT NULL, "
        "created_at BIGINT NOT NULL, updated_at BIGINT NOT NULL, PRIMARY KEY (agent_id, id), "
        "FOREIGN KEY(agent_id) REFERENCES philont_agents (id) )"
    ),
    (
        "CREATE INDEX idx_config_rules_decay ON config_rules (agent_id, updated_at) WHERE "
        "confidence != 'retired'"
    ),
    (
        "CREATE INDEX idx_config_rules_scope_active ON config_rules (agent_id, scope, "
        "confidence) WHERE confidence NOT IN ('retired', 'disputed')"
    ),
    "CREATE INDEX idx_config_rules_scope_all ON config_rules (agent_id, scope, updated_at)",
    (
        "CREATE TABLE memory_access_log ( agent_id BIGINT DEFAULT philont_current_agent() NOT"
        " NULL, id BIGINT DEFAULT philont_next_id('memory_access_log') NOT NULL, target_type "
        "TEXT NOT NULL, target_id TEXT NOT NULL, accessed_at BIGINT NOT NULL, context TEXT, "
        "root_pursuit_id TEXT, PRIMARY KEY (agent_id, id), FOREIGN KEY(agent_id) REFERENCES "
        "philont_agents (id) ) PARTITION BY HASH (agent_id)"
    ),
    (
        "CREATE TABLE memory_access_log_p00 PARTITION OF memory_access_log FOR VALUES WITH "
        "(MODULUS 16, REMAINDER 0)"
    ),
    (
        "CREATE TABLE memory_access_log_p01 PARTITION OF memory_access_log FOR VALUES WITH "
        "(MODULUS 16, REMAINDER 1)"
    ),
    (
        "CREATE TABLE memory_access_log_p02 PARTITION OF memory_access_log FOR VALUES WITH "
        "(MODULUS 16, REMAINDER 2)"
    ),
    (
        "CREATE TABLE memory_access_log_p03 PARTITION OF memory_access_log FOR VALUES WITH "
        "(MODULUS 16, REMAINDER 3)"
    ),
    (
        "CREATE TABLE memory_access_log_p04 PARTITION OF memory_access_log FOR VALUES WITH "
        "(MODULUS 16, REMAINDER 4)"
    ),
    (
        "CREATE TABLE memory_access_log_p05 PARTITION OF memory_access_log FOR VALUES WITH "
        "(MODULUS 16, REMAINDER 5)"
    ),
    (
        "CREATE TABLE memory_access_log_p06 PARTITION OF memory_access_log FOR VALUES WITH "
        "(MODULUS 16, REMAINDER 6)"
    ),
    (
        "CREATE TABLE memory_access_log_p07 PARTITION OF memory_access_log FOR VALUES WITH "
        "(MODULUS 16, REMAINDER 7)"
    ),
    (
        "CREATE TABLE memory_access_log_p08 PARTITION OF memory_access_log FOR VALUES WITH "
        "(MODULUS 16, REMAINDER 8)"
    ),
    (
        "CREATE TABLE memory_access_log_p09 PARTITION OF memory_access_log FOR VALUES WITH "
        "(MODULUS 16, REMAINDER 9)"
    ),
    (
        "CREATE TABLE memory_access_log_p10 PARTITION OF memory_access_log FOR VALUES WITH "
        "(MODULUS 16, REMAINDER 10)"
    ),
    (
        "CREATE TABLE memory_access_log_p11 PARTITION OF memory_access_log FOR VALUES WITH "
        "(MODULUS 16, REMAINDER 11)"
    ),
    (
        "CREATE TABLE memory_access_log_p12 PARTITION OF memory_access_log FOR VALUES WITH "
        "(MODULUS 16, REMAINDER 12)"
    ),
    (
        "CREATE TABLE memory_access_log_p13 PARTITION OF memory_access_log FOR VALUES WITH "
        "(MODULUS 16, REMAINDER 13)"
    ),
    (
        "CREATE TABLE memory_access_log_p14 PARTITION OF memory_access_log FOR VALUES WITH "
        "(MODULUS 16, REMAINDER 14)"
    ),
    (
        "CREATE TABLE memory_access_log_p15 PARTITION OF memory_access_log FOR VALUES WITH "
        "(MODULUS 16, REMAINDER 15)"
    ),
    "CREATE INDEX idx_access_target ON memory_access_log (agent_id, target_type, target_id)",
    "CREATE INDEX idx_access_time ON memory_access_log (agent_id, accessed_at)",
    (
        "CREATE TABLE memory_actions ( agent_id BIGINT DEFAULT philont_current_agent() NOT "
        "NULL, id BIGINT DEFAULT philont_next_id('memory_actions') NOT NULL, session_id TEXT "
        "NOT NULL, trigger TEXT, tool_name TEXT NOT NULL, params_json TEXT NOT NULL, result "
        "TEXT, success BIGINT NOT NULL, timestamp BIGINT NOT NULL, linked_skill TEXT, PRIMARY"
        " KEY (agent_id, id), FOREIGN KEY(agent_id) REFERENCES philont_agents (id) ) "
        "PARTITION BY HASH (agent_id)"
    ),
    (
        "CREATE TABLE memory_actions_p00 PARTITION OF memory_actions FOR VALUES WITH (MODULUS"
        " 16, REMAINDER 0)"
    ),
    (
        "CREATE TABLE memory_actions_p01 PARTITION OF memory_actions FOR VALUES WITH (MODULUS"
        " 16, REMAINDER 1)"
    ),
    (
        "CREATE TABLE memory_actions_p02 PARTITION OF memory_actions FOR VALUES WITH (MODULUS"
        " 16, REMAINDER 2)"
    ),
    (
        "CREATE TABLE memory_actions_p03 PARTITION OF memory_actions FOR VALUES WITH (MODULUS"
        " 16, REMAINDER 3)"
    ),
    (
        "CREATE TABLE memory_actions_p04 PARTITION OF memory_actions FOR VALUES WITH (MODULUS"
        " 16, REMAINDER 4)"
    ),
    (
        "CREATE TABLE memory_actions_p05 PARTITION OF memory_actions FOR VALUES WITH (MODULUS"
        " 16, REMAINDER 5)"
    ),
    (
        "CREATE TABLE memory_actions_p06 PARTITION OF memory_actions FOR VALUES WITH (MODULUS"
        " 16, REMAINDER 6)"
    ),
    (
        "CREATE TABLE memory_actions_p07 PARTITION OF memory_actions FOR VALUES WITH (MODULUS"
        " 16, REMAINDER 7)"
    ),
    (
        "CREATE TABLE memory_actions_p08 PARTITION OF memory_actions FOR VALUES WITH (MODULUS"
        " 16, REMAINDER 8)"
    ),
    (
        "CREATE TABLE memory_actions_p09 PARTITION OF memory_actions FOR VALUES WITH (MODULUS"
        " 16, REMAINDER 9)"
    ),
    (
        "CREATE TABLE memory_actions_p10 PARTITION OF memory_actions FOR VALUES WITH (MODULUS"
        " 16, REMAINDER 10)"
    ),
    (
        "CREATE TABLE memory_actions_p11 PARTITION OF memory_actions FOR VALUES WITH (MODULUS"
        " 16, REMAINDER 11)"
    ),
    (
        "CREATE TABLE memory_actions_p12 PARTITION OF memory_actions FOR VALUES WITH (MODULUS"
        " 16, REMAINDER 12)"
    ),
    (
        "CREATE TABLE memory_actions_p13 PARTITION OF memory_actions FOR VALUES WITH (MODULUS"
        " 16, REMAINDER 13)"
    ),
    (
        "CREATE TABLE memory_actions_p14 PARTITION OF memory_actions FOR VALUES WITH (MODULUS"
        " 16, REMAINDER 14)"
    ),
    (
        "CREATE TABLE memory_actions_p15 PARTITION OF memory_actions FOR VALUES WITH (MODULUS"
        " 16, REMAINDER 15)"
    ),
    "CREATE INDEX idx_actions_session ON memory_actions (agent_id, session_id)",
    (
        "CREATE INDEX idx_actions_skill ON memory_actions (agent_id, linked_skill) WHERE "
        "linked_skill IS NOT NULL"
    ),
    "CREATE INDEX idx_actions_timestamp ON memory_actions (agent_id, timestamp)",
    "CREATE INDEX idx_actions_tool ON memory_actions (agent_id, tool_name)",
    (
        "CREATE TABLE memory_calendar ( agent_id BIGINT DEFAULT philont_current_agent() NOT "
        "NULL, id TEXT NOT NULL, title TEXT NOT NULL, starts_at BIGINT NOT NULL, ends_at "
        "BIGINT, rrule TEXT, timezone TEXT NOT NULL, related_fact_id TEXT, external_ref TEXT,"
        " created_at BIGINT NOT NULL, root_pursuit_id TEXT, PRIMARY KEY (agent_id, id), "
        "FOREIGN KEY(agent_id) REFERENCES philont_agents (id) )"
    ),
    (
        "CREATE INDEX idx_calendar_external ON memory_calendar (agent_id, external_ref) WHERE"
        " external_ref IS NOT NULL"
    ),
    (
        "CREATE INDEX idx_calendar_fact ON memory_calendar (agent_id, related_fact_id) WHERE "
        "related_fact_id IS NOT NULL"
    ),
    "CREATE INDEX idx_calendar_starts ON memory_calendar (agent_id, starts_at)",
    (
        "CREATE TABLE memory_drive_configs ( agent_id BIGINT DEFAULT philont_current_agent() "
        "NOT NULL, id TEXT NOT NULL, kind TEXT NOT NULL, status TEXT DEFAULT 'shadow' NOT "
        "NULL, trigger_expr_json TEXT NOT NULL, action_template_json TEXT NOT NULL, "
        "params_json TEXT DEFAULT '{}' NOT NULL, effectiveness_json TEXT DEFAULT "
        '\'{"samples":0,"ewma":0,"lastFired":null}\' NOT NULL, root_pursuit_id TEXT NOT NULL, '
        "created_at BIGINT NOT NULL, updated_at BIGINT NOT NULL, PRIMARY KEY (agent_id, id), "
        "FOREIGN KEY(agent_id) REFERENCES philont_agents (id) )"
    ),
    "CREATE INDEX idx_drive_configs_kind ON memory_drive_configs (agent_id, kind)",
    "CREATE INDEX idx_drive_configs_root ON memory_drive_configs (agent_id, root_pursuit_id)",
    "CREATE INDEX idx_drive_configs_status ON memory_drive_configs (agent_id, status)",
    (
        "CREATE TABLE memory_drive_outcomes ( agent_id BIGINT DEFAULT philont_current_agent()"
        " NOT NULL, id TEXT NOT NULL, drive_id TEXT NOT NULL, fired_at BIGINT NOT NULL, "
        "trigger_snapshot_json TEXT NOT NULL, injected_action_json TEXT NOT NULL, "
        "subsequent_tool_calls_json TEXT DEFAULT '[]' NOT NULL, memory_delta_json TEXT "
        "DEFAULT '{}' NOT NULL, served_pursuit_id TEXT, effectiveness_score DOUBLE PRECISION,"
        " root_pursuit_id TEXT NOT NULL, PRIMARY KEY (agent_id, id), FOREIGN KEY(agent_id) "
        "REFERENCES philont_agents (id) )"
    ),
    "CREATE INDEX idx_drive_outcomes_drive ON memory_drive_outcomes (agent_id, drive_id)",
    "CREATE INDEX idx_drive_outcomes_fired ON memory_drive_outcomes (agent_id, fired_at)",
    (
        "CREATE INDEX idx_drive_outcomes_pursuit ON memory_drive_outcomes (agent_id, "
        "served_pursuit_id) WHERE served_pursuit_id IS NOT NULL"
    ),
    ("CREATE INDEX idx_drive_outcomes_root ON memory_drive_outcomes (agent_id, root_pursuit_id)"),
    (
        "CREATE TABLE memory_facts ( agent_id BIGINT DEFAULT philont_current_agent() NOT "
        "NULL, id TEXT NOT NULL, namespace TEXT NOT NULL, key TEXT NOT NULL, value_json TEXT "
        "NOT NULL, confidence DOUBLE PRECISION DEFAULT 1.0 NOT NULL, superseded_by TEXT, "
        "supersedes TEXT, created_at BIGINT NOT NULL, occurred_at BIGINT, valid_from BIGINT, "
        "valid_until BIGINT, last_accessed_at BIGINT, decay_tau_days DOUBLE PRECISION, "
        "forgotten_at BIGINT, fact_kind TEXT DEFAULT 'state' NOT NULL, root_pursuit_id TEXT, "
        "PRIMARY KEY (agent_id, id), FOREIGN KEY(agent_id) REFERENCES philont_agents (id) )"
    ),
    (
        "CREATE INDEX idx_facts_active ON memory_facts (agent_id, namespace, key) WHERE "
        "superseded_by IS NULL AND forgotten_at IS NULL"
    ),
    "CREATE INDEX idx_facts_namespace ON memory_facts (agent_id, namespace)",
    "CREATE INDEX idx_facts_ns_key ON memory_facts (agent_id, namespace, key)",
    (
        "CREATE INDEX idx_facts_validity ON memory_facts (agent_id, valid_until) WHERE "
        "forgotten_at IS NULL"
    ),
    (
        "CREATE TABLE memory_initiatives ( agent_id BIGINT DEFAULT philont_current_agent() "
        "NOT NULL, id TEXT NOT NULL, kind TEXT NOT NULL, driver TEXT NOT NULL, target_ref "
        "TEXT NOT NULL, rationale TEXT NOT NULL, utility DOUBLE PRECISION NOT NULL, status "
        "TEXT DEFAULT 'pending' NOT NULL, budget_estimate BIGINT NOT NULL, budget_actual "
        "BIGINT, outcome_summary TEXT, outcome_refs TEXT, error TEXT, created_at BIGINT NOT "
        "NULL, started_at BIGINT, completed_at BIGINT, PRIMARY KEY (agent_id, id), FOREIGN "
        "KEY(agent_id) REFERENCES philont_agents (id) )"
    ),
    ("CREATE INDEX idx_initiatives_driver ON memory_initiatives (agent_id, driver, completed_at)"),
    ("CREATE INDEX idx_initiatives_status ON memory_initiatives (agent_id, status, created_at)"),
    (
        "CREATE INDEX idx_initiatives_target_recent ON memory_initiatives (agent_id, "
        "target_ref, completed_at) WHERE status = 'done'"
    ),
    (
        "CREATE TABLE memory_meta ( agent_id BIGINT DEFAULT philont_current_agent() NOT NULL,"
        " key TEXT NOT NULL, value TEXT NOT NULL, PRIMARY KEY (agent_id, key), FOREIGN "
        "KEY(agent_id) REFERENCES philont_agents (id) )"
    ),
    (
        "CREATE TABLE memory_notes ( agent_id BIGINT DEFAULT philont_current_agent() NOT "
        "NULL, id TEXT NOT NULL, content TEXT NOT NULL, importance DOUBLE PRECISION DEFAULT "
        "0.5 NOT NULL, session_id TEXT, created_at BIGINT NOT NULL, last_accessed_at BIGINT, "
        "forgotten_at BIGINT, root_pursuit_id TEXT, PRIMARY KEY (agent_id, id), FOREIGN "
        "KEY(agent_id) REFERENCES philont_agents (id) )"
    ),
    (
        "CREATE INDEX idx_notes_active ON memory_notes (agent_id, importance DESC) WHERE "
        "forgotten_at IS NULL"
    ),
    "CREATE INDEX idx_notes_importance ON memory_notes (agent_id, importance DESC)",
    "CREATE INDEX idx_notes_session ON memory_notes (agent_id, session_id)",
    (
        "CREATE TABLE memory_plans ( agent_id BIGINT DEFAULT philont_current_agent() NOT "
        "NULL, id TEXT NOT NULL, session_id TEXT NOT NULL, task_signature TEXT, steps_json "
        "TEXT DEFAULT '[]' NOT NULL, status TEXT DEFAULT 'draft' NOT NULL, "
        "review_history_json TEXT DEFAULT '[]' NOT NULL, guide_ref TEXT, outcome_summary "
        "TEXT, created_at BIGINT NOT NULL, updated_at BIGINT NOT NULL, completed_at BIGINT, "
        "inner_iter BIGINT DEFAULT 0 NOT NULL, outer_iter BIGINT DEFAULT 0 NOT NULL, "
        "deliverables_json TEXT DEFAULT '[]' NOT NULL, deliverable_status_json TEXT, "
        "is_placeholder BIGINT DEFAULT 0 NOT NULL, persisted_to TEXT, PRIMARY KEY (agent_id, "
        "id), FOREIGN KEY(agent_id) REFERENCES philont_agents (id) )"
    ),
    "CREATE INDEX idx_plans_session ON memory_plans (agent_id, session_id, created_at)",
    (
        "CREATE INDEX idx_plans_signature ON memory_plans (agent_id, task_signature, "
        "created_at) WHERE task_signature IS NOT NULL"
    ),
    "CREATE INDEX idx_plans_status ON memory_plans (agent_id, status, updated_at)",
    (
        "CREATE TABLE memory_pursuits ( agent_id BIGINT DEFAULT philont_current_agent() NOT "
        "NULL, id TEXT NOT NULL, parent_pursuit_id TEXT, root_pursuit_id TEXT NOT NULL, title"
        " TEXT NOT NULL, intent TEXT NOT NULL, status TEXT DEFAULT 'active' NOT NULL, "
        "is_evergreen BIGINT DEFAULT 0 NOT NULL, stake TEXT DEFAULT 'medium' NOT NULL, "
        "deadline BIGINT, origin TEXT NOT NULL, open_questions_json TEXT DEFAULT '[]' NOT "
        "NULL, resolution_criteria TEXT, evidence_refs_json TEXT DEFAULT '[]' NOT NULL, "
        "progress_markers_json TEXT DEFAULT '[]' NOT NULL, last_progress_turn BIGINT DEFAULT "
        "0 NOT NULL, constitution_values TEXT, constitution_red_lines TEXT, "
        "constitution_drive_bounds TEXT, constitution_governance TEXT, last_touched_ts "
        "BIGINT, stake_weight BIGINT DEFAULT 5 NOT NULL, is_active_research BIGINT DEFAULT 0 "
        "NOT NULL, research_iterations BIGINT DEFAULT 0 NOT NULL, created_at BIGINT NOT NULL,"
        " updated_at BIGINT NOT NULL, PRIMARY KEY (agent_id, id), FOREIGN KEY(agent_id) "
        "REFERENCES philont_agents (id) )"
    ),
    "CREATE INDEX idx_pursuits_parent ON memory_pursuits (agent_id, parent_pursuit_id)",
    "CREATE INDEX idx_pursuits_root ON memory_pursuits (agent_id, root_pursuit_id)",
    "CREATE INDEX idx_pursuits_status ON memory_pursuits (agent_id, status)",
    (
        "CREATE TABLE memory_raw_sessions ( agent_id BIGINT DEFAULT philont_current_agent() "
        "NOT NULL, id TEXT NOT NULL, started_at BIGINT NOT NULL, ended_at BIGINT, PRIMARY KEY"
        " (agent_id, id), FOREIGN KEY(agent_id) REFERENCES philont_agents (id) )"
    ),
    (
        "CREATE TABLE memory_schedules ( agent_id BIGINT DEFAULT philont_current_agent() NOT "
        "NULL, id TEXT NOT NULL, name TEXT NOT NULL, cron_expr TEXT, next_run_at BIGINT NOT "
        "NULL, last_run_at BIGINT, action_type TEXT NOT NULL, payload_json TEXT NOT NULL, "
        "enabled BIGINT DEFAULT 1 NOT NULL, created_at BIGINT NOT NULL, created_by TEXT "
        "DEFAULT 'llm_external' NOT NULL, consecutive_failures BIGINT DEFAULT 0 NOT NULL, "
        "paused_until BIGINT, project TEXT, root_pursuit_id TEXT, PRIMARY KEY (agent_id, id),"
        " FOREIGN KEY(agent_id) REFERENCES philont_agents (id) )"
    ),
    (
        "CREATE INDEX idx_schedules_next_run ON memory_schedules (agent_id, next_run_at) "
        "WHERE enabled = 1"
    ),
    (
        "CREATE TABLE memory_skills ( agent_id BIGINT DEFAULT philont_current_agent() NOT "
        "NULL, id TEXT NOT NULL, name TEXT NOT NULL, description TEXT NOT NULL, "
        "trigger_keywords TEXT NOT NULL, action_template TEXT NOT NULL, use_count BIGINT "
        "DEFAULT 0 NOT NULL, last_used_at BIGINT, created_at BIGINT NOT NULL, success_count "
        "BIGINT DEFAULT 0 NOT NULL, failure_count BIGINT DEFAULT 0 NOT NULL, last_failure_at "
        "BIGINT, kind TEXT DEFAULT 'positive' NOT NULL, source TEXT, root_pursuit_id TEXT, "
        "maturity TEXT DEFAULT 'draft' NOT NULL, last_success_at BIGINT, consecutive_failures"
        " BIGINT DEFAULT 0 NOT NULL, when_to_use TEXT, PRIMARY KEY (agent_id, id), FOREIGN "
        "KEY(agent_id) REFERENCES philont_agents (id), UNIQUE (agent_id, name) )"
    ),
    "CREATE INDEX idx_skills_name ON memory_skills (agent_id, name)",
    "CREATE INDEX idx_skills_use_count ON memory_skills (agent_id, use_count DESC)",
    (
        "CREATE TABLE philont_learning_batches ( agent_id BIGINT DEFAULT "
        "philont_current_agent() NOT NULL, id BIGINT DEFAULT "
        "philont_next_id('philont_learning_batches') NOT NULL, after_ts BIGINT NOT NULL, "
        "until_ts BIGINT NOT NULL, message_count BIGINT DEFAULT 0 NOT NULL, status TEXT NOT "
        "NULL, owner TEXT, attempts BIGINT DEFAULT 0 NOT NULL, claimed_at BIGINT, lease_until"
        " BIGINT, retry_at BIGINT, finished_at BIGINT, tokens_used BIGINT DEFAULT 0 NOT NULL,"
        " last_error TEXT, report_json TEXT, PRIMARY KEY (agent_id, id), FOREIGN "
        "KEY(agent_id) REFERENCES philont_agents (id), UNIQUE (agent_id, after_ts) )"
    ),
    (
        "CREATE TABLE push_subscriptions ( agent_id BIGINT DEFAULT philont_current_agent() "
        "NOT NULL, channel TEXT NOT NULL, peer TEXT NOT NULL, enabled BIGINT DEFAULT 1 NOT "
        "NULL, quiet_start_hour BIGINT, quiet_end_hour BIGINT, timezone TEXT, "
        "digest_min_interval_ms BIGINT DEFAULT 14400000 NOT NULL, urgent_min_interval_ms "
        "BIGINT DEFAULT 3600000 NOT NULL, last_digest_at BIGINT, last_urgent_at BIGINT, "
        "created_at BIGINT NOT NULL, updated_at BIGINT NOT NULL, PRIMARY KEY (agent_id, "
        "channel, peer), FOREIGN KEY(agent_id) REFERENCES philont_agents (id) )"
    ),
    (
        "CREATE INDEX idx_push_sub_enabled ON push_subscriptions (agent_id, enabled, channel)"
        " WHERE enabled = 1"
    ),
    (
        "CREATE TABLE reasoning_nodes ( agent_id BIGINT DEFAULT philont_current_agent() NOT "
        "NULL, id TEXT NOT NULL, session_id TEXT NOT NULL, parent_id TEXT, claim TEXT NOT "
        "NULL, kind TEXT NOT NULL, status TEXT DEFAULT 'open' NOT NULL, result TEXT, "
        "approaches_tried_json TEXT, evidence_refs_json TEXT, depth BIGINT DEFAULT 0 NOT "
        "NULL, created_at BIGINT NOT NULL, updated_at BIGINT NOT NULL, value DOUBLE "
        "PRECISION, visits BIGINT DEFAULT 0 NOT NULL, technique TEXT, PRIMARY KEY (agent_id, "
        "id), FOREIGN KEY(agent_id) REFERENCES philont_agents (id) )"
    ),
    ("CREATE INDEX idx_reasoning_nodes_session ON reasoning_nodes (agent_id, session_id, status)"),
    (
        "CREATE TABLE reasoning_sessions ( agent_id BIGINT DEFAULT philont_current_agent() "
        "NOT NULL, id TEXT NOT NULL, goal TEXT NOT NULL, assumptions_json TEXT, status TEXT "
        "DEFAULT 'active' NOT NULL, owner_session_id TEXT, root_node_id TEXT, budget_spent "
        "BIGINT DEFAULT 0 NOT NULL, no_progress_rounds BIGINT DEFAULT 0 NOT NULL, "
        "auto_advance BIGINT DEFAULT 0 NOT NULL, mode TEXT DEFAULT 'formal' NOT NULL, "
        "created_at BIGINT NOT NULL, updated_at BIGINT NOT NULL, PRIMARY KEY (agent_id, id), "
        "FOREIGN KEY(agent_id) REFERENCES philont_agents (id) )"
    ),
    (
        "CREATE INDEX idx_reasoning_sessions_status ON reasoning_sessions (agent_id, status, "
        "updated_at)"
    ),
    (
        "CREATE TABLE routing_rules ( agent_id BIGINT DEFAULT philont_current_agent() NOT "
        "NULL, id BIGINT DEFAULT philont_next_id('routing_rules') NOT NULL, task_signature "
        "TEXT NOT NULL, trigger_condition TEXT NOT NULL, prefer_skill TEXT, avoid_skills "
        "TEXT, carveout TEXT NOT NULL, evidence TEXT NOT NULL, confidence TEXT DEFAULT "
        "'provisional' NOT NULL, success_count BIGINT DEFAULT 0 NOT NULL, failure_count "
        "BIGINT DEFAULT 0 NOT NULL, consecutive_successes BIGINT DEFAULT 0 NOT NULL, "
        "consecutive_failures BIGINT DEFAULT 0 NOT NULL, context_keywords TEXT, reflection_id"
        " TEXT, created_at BIGINT NOT NULL, updated_at BIGINT NOT NULL, PRIMARY KEY "
        "(agent_id, id), FOREIGN KEY(agent_id) REFERENCES philont_agents (id) )"
    ),
    "CREATE INDEX idx_rr_confidence ON routing_rules (agent_id, confidence)",
    "CREATE INDEX idx_rr_prefer_skill ON routing_rules (agent_id, prefer_skill)",
    "CREATE INDEX idx_rr_signature ON routing_rules (agent_id, task_signature)",
    (
        "CREATE TABLE schedule_outcomes ( agent_id BIGINT DEFAULT philont_current_agent() NOT"
        " NULL, id TEXT NOT NULL, schedule_id TEXT NOT NULL, fired_at BIGINT NOT NULL, "
        "duration_ms BIGINT NOT NULL, outcome TEXT NOT NULL, http_ok_count BIGINT DEFAULT 0 "
        "NOT NULL, http_fail_count BIGINT DEFAULT 0 NOT NULL, http_status_json TEXT DEFAULT "
        "'{}' NOT NULL, failure_signatures TEXT DEFAULT '[]' NOT NULL, text_summary TEXT NOT "
        "NULL, created_at BIGINT NOT NULL, PRIMARY KEY (agent_id, id), FOREIGN KEY(agent_id) "
        "REFERENCES philont_agents (id) )"
    ),
    (
        "CREATE INDEX idx_schedule_outcomes_sid_time ON schedule_outcomes (agent_id, "
        "schedule_id, fired_at DESC)"
    ),
    (
        "CREATE TABLE memory_raw_messages ( agent_id BIGINT DEFAULT philont_current_agent() "
        "NOT NULL, id BIGINT DEFAULT philont_next_id('memory_raw_messages') NOT NULL, "
        "session_id TEXT NOT NULL, role TEXT NOT NULL, content TEXT NOT NULL, timestamp "
        "BIGINT NOT NULL, PRIMARY KEY (agent_id, id), FOREIGN KEY(agent_id) REFERENCES "
        "philont_agents (id), FOREIGN KEY(agent_id, session_id) REFERENCES "
        "memory_raw_sessions (agent_id, id) ) PARTITION BY HASH (agent_id)"
    ),
    (
        "CREATE TABLE memory_raw_messages_p00 PARTITION OF memory_raw_messages FOR VALUES "
        "WITH (MODULUS 16, REMAINDER 0)"
    ),
    (
        "CREATE TABLE memory_raw_messages_p01 PARTITION OF memory_raw_messages FOR VALUES "
        "WITH (MODULUS 16, REMAINDER 1)"
    ),
    (
        "CREATE TABLE memory_raw_messages_p02 PARTITION OF memory_raw_messages FOR VALUES "
        "WITH (MODULUS 16, REMAINDER 2)"
    ),
    (
        "CREATE TABLE memory_raw_messages_p03 PARTITION OF memory_raw_messages FOR VALUES "
        "WITH (MODULUS 16, REMAINDER 3)"
    ),
    (
        "CREATE TABLE memory_raw_messages_p04 PARTITION OF memory_raw_messages FOR VALUES "
        "WITH (MODULUS 16, REMAINDER 4)"
    ),
    (
        "CREATE TABLE memory_raw_messages_p05 PARTITION OF memory_raw_messages FOR VALUES "
        "WITH (MODULUS 16, REMAINDER 5)"
    ),
    (
        "CREATE TABLE memory_raw_messages_p06 PARTITION OF memory_raw_messages FOR VALUES "
        "WITH (MODULUS 16, REMAINDER 6)"
    ),
    (
        "CREATE TABLE memory_raw_messages_p07 PARTITION OF memory_raw_messages FOR VALUES "
        "WITH (MODULUS 16, REMAINDER 7)"
    ),
    (
        "CREATE TABLE memory_raw_messages_p08 PARTITION OF memory_raw_messages FOR VALUES "
        "WITH (MODULUS 16, REMAINDER 8)"
    ),
    (
        "CREATE TABLE memory_raw_messages_p09 PARTITION OF memory_raw_messages FOR VALUES "
        "WITH (MODULUS 16, REMAINDER 9)"
    ),
    (
        "CREATE TABLE memory_raw_messages_p10 PARTITION OF memory_raw_messages FOR VALUES "
        "WITH (MODULUS 16, REMAINDER 10)"
    ),
    (
        "CREATE TABLE memory_raw_messages_p11 PARTITION OF memory_raw_messages FOR VALUES "
        "WITH (MODULUS 16, REMAINDER 11)"
    ),
    (
        "CREATE TABLE memory_raw_messages_p12 PARTITION OF memory_raw_messages FOR VALUES "
        "WITH (MODULUS 16, REMAINDER 12)"
    ),
    (
        "CREATE TABLE memory_raw_messages_p13 PARTITION OF memory_raw_messages FOR VALUES "
        "WITH (MODULUS 16, REMAINDER 13)"
    ),
    (
        "CREATE TABLE memory_raw_messages_p14 PARTITION OF memory_raw_messages FOR VALUES "
        "WITH (MODULUS 16, REMAINDER 14)"
    ),
    (
        "CREATE TABLE memory_raw_messages_p15 PARTITION OF memory_raw_messages FOR VALUES "
        "WITH (MODULUS 16, REMAINDER 15)"
    ),
    (
        "CREATE INDEX idx_philont_raw_messages_session_time ON memory_raw_messages (agent_id,"
        " session_id, timestamp)"
    ),
    "CREATE INDEX idx_raw_messages_session ON memory_raw_messages (agent_id, session_id)",
    "CREATE INDEX idx_raw_messages_timestamp ON memory_raw_messages (agent_id, timestamp)",
    (
        "CREATE TABLE philont_cases ( agent_id BIGINT DEFAULT philont_current_agent() NOT "
        "NULL, id TEXT NOT NULL, goal TEXT NOT NULL, trace_json TEXT NOT NULL, result TEXT "
        "NOT NULL, session_id TEXT, judge TEXT, reason TEXT, skill_id TEXT, created_at BIGINT"
        " NOT NULL, condensed_at BIGINT, condense_note TEXT, PRIMARY KEY (agent_id, id), "
        "FOREIGN KEY(agent_id) REFERENCES philont_agents (id), FOREIGN KEY(agent_id, "
        "skill_id) REFERENCES memory_skills (agent_id, id) ON DELETE SET NULL (skill_id) )"
    ),
    "CREATE INDEX idx_philont_cases_skill ON philont_cases (agent_id, skill_id)",
    (
        "CREATE TABLE philont_skill_recipes ( agent_id BIGINT DEFAULT philont_current_agent()"
        " NOT NULL, skill_id TEXT NOT NULL, steps_json TEXT DEFAULT '[]' NOT NULL, "
        "verification TEXT, tool_policy_json TEXT DEFAULT '[]' NOT NULL, revision BIGINT "
        "DEFAULT 1 NOT NULL, grade_anchor_at BIGINT, updated_at BIGINT NOT NULL, PRIMARY KEY "
        "(agent_id, skill_id), FOREIGN KEY(agent_id) REFERENCES philont_agents (id), FOREIGN "
        "KEY(agent_id, skill_id) REFERENCES memory_skills (agent_id, id) ON DELETE CASCADE )"
    ),
    (
        "CREATE TABLE philont_skill_revisions ( agent_id BIGINT DEFAULT "
        "philont_current_agent() NOT NULL, id BIGINT DEFAULT "
        "philont_next_id('philont_skill_revisions') NOT NULL, skill_id TEXT NOT NULL, "
        "revision BIGINT NOT NULL, description TEXT NOT NULL, action_template TEXT NOT NULL, "
        "trigger_keywords TEXT NOT NULL, steps_json TEXT NOT NULL, verification TEXT, "
        "tool_policy_json TEXT NOT NULL, success_count BIGINT DEFAULT 0 NOT NULL, "
        "failure_count BIGINT DEFAULT 0 NOT NULL, created_at BIGINT NOT NULL, replaced_at "
        "BIGINT NOT NULL, PRIMARY KEY (agent_id, id), FOREIGN KEY(agent_id) REFERENCES "
        "philont_agents (id), FOREIGN KEY(agent_id, skill_id) REFERENCES memory_skills "
        "(agent_id, id) ON DELETE CASCADE, UNIQUE (agent_id, skill_id, revision) )"
    ),
    (
        "CREATE INDEX idx_philont_skill_revisions_skill ON philont_skill_revisions (agent_id,"
        " skill_id, revision)"
    ),
    (
        "CREATE TABLE philont_judge_verdicts ( agent_id BIGINT DEFAULT "
        "philont_current_agent() NOT NULL, id BIGINT DEFAULT "
        "philont_next_id('philont_judge_verdicts') NOT NULL, case_id TEXT, session_id TEXT, "
        "goal TEXT NOT NULL, verdict TEXT NOT NULL, reason TEXT, judge TEXT, skill_name TEXT,"
        " retrieval_action_id BIGINT, first_action_id BIGINT, judged_at BIGINT NOT NULL, "
        "observed_outcome TEXT, observed_at BIGINT, PRIMARY KEY (agent_id, id), FOREIGN "
        "KEY(agent_id) REFERENCES philont_agents (id), FOREIGN KEY(agent_id, case_id) "
        "REFERENCES philont_cases (agent_id, id) ON DELETE SET NULL (case_id) )"
    ),
    (
        "CREATE INDEX idx_philont_judge_verdicts_skill ON philont_judge_verdicts (agent_id, "
        "skill_name)"
    ),
    (
        "CREATE INDEX philont_pg_raw_messages_words ON memory_raw_messages USING gin "
        "(agent_id, to_tsvector('english'::regconfig, content))"
    ),
    (
        "CREATE INDEX philont_pg_raw_messages_trgm ON memory_raw_messages USING gin "
        "(agent_id, content gin_trgm_ops)"
    ),
    (
        "CREATE INDEX philont_pg_notes_words ON memory_notes USING gin (agent_id, "
        "to_tsvector('english'::regconfig, content))"
    ),
    (
        "CREATE INDEX philont_pg_notes_trgm ON memory_notes USING gin (agent_id, content "
        "gin_trgm_ops)"
    ),
    (
        "CREATE INDEX philont_pg_skills_words ON memory_skills USING gin (agent_id, "
        "to_tsvector('english'::regconfig, (name || ' ' || description || ' ' || "
        "trigger_keywords || ' ' || coalesce(when_to_use, ''))))"
    ),
    (
        "CREATE INDEX philont_pg_skills_trgm ON memory_skills USING gin (agent_id, (name || '"
        " ' || description || ' ' || trigger_keywords || ' ' || coalesce(when_to_use, '')) "
        "gin_trgm_ops)"
    ),
    "ALTER TABLE philont_agent_ids ENABLE ROW LEVEL SECURITY",
    "ALTER TABLE philont_agent_ids FORCE ROW LEVEL SECURITY",
    (
        "CREATE POLICY philont_agent_rows ON philont_agent_ids USING (agent_id = "
        "philont_agent()) WITH CHECK (agent_id = philont_agent())"
    ),
    "ALTER TABLE autonomous_budget ENABLE ROW LEVEL SECURITY",
    "ALTER TABLE autonomous_budget FORCE ROW LEVEL SECURITY",
    (
        "CREATE POLICY philont_agent_rows ON autonomous_budget USING (agent_id = "
        "philont_agent()) WITH CHECK (agent_id = philont_agent())"
    ),
    "ALTER TABLE config_rules ENABLE ROW LEVEL SECURITY",
    "ALTER TABLE config_rules FORCE ROW LEVEL SECURITY",
    (
        "CREATE POLICY philont_agent_rows ON config_rules USING (agent_id = philont_agent()) "
        "WITH CHECK (agent_id = philont_agent())"
    ),
    "ALTER TABLE memory_access_log ENABLE ROW LEVEL SECURITY",
    "ALTER TABLE memory_access_log FORCE ROW LEVEL SECURITY",
    (
        "CREATE POLICY philont_agent_rows ON memory_access_log USING (agent_id = "
        "philont_agent()) WITH CHECK (agent_id = philont_agent())"
    ),
    "ALTER TABLE memory_access_log_p00 ENABLE ROW LEVEL SECURITY",
    "ALTER TABLE memory_access_log_p00 FORCE ROW LEVEL SECURITY",
    (
        "CREATE POLICY philont_agent_rows ON memory_access_log_p00 USING (agent_id = "
        "philont_agent()) WITH CHECK (agent_id = philont_agent())"
    ),
    "ALTER TABLE memory_access_log_p01 ENABLE ROW LEVEL SECURITY",
    "ALTER TABLE memory_access_log_p01 FORCE ROW LEVEL SECURITY",
    (
        "CREATE POLICY philont_agent_rows ON memory_access_log_p01 USING (agent_id = "
        "philont_agent()) WITH CHECK (agent_id = philont_agent())"
    ),
    "ALTER TABLE memory_access_log_p02 ENABLE ROW LEVEL SECURITY",
    "ALTER TABLE memory_access_log_p02 FORCE ROW LEVEL SECURITY",
    (
        "CREATE POLICY philont_agent_rows ON memory_access_log_p02 USING (agent_id = "
        "philont_agent()) WITH CHECK (agent_id = philont_agent())"
    ),
    "ALTER TABLE memory_access_log_p03 ENABLE ROW LEVEL SECURITY",
    "ALTER TABLE memory_access_log_p03 FORCE ROW LEVEL SECURITY",
    (
        "CREATE POLICY philont_agent_rows ON memory_access_log_p03 USING (agent_id = "
        "philont_agent()) WITH CHECK (agent_id = philont_agent())"
    ),
    "ALTER TABLE memory_access_log_p04 ENABLE ROW LEVEL SECURITY",
    "ALTER TABLE memory_access_log_p04 FORCE ROW LEVEL SECURITY",
    (
        "CREATE POLICY philont_agent_rows ON memory_access_log_p04 USING (agent_id = "
        "philont_agent()) WITH CHECK (agent_id = philont_agent())"
    ),
    "ALTER TABLE memory_access_log_p05 ENABLE ROW LEVEL SECURITY",
    "ALTER TABLE memory_access_log_p05 FORCE ROW LEVEL SECURITY",
    (
        "CREATE POLICY philont_agent_rows ON memory_access_log_p05 USING (agent_id = "
        "philont_agent()) WITH CHECK (agent_id = philont_agent())"
    ),
    "ALTER TABLE memory_access_log_p06 ENABLE ROW LEVEL SECURITY",
    "ALTER TABLE memory_access_log_p06 FORCE ROW LEVEL SECURITY",
    (
        "CREATE POLICY philont_agent_rows ON memory_access_log_p06 USING (agent_id = "
        "philont_agent()) WITH CHECK (agent_id = philont_agent())"
    ),
    "ALTER TABLE memory_access_log_p07 ENABLE ROW LEVEL SECURITY",
    "ALTER TABLE memory_access_log_p07 FORCE ROW LEVEL SECURITY",
    (
        "CREATE POLICY philont_agent_rows ON memory_access_log_p07 USING (agent_id = "
        "philont_agent()) WITH CHECK (agent_id = philont_agent())"
    ),
    "ALTER TABLE memory_access_log_p08 ENABLE ROW LEVEL SECURITY",
    "ALTER TABLE memory_access_log_p08 FORCE ROW LEVEL SECURITY",
    (
        "CREATE POLICY philont_agent_rows ON memory_access_log_p08 USING (agent_id = "
        "philont_agent()) WITH CHECK (agent_id = philont_agent())"
    ),
    "ALTER TABLE memory_access_log_p09 ENABLE ROW LEVEL SECURITY",
    "ALTER TABLE memory_access_log_p09 FORCE ROW LEVEL SECURITY",
    (
        "CREATE POLICY philont_agent_rows ON memory_access_log_p09 USING (agent_id = "
        "philont_agent()) WITH CHECK (agent_id = philont_agent())"
    ),
    "ALTER TABLE memory_access_log_p10 ENABLE ROW LEVEL SECURITY",
    "ALTER TABLE memory_access_log_p10 FORCE ROW LEVEL SECURITY",
    (
        "CREATE POLICY philont_agent_rows ON memory_access_log_p10 USING (agent_id = "
        "philont_agent()) WITH CHECK (agent_id = philont_agent())"
    ),
    "ALTER TABLE memory_access_log_p11 ENABLE ROW LEVEL SECURITY",
    "ALTER TABLE memory_access_log_p11 FORCE ROW LEVEL SECURITY",
    (
        "CREATE POLICY philont_agent_rows ON memory_access_log_p11 USING (agent_id = "
        "philont_agent()) WITH CHECK (agent_id = philont_agent())"
    ),
    "ALTER TABLE memory_access_log_p12 ENABLE ROW LEVEL SECURITY",
    "ALTER TABLE memory_access_log_p12 FORCE ROW LEVEL SECURITY",
    (
        "CREATE POLICY philont_agent_rows ON memory_access_log_p12 USING (agent_id = "
        "philont_agent()) WITH CHECK (agent_id = philont_agent())"
    ),
    "ALTER TABLE memory_access_log_p13 ENABLE ROW LEVEL SECURITY",
    "ALTER TABLE memory_access_log_p13 FORCE ROW LEVEL SECURITY",
    (
        "CREATE POLICY philont_agent_rows ON memory_access_log_p13 USING (agent_id = "
        "philont_agent()) WITH CHECK (agent_id = philont_agent())"
    ),
    "ALTER TABLE memory_access_log_p14 ENABLE ROW LEVEL SECURITY",
    "ALTER TABLE memory_access_log_p14 FORCE ROW LEVEL SECURITY",
    (
        "CREATE POLICY philont_agent_rows ON memory_access_log_p14 USING (agent_id = "
        "philont_agent()) WITH CHECK (agent_id = philont_agent())"
    ),
    "ALTER TABLE memory_access_log_p15 ENABLE ROW LEVEL SECURITY",
    "ALTER TABLE memory_access_log_p15 FORCE ROW LEVEL SECURITY",
    (
        "CREATE POLICY philont_agent_rows ON memory_access_log_p15 USING (agent_id = "
        "philont_agent()) WITH CHECK (agent_id = philont_agent())"
    ),
    "ALTER TABLE memory_actions ENABLE ROW LEVEL SECURITY",
    "ALTER TABLE memory_actions FORCE ROW LEVEL SECURITY",
    (
        "CREATE POLICY philont_agent_rows ON memory_actions USING (agent_id = "
        "philont_agent()) WITH CHECK (agent_id = philont_agent())"
    ),
    "ALTER TABLE memory_actions_p00 ENABLE ROW LEVEL SECURITY",
    "ALTER TABLE memory_actions_p00 FORCE ROW LEVEL SECURITY",
    (
        "CREATE POLICY philont_agent_rows ON memory_actions_p00 USING (agent_id = "
        "philont_agent()) WITH CHECK (agent_id = philont_agent())"
    ),
    "ALTER TABLE memory_actions_p01 ENABLE ROW LEVEL SECURITY",
    "ALTER TABLE memory_actions_p01 FORCE ROW LEVEL SECURITY",
    (
        "CREATE POLICY philont_agent_rows ON memory_actions_p01 USING (agent_id = "
        "philont_agent()) WITH CHECK (agent_id = philont_agent())"
    ),
    "ALTER TABLE memory_actions_p02 ENABLE ROW LEVEL SECURITY",
    "ALTER TABLE memory_actions_p02 FORCE ROW LEVEL SECURITY",
    (
        "CREATE POLICY philont_agent_rows ON memory_actions_p02 USING (agent_id = "
        "philont_agent()) WITH CHECK (agent_id = philont_agent())"
    ),
    "ALTER TABLE memory_actions_p03 ENABLE ROW LEVEL SECURITY",
    "ALTER TABLE memory_actions_p03 FORCE ROW LEVEL SECURITY",
    (
        "CREATE POLICY philont_agent_rows ON memory_actions_p03 USING (agent_id = "
        "philont_agent()) WITH CHECK (agent_id = philont_agent())"
    ),
    "ALTER TABLE memory_actions_p04 ENABLE ROW LEVEL SECURITY",
    "ALTER TABLE memory_actions_p04 FORCE ROW LEVEL SECURITY",
    (
        "CREATE POLICY philont_agent_rows ON memory_actions_p04 USING (agent_id = "
        "philont_agent()) WITH CHECK (agent_id = philont_agent())"
    ),
    "ALTER TABLE memory_actions_p05 ENABLE ROW LEVEL SECURITY",
    "ALTER TABLE memory_actions_p05 FORCE ROW LEVEL SECURITY",
    (
        "CREATE POLICY philont_agent_rows ON memory_actions_p05 USING (agent_id = "
        "philont_agent()) WITH CHECK (agent_id = philont_agent())"
    ),
    "ALTER TABLE memory_actions_p06 ENABLE ROW LEVEL SECURITY",
    "ALTER TABLE memory_actions_p06 FORCE ROW LEVEL SECURITY",
    (
        "CREATE POLICY philont_agent_rows ON memory_actions_p06 USING (agent_id = "
        "philont_agent()) WITH CHECK (agent_id = philont_agent())"
    ),
    "ALTER TABLE memory_actions_p07 ENABLE ROW LEVEL SECURITY",
    "ALTER TABLE memory_actions_p07 FORCE ROW LEVEL SECURITY",
    (
        "CREATE POLICY philont_agent_rows ON memory_actions_p07 USING (agent_id = "
        "philont_agent()) WITH CHECK (agent_id = philont_agent())"
    ),
    "ALTER TABLE memory_actions_p08 ENABLE ROW LEVEL SECURITY",
    "ALTER TABLE memory_actions_p08 FORCE ROW LEVEL SECURITY",
    (
        "CREATE POLICY philont_agent_rows ON memory_actions_p08 USING (agent_id = "
        "philont_agent()) WITH CHECK (agent_id = philont_agent())"
    ),
    "ALTER TABLE memory_actions_p09 ENABLE ROW LEVEL SECURITY",
    "ALTER TABLE memory_actions_p09 FORCE ROW LEVEL SECURITY",
    (
        "CREATE POLICY philont_agent_rows ON memory_actions_p09 USING (agent_id = "
        "philont_agent()) WITH CHECK (agent_id = philont_agent())"
    ),
    "ALTER TABLE memory_actions_p10 ENABLE ROW LEVEL SECURITY",
    "ALTER TABLE memory_actions_p10 FORCE ROW LEVEL SECURITY",
    (
        "CREATE POLICY philont_agent_rows ON memory_actions_p10 USING (agent_id = "
        "philont_agent()) WITH CHECK (agent_id = philont_agent())"
    ),
    "ALTER TABLE memory_actions_p11 ENABLE ROW LEVEL SECURITY",
    "ALTER TABLE memory_actions_p11 FORCE ROW LEVEL SECURITY",
    (
        "CREATE POLICY philont_agent_rows ON memory_actions_p11 USING (agent_id = "
        "philont_agent()) WITH CHECK (agent_id = philont_agent())"
    ),
    "ALTER TABLE memory_actions_p12 ENABLE ROW LEVEL SECURITY",
    "ALTER TABLE memory_actions_p12 FORCE ROW LEVEL SECURITY",
    (
        "CREATE POLICY philont_agent_rows ON memory_actions_p12 USING (agent_id = "
        "philont_agent()) WITH CHECK (agent_id = philont_agent())"
    ),
    "ALTER TABLE memory_actions_p13 ENABLE ROW LEVEL SECURITY",
    "ALTER TABLE memory_actions_p13 FORCE ROW LEVEL SECURITY",
    (
        "CREATE POLICY philont_agent_rows ON memory_actions_p13 USING (agent_id = "
        "philont_agent()) WITH CHECK (agent_id = philont_agent())"
    ),
    "ALTER TABLE memory_actions_p14 ENABLE ROW LEVEL SECURITY",
    "ALTER TABLE memory_actions_p14 FORCE ROW LEVEL SECURITY",
    (
        "CREATE POLICY philont_agent_rows ON memory_actions_p14 USING (agent_id = "
        "philont_agent()) WITH CHECK (agent_id = philont_agent())"
    ),
    "ALTER TABLE memory_actions_p15 ENABLE ROW LEVEL SECURITY",
    "ALTER TABLE memory_actions_p15 FORCE ROW LEVEL SECURITY",
    (
        "CREATE POLICY philont_agent_rows ON memory_actions_p15 USING (agent_id = "
        "philont_agent()) WITH CHECK (agent_id = philont_agent())"
    ),
    "ALTER TABLE memory_calendar ENABLE ROW LEVEL SECURITY",
    "ALTER TABLE memory_calendar FORCE ROW LEVEL SECURITY",
    (
        "CREATE POLICY philont_agent_rows ON memory_calendar USING (agent_id = "
        "philont_agent()) WITH CHECK (agent_id = philont_agent())"
    ),
    "ALTER TABLE memory_drive_configs ENABLE ROW LEVEL SECURITY",
    "ALTER TABLE memory_drive_configs FORCE ROW LEVEL SECURITY",
    (
        "CREATE POLICY philont_agent_rows ON memory_drive_configs USING (agent_id = "
        "philont_agent()) WITH CHECK (agent_id = philont_agent())"
    ),
    "ALTER TABLE memory_drive_outcomes ENABLE ROW LEVEL SECURITY",
    "ALTER TABLE memory_drive_outcomes FORCE ROW LEVEL SECURITY",
    (
        "CREATE POLICY philont_agent_rows ON memory_drive_outcomes USING (agent_id = "
        "philont_agent()) WITH CHECK (agent_id = philont_agent())"
    ),
    "ALTER TABLE memory_facts ENABLE ROW LEVEL SECURITY",
    "ALTER TABLE memory_facts FORCE ROW LEVEL SECURITY",
    (
        "CREATE POLICY philont_agent_rows ON memory_facts USING (agent_id = philont_agent()) "
        "WITH CHECK (agent_id = philont_agent())"
    ),
    "ALTER TABLE memory_initiatives ENABLE ROW LEVEL SECURITY",
    "ALTER TABLE memory_initiatives FORCE ROW LEVEL SECURITY",
    (
        "CREATE POLICY philont_agent_rows ON memory_initiatives USING (agent_id = "
        "philont_agent()) WITH CHECK (agent_id = philont_agent())"
    ),
    "ALTER TABLE memory_meta ENABLE ROW LEVEL SECURITY",
    "ALTER TABLE memory_meta FORCE ROW LEVEL SECURITY",
    (
        "CREATE POLICY philont_agent_rows ON memory_meta USING (agent_id = philont_agent()) "
        "WITH CHECK (agent_id = philont_agent())"
    ),
    "ALTER TABLE memory_notes ENABLE ROW LEVEL SECURITY",
    "ALTER TABLE memory_notes FORCE ROW LEVEL SECURITY",
    (
        "CREATE POLICY philont_agent_rows ON memory_notes USING (agent_id = philont_agent()) "
        "WITH CHECK (agent_id = philont_agent())"
    ),
    "ALTER TABLE memory_plans ENABLE ROW LEVEL SECURITY",
    "ALTER TABLE memory_plans FORCE ROW LEVEL SECURITY",
    (
        "CREATE POLICY philont_agent_rows ON memory_plans USING (agent_id = philont_agent()) "
        "WITH CHECK (agent_id = philont_agent())"
    ),
    "ALTER TABLE memory_pursuits ENABLE ROW LEVEL SECURITY",
    "ALTER TABLE memory_pursuits FORCE ROW LEVEL SECURITY",
    (
        "CREATE POLICY philont_agent_rows ON memory_pursuits USING (agent_id = "
        "philont_agent()) WITH CHECK (agent_id = philont_agent())"
    ),
    "ALTER TABLE memory_raw_sessions ENABLE ROW LEVEL SECURITY",
    "ALTER TABLE memory_raw_sessions FORCE ROW LEVEL SECURITY",
    (
        "CREATE POLICY philont_agent_rows ON memory_raw_sessions USING (agent_id = "
        "philont_agent()) WITH CHECK (agent_id = philont_agent())"
    ),
    "ALTER TABLE memory_schedules ENABLE ROW LEVEL SECURITY",
    "ALTER TABLE memory_schedules FORCE ROW LEVEL SECURITY",
    (
        "CREATE POLICY philont_agent_rows ON memory_schedules USING (agent_id = "
        "philont_agent()) WITH CHECK (agent_id = philont_agent())"
    ),
    "ALTER TABLE memory_skills ENABLE ROW LEVEL SECURITY",
    "ALTER TABLE memory_skills FORCE ROW LEVEL SECURITY",
    (
        "CREATE POLICY philont_agent_rows ON memory_skills USING (agent_id = philont_agent())"
        " WITH CHECK (agent_id = philont_agent())"
    ),
    "ALTER TABLE philont_learning_batches ENABLE ROW LEVEL SECURITY",
    "ALTER TABLE philont_learning_batches FORCE ROW LEVEL SECURITY",
    (
        "CREATE POLICY philont_agent_rows ON philont_learning_batches USING (agent_id = "
        "philont_agent()) WITH CHECK (agent_id = philont_agent())"
    ),
    "ALTER TABLE push_subscriptions ENABLE ROW LEVEL SECURITY",
    "ALTER TABLE push_subscriptions FORCE ROW LEVEL SECURITY",
    (
        "CREATE POLICY philont_agent_rows ON push_subscriptions USING (agent_id = "
        "philont_agent()) WITH CHECK (agent_id = philont_agent())"
    ),
    "ALTER TABLE reasoning_nodes ENABLE ROW LEVEL SECURITY",
    "ALTER TABLE reasoning_nodes FORCE ROW LEVEL SECURITY",
    (
        "CREATE POLICY philont_agent_rows ON reasoning_nodes USING (agent_id = "
        "philont_agent()) WITH CHECK (agent_id = philont_agent())"
    ),
    "ALTER TABLE reasoning_sessions ENABLE ROW LEVEL SECURITY",
    "ALTER TABLE reasoning_sessions FORCE ROW LEVEL SECURITY",
    (
        "CREATE POLICY philont_agent_rows ON reasoning_sessions USING (agent_id = "
        "philont_agent()) WITH CHECK (agent_id = philont_agent())"
    ),
    "ALTER TABLE routing_rules ENABLE ROW LEVEL SECURITY",
    "ALTER TABLE routing_rules FORCE ROW LEVEL SECURITY",
    (
        "CREATE POLICY philont_agent_rows ON routing_rules USING (agent_id = philont_agent())"
        " WITH CHECK (agent_id = philont_agent())"
    ),
    "ALTER TABLE schedule_outcomes ENABLE ROW LEVEL SECURITY",
    "ALTER TABLE schedule_outcomes FORCE ROW LEVEL SECURITY",
    (
        "CREATE POLICY philont_agent_rows ON schedule_outcomes USING (agent_id = "
        "philont_agent()) WITH CHECK (agent_id = philont_agent())"
    ),
    "ALTER TABLE memory_raw_messages ENABLE ROW LEVEL SECURITY",
    "ALTER TABLE memory_raw_messages FORCE ROW LEVEL SECURITY",
    (
        "CREATE POLICY philont_agent_rows ON memory_raw_messages USING (agent_id = "
        "philont_agent()) WITH CHECK (agent_id = philont_agent())"
    ),
    "ALTER TABLE memory_raw_messages_p00 ENABLE ROW LEVEL SECURITY",
    "ALTER TABLE memory_raw_messages_p00 FORCE ROW LEVEL SECURITY",
    (
        "CREATE POLICY philont_agent_rows ON memory_raw_messages_p00 USING (agent_id = "
        "philont_agent()) WITH CHECK (agent_id = philont_agent())"
    ),
    "ALTER TABLE memory_raw_messages_p01 ENABLE ROW LEVEL SECURITY",
    "ALTER TABLE memory_raw_messages_p01 FORCE ROW LEVEL SECURITY",
    (
        "CREATE POLICY philont_agent_rows ON memory_raw_messages_p01 USING (agent_id = "
        "philont_agent()) WITH CHECK (agent_id = philont_agent())"
    ),
    "ALTER TABLE memory_raw_messages_p02 ENABLE ROW LEVEL SECURITY",
    "ALTER TABLE memory_raw_messages_p02 FORCE ROW LEVEL SECURITY",
    (
        "CREATE POLICY philont_agent_rows ON memory_raw_messages_p02 USING (agent_id = "
        "philont_agent()) WITH CHECK (agent_id = philont_agent())"
    ),
    "ALTER TABLE memory_raw_messages_p03 ENABLE ROW LEVEL SECURITY",
    "ALTER TABLE memory_raw_messages_p03 FORCE ROW LEVEL SECURITY",
    (
        "CREATE POLICY philont_agent_rows ON memory_raw_messages_p03 USING (agent_id = "
        "philont_agent()) WITH CHECK (agent_id = philont_agent())"
    ),
    "ALTER TABLE memory_raw_messages_p04 ENABLE ROW LEVEL SECURITY",
    "ALTER TABLE memory_raw_messages_p04 FORCE ROW LEVEL SECURITY",
    (
        "CREATE POLICY philont_agent_rows ON memory_raw_messages_p04 USING (agent_id = "
        "philont_agent()) WITH CHECK (agent_id = philont_agent())"
    ),
    "ALTER TABLE memory_raw_messages_p05 ENABLE ROW LEVEL SECURITY",
    "ALTER TABLE memory_raw_messages_p05 FORCE ROW LEVEL SECURITY",
    (
        "CREATE POLICY philont_agent_rows ON memory_raw_messages_p05 USING (agent_id = "
        "philont_agent()) WITH CHECK (agent_id = philont_agent())"
    ),
    "ALTER TABLE memory_raw_messages_p06 ENABLE ROW LEVEL SECURITY",
    "ALTER TABLE memory_raw_messages_p06 FORCE ROW LEVEL SECURITY",
    (
        "CREATE POLICY philont_agent_rows ON memory_raw_messages_p06 USING (agent_id = "
        "philont_agent()) WITH CHECK (agent_id = philont_agent())"
    ),
    "ALTER TABLE memory_raw_messages_p07 ENABLE ROW LEVEL SECURITY",
    "ALTER TABLE memory_raw_messages_p07 FORCE ROW LEVEL SECURITY",
    (
        "CREATE POLICY philont_agent_rows ON memory_raw_messages_p07 USING (agent_id = "
        "philont_agent()) WITH CHECK (agent_id = philont_agent())"
    ),
    "ALTER TABLE memory_raw_messages_p08 ENABLE ROW LEVEL SECURITY",
    "ALTER TABLE memory_raw_messages_p08 FORCE ROW LEVEL SECURITY",
    (
        "CREATE POLICY philont_agent_rows ON memory_raw_messages_p08 USING (agent_id = "
        "philont_agent()) WITH CHECK (agent_id = philont_agent())"
    ),
    "ALTER TABLE memory_raw_messages_p09 ENABLE ROW LEVEL SECURITY",
    "ALTER TABLE memory_raw_messages_p09 FORCE ROW LEVEL SECURITY",
    (
        "CREATE POLICY philont_agent_rows ON memory_raw_messages_p09 USING (agent_id = "
        "philont_agent()) WITH CHECK (agent_id = philont_agent())"
    ),
    "ALTER TABLE memory_raw_messages_p10 ENABLE ROW LEVEL SECURITY",
    "ALTER TABLE memory_raw_messages_p10 FORCE ROW LEVEL SECURITY",
    (
        "CREATE POLICY philont_agent_rows ON memory_raw_messages_p10 USING (agent_id = "
        "philont_agent()) WITH CHECK (agent_id = philont_agent())"
    ),
    "ALTER TABLE memory_raw_messages_p11 ENABLE ROW LEVEL SECURITY",
    "ALTER TABLE memory_raw_messages_p11 FORCE ROW LEVEL SECURITY",
    (
        "CREATE POLICY philont_agent_rows ON memory_raw_messages_p11 USING (agent_id = "
        "philont_agent()) WITH CHECK (agent_id = philont_agent())"
    ),
    "ALTER TABLE memory_raw_messages_p12 ENABLE ROW LEVEL SECURITY",
    "ALTER TABLE memory_raw_messages_p12 FORCE ROW LEVEL SECURITY",
    (
        "CREATE POLICY philont_agent_rows ON memory_raw_messages_p12 USING (agent_id = "
        "philont_agent()) WITH CHECK (agent_id = philont_agent())"
    ),
    "ALTER TABLE memory_raw_messages_p13 ENABLE ROW LEVEL SECURITY",
    "ALTER TABLE memory_raw_messages_p13 FORCE ROW LEVEL SECURITY",
    (
        "CREATE POLICY philont_agent_rows ON memory_raw_messages_p13 USING (agent_id = "
        "philont_agent()) WITH CHECK (agent_id = philont_agent())"
    ),
    "ALTER TABLE memory_raw_messages_p14 ENABLE ROW LEVEL SECURITY",
    "ALTER TABLE memory_raw_messages_p14 FORCE ROW LEVEL SECURITY",
    (
        "CREATE POLICY philont_agent_rows ON memory_raw_messages_p14 USING (agent_id = "
        "philont_agent()) WITH CHECK (agent_id = philont_agent())"
    ),
    "ALTER TABLE memory_raw_messages_p15 ENABLE ROW LEVEL SECURITY",
    "ALTER TABLE memory_raw_messages_p15 FORCE ROW LEVEL SECURITY",
    (
        "CREATE POLICY philont_agent_rows ON memory_raw_messages_p15 USING (agent_id = "
        "philont_agent()) WITH CHECK (agent_id = philont_agent())"
    ),
    "ALTER TABLE philont_cases ENABLE ROW LEVEL SECURITY",
    "ALTER TABLE philont_cases FORCE ROW LEVEL SECURITY",
    (
        "CREATE POLICY philont_agent_rows ON philont_cases USING (agent_id = philont_agent())"
        " WITH CHECK (agent_id = philont_agent())"
    ),
    "ALTER TABLE philont_skill_recipes ENABLE ROW LEVEL SECURITY",
    "ALTER TABLE philont_skill_recipes FORCE ROW LEVEL SECURITY",
    (
        "CREATE POLICY philont_agent_rows ON philont_skill_recipes USING (agent_id = "
        "philont_agent()) WITH CHECK (agent_id = philont_agent())"
    ),
    "ALTER TABLE philont_skill_revisions ENABLE ROW LEVEL SECURITY",
    "ALTER TABLE philont_skill_revisions FORCE ROW LEVEL SECURITY",
    (
        "CREATE POLICY philont_agent_rows ON philont_skill_revisions USING (agent_id = "
        "philont_agent()) WITH CHECK (agent_id = philont_agent())"
    ),
    "ALTER TABLE philont_judge_verdicts ENABLE ROW LEVEL SECURITY",
    "ALTER TABLE philont_judge_verdicts FORCE ROW LEVEL SECURITY",
    (
        "CREATE POLICY philont_agent_rows ON philont_judge_verdicts USING (agent_id = "
        "philont_agent()) WITH CHECK (agent_id = philont_agent())"
    ),
)


def upgrade() -> None:
    if mo.is_sqlite():
        return
    conn = op.get_bind()
    for statement in STATEMENTS:
        conn.exec_driver_sql(statement)  # verbatim: no bind-parameter parsing of ':' in JSON


def downgrade() -> None:
    """Not supported: philont schema history is forward-only."""
    raise NotImplementedError("philont schema history is forward-only")
