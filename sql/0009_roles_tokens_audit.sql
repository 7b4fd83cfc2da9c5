-- Roles, API tokens and the audit log.
--
-- Every user before roles could do everything: existing users stay administrators.
ALTER TABLE users ADD COLUMN role TEXT NOT NULL DEFAULT 'admin';

-- Long-lived credentials for scripts. Only the SHA-256 of a token is kept (the
-- token carries 160 random bits, so a fast hash is enough); it is shown once.
CREATE TABLE api_tokens (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    name            TEXT    NOT NULL UNIQUE,
    role            TEXT    NOT NULL,
    token_hash      TEXT    NOT NULL UNIQUE,
    created_by      INTEGER NOT NULL,
    created_by_name TEXT    NOT NULL,
    created_at      TEXT    NOT NULL,
    last_used_at    TEXT,
    expires_at      TEXT
);

-- Who changed what. Never deleted through the API; pruned after
-- `audit.retention_days`.
CREATE TABLE audit_log (
    id        INTEGER PRIMARY KEY AUTOINCREMENT,
    at        TEXT NOT NULL,
    actor     TEXT NOT NULL,
    via       TEXT NOT NULL,
    source_ip TEXT,
    action    TEXT NOT NULL,
    target    TEXT,
    summary   TEXT NOT NULL
);
CREATE INDEX audit_log_at ON audit_log (at);
