CREATE TABLE workspaces (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    name TEXT NOT NULL UNIQUE,
    slug TEXT NOT NULL UNIQUE,
    plan TEXT NOT NULL DEFAULT 'free' CHECK (plan IN ('free', 'starter', 'professional', 'team', 'company')),
    task_quota_monthly INTEGER NOT NULL CHECK (task_quota_monthly > 0),
    tasks_used_this_month INTEGER NOT NULL DEFAULT 0 CHECK (tasks_used_this_month >= 0),
    billing_cycle_start DATE NOT NULL,
    created_at DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP
);

CREATE TABLE users (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    email TEXT NOT NULL UNIQUE,
    full_name TEXT NOT NULL,
    timezone TEXT NOT NULL DEFAULT 'UTC',
    created_at DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP
);

CREATE TABLE workspace_members (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    workspace_id INTEGER NOT NULL,
    user_id INTEGER NOT NULL,
    role TEXT NOT NULL DEFAULT 'member' CHECK (role IN ('owner', 'admin', 'member')),
    joined_at DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    UNIQUE (workspace_id, user_id),
    FOREIGN KEY (workspace_id) REFERENCES workspaces(id) ON DELETE CASCADE,
    FOREIGN KEY (user_id) REFERENCES users(id) ON DELETE CASCADE
);

CREATE TABLE apps (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    key TEXT NOT NULL UNIQUE,
    name TEXT NOT NULL UNIQUE,
    category TEXT NOT NULL,
    auth_type TEXT NOT NULL CHECK (auth_type IN ('oauth2', 'api_key', 'basic', 'none')),
    is_premium INTEGER NOT NULL DEFAULT 0 CHECK (is_premium IN (0, 1)),
    is_builtin INTEGER NOT NULL DEFAULT 0 CHECK (is_builtin IN (0, 1)),
    description TEXT
);

CREATE TABLE app_events (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    app_id INTEGER NOT NULL,
    key TEXT NOT NULL,
    name TEXT NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('trigger', 'action', 'search')),
    is_instant INTEGER NOT NULL DEFAULT 0 CHECK (is_instant IN (0, 1)),
    description TEXT,
    UNIQUE (app_id, key),
    FOREIGN KEY (app_id) REFERENCES apps(id) ON DELETE CASCADE
);

CREATE TABLE connections (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    workspace_id INTEGER NOT NULL,
    app_id INTEGER NOT NULL,
    owner_user_id INTEGER NOT NULL,
    label TEXT NOT NULL,
    account_identifier TEXT NOT NULL,
    status TEXT NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'expired', 'revoked', 'error')),
    last_verified_at DATETIME,
    created_at DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    UNIQUE (workspace_id, label),
    FOREIGN KEY (workspace_id) REFERENCES workspaces(id) ON DELETE CASCADE,
    FOREIGN KEY (app_id) REFERENCES apps(id) ON DELETE RESTRICT,
    FOREIGN KEY (owner_user_id) REFERENCES users(id) ON DELETE RESTRICT
);

CREATE TABLE zaps (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    workspace_id INTEGER NOT NULL,
    owner_user_id INTEGER NOT NULL,
    name TEXT NOT NULL,
    description TEXT,
    status TEXT NOT NULL DEFAULT 'draft' CHECK (status IN ('draft', 'on', 'off', 'errored')),
    status_reason TEXT,
    trigger_event_id INTEGER,
    trigger_connection_id INTEGER,
    polling_interval_minutes INTEGER NOT NULL DEFAULT 15 CHECK (polling_interval_minutes IN (1, 2, 5, 15)),
    last_run_at DATETIME,
    created_at DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    updated_at DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    UNIQUE (workspace_id, name),
    FOREIGN KEY (workspace_id) REFERENCES workspaces(id) ON DELETE CASCADE,
    FOREIGN KEY (owner_user_id) REFERENCES users(id) ON DELETE RESTRICT,
    FOREIGN KEY (trigger_event_id) REFERENCES app_events(id) ON DELETE SET NULL,
    FOREIGN KEY (trigger_connection_id) REFERENCES connections(id) ON DELETE SET NULL
);

CREATE TABLE zap_steps (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    zap_id INTEGER NOT NULL,
    position INTEGER NOT NULL CHECK (position >= 1),
    step_type TEXT NOT NULL CHECK (step_type IN ('action', 'search', 'filter', 'delay', 'formatter')),
    app_event_id INTEGER,
    connection_id INTEGER,
    title TEXT NOT NULL,
    config_json TEXT NOT NULL DEFAULT '{}',
    created_at DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    updated_at DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    UNIQUE (zap_id, position),
    FOREIGN KEY (zap_id) REFERENCES zaps(id) ON DELETE CASCADE,
    FOREIGN KEY (app_event_id) REFERENCES app_events(id) ON DELETE SET NULL,
    FOREIGN KEY (connection_id) REFERENCES connections(id) ON DELETE SET NULL
);

CREATE TABLE field_mappings (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    step_id INTEGER NOT NULL,
    target_field TEXT NOT NULL,
    source_expression TEXT NOT NULL,
    created_at DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    updated_at DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    UNIQUE (step_id, target_field),
    FOREIGN KEY (step_id) REFERENCES zap_steps(id) ON DELETE CASCADE
);

CREATE TABLE filter_conditions (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    step_id INTEGER NOT NULL,
    group_index INTEGER NOT NULL DEFAULT 0 CHECK (group_index >= 0),
    field TEXT NOT NULL,
    operator TEXT NOT NULL CHECK (operator IN ('text_contains', 'text_does_not_contain', 'exactly_matches', 'does_not_exactly_match', 'starts_with', 'ends_with', 'greater_than', 'less_than', 'exists', 'does_not_exist', 'is_true', 'is_false')),
    value TEXT,
    created_at DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    FOREIGN KEY (step_id) REFERENCES zap_steps(id) ON DELETE CASCADE
);

CREATE TABLE schedules (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    zap_id INTEGER NOT NULL UNIQUE,
    frequency TEXT NOT NULL CHECK (frequency IN ('every_15_minutes', 'hourly', 'daily', 'weekly', 'monthly')),
    time_of_day TEXT,
    day_of_week TEXT CHECK (day_of_week IS NULL OR day_of_week IN ('monday', 'tuesday', 'wednesday', 'thursday', 'friday', 'saturday', 'sunday')),
    day_of_month INTEGER CHECK (day_of_month IS NULL OR (day_of_month >= 1 AND day_of_month <= 31)),
    timezone TEXT NOT NULL DEFAULT 'UTC',
    trigger_on_weekends INTEGER NOT NULL DEFAULT 1 CHECK (trigger_on_weekends IN (0, 1)),
    updated_at DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    FOREIGN KEY (zap_id) REFERENCES zaps(id) ON DELETE CASCADE
);

CREATE TABLE zap_runs (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    zap_id INTEGER NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('success', 'filtered', 'error', 'halted', 'held', 'playing')),
    trigger_summary TEXT,
    trigger_data_json TEXT NOT NULL DEFAULT '{}',
    tasks_used INTEGER NOT NULL DEFAULT 0 CHECK (tasks_used >= 0),
    error_message TEXT,
    replayed_from_run_id INTEGER,
    started_at DATETIME NOT NULL,
    finished_at DATETIME,
    FOREIGN KEY (zap_id) REFERENCES zaps(id) ON DELETE CASCADE,
    FOREIGN KEY (replayed_from_run_id) REFERENCES zap_runs(id) ON DELETE SET NULL
);

CREATE TABLE run_attempts (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id INTEGER NOT NULL,
    step_id INTEGER,
    step_position INTEGER NOT NULL CHECK (step_position >= 0),
    attempt_number INTEGER NOT NULL DEFAULT 1 CHECK (attempt_number >= 1),
    status TEXT NOT NULL CHECK (status IN ('success', 'error', 'filtered', 'halted', 'skipped')),
    http_status INTEGER,
    duration_ms INTEGER,
    response_summary TEXT,
    error_message TEXT,
    created_at DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    FOREIGN KEY (run_id) REFERENCES zap_runs(id) ON DELETE CASCADE,
    FOREIGN KEY (step_id) REFERENCES zap_steps(id) ON DELETE SET NULL
);

CREATE TABLE error_alerts (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    workspace_id INTEGER NOT NULL,
    zap_id INTEGER,
    connection_id INTEGER,
    run_id INTEGER,
    alert_type TEXT NOT NULL CHECK (alert_type IN ('zap_error', 'connection_expired', 'task_limit')),
    severity TEXT NOT NULL CHECK (severity IN ('info', 'warning', 'error', 'critical')),
    message TEXT NOT NULL,
    status TEXT NOT NULL DEFAULT 'open' CHECK (status IN ('open', 'acknowledged', 'resolved')),
    created_at DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    resolved_at DATETIME,
    resolved_by_user_id INTEGER,
    FOREIGN KEY (workspace_id) REFERENCES workspaces(id) ON DELETE CASCADE,
    FOREIGN KEY (zap_id) REFERENCES zaps(id) ON DELETE SET NULL,
    FOREIGN KEY (connection_id) REFERENCES connections(id) ON DELETE SET NULL,
    FOREIGN KEY (run_id) REFERENCES zap_runs(id) ON DELETE SET NULL,
    FOREIGN KEY (resolved_by_user_id) REFERENCES users(id) ON DELETE SET NULL
);

CREATE INDEX idx_members_user ON workspace_members(user_id);
CREATE INDEX idx_app_events_app_kind ON app_events(app_id, kind);
CREATE INDEX idx_connections_workspace_app ON connections(workspace_id, app_id);
CREATE INDEX idx_zaps_workspace_status ON zaps(workspace_id, status);
CREATE INDEX idx_zaps_trigger_connection ON zaps(trigger_connection_id);
CREATE INDEX idx_zap_steps_zap ON zap_steps(zap_id);
CREATE INDEX idx_zap_steps_connection ON zap_steps(connection_id);
CREATE INDEX idx_field_mappings_step ON field_mappings(step_id);
CREATE INDEX idx_filter_conditions_step ON filter_conditions(step_id);
CREATE INDEX idx_zap_runs_zap_status ON zap_runs(zap_id, status);
CREATE INDEX idx_zap_runs_started ON zap_runs(started_at);
CREATE INDEX idx_run_attempts_run ON run_attempts(run_id);
CREATE INDEX idx_error_alerts_workspace_status ON error_alerts(workspace_id, status);
CREATE INDEX idx_error_alerts_zap ON error_alerts(zap_id);
