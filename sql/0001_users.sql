-- Operators of the dashboard. The password hash is absent for OIDC-only users;
-- token_version is the `tv` claim of their sessions, raised to revoke them all.
CREATE TABLE users (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    username      TEXT    NOT NULL UNIQUE,
    password_hash TEXT,
    auth_methods  TEXT    NOT NULL DEFAULT 'local',
    token_version INTEGER NOT NULL DEFAULT 1,
    created_at    TEXT    NOT NULL,
    updated_at    TEXT    NOT NULL
);
