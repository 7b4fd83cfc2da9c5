-- Webhooks: where activity events are delivered, rendered from templates.
CREATE TABLE webhooks (
    id              TEXT PRIMARY KEY,
    name            TEXT NOT NULL,
    enabled         INTEGER NOT NULL,
    url             TEXT NOT NULL,
    method          TEXT NOT NULL,
    headers         TEXT NOT NULL,
    body_template   TEXT NOT NULL,
    min_level       TEXT NOT NULL,
    kinds           TEXT NOT NULL,
    timeout_ms      INTEGER NOT NULL,
    last_status     INTEGER,
    last_error      TEXT,
    last_attempt_at TEXT,
    created_at      TEXT NOT NULL,
    updated_at      TEXT
);
