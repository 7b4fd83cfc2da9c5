-- Agents (clients), the tokens they register with, their last reading, and the
-- activity list with per-user seen state.

CREATE TABLE clients (
    id                      TEXT PRIMARY KEY,
    hostname                TEXT NOT NULL DEFAULT '',
    display_name            TEXT,
    site                    TEXT,
    connection_mode         TEXT NOT NULL,
    -- Inbound: SHA-256 of the auth token (hex). Outbound: AES-256-GCM, iv:tag:ciphertext.
    auth_token_hash         TEXT,
    auth_token_encrypted    TEXT,
    inbound_allowed_ip      TEXT,
    inbound_last_ip         TEXT,
    outbound_target_address TEXT,
    last_seen               TEXT,
    version                 TEXT,
    created_at              TEXT NOT NULL,
    updated_at              TEXT
);
CREATE UNIQUE INDEX clients_auth_token_hash ON clients (auth_token_hash);

CREATE TABLE registration_tokens (
    token_hash   TEXT PRIMARY KEY,
    created_at   TEXT NOT NULL,
    expires_at   TEXT NOT NULL,
    used_at      TEXT,
    display_name TEXT,
    allowed_ip   TEXT
);

-- One reading per client; `payload` is the reading as received (unknown fields
-- kept), `last_known_instances` the instances of the last reading that had any.
CREATE TABLE keepalived_states (
    client_id            TEXT PRIMARY KEY REFERENCES clients (id) ON DELETE CASCADE,
    received_at          TEXT NOT NULL,
    payload              TEXT NOT NULL,
    last_known_instances TEXT
);

-- Activity outlives the client it is about: deleting a host does not rewrite
-- history, so client_id is not a foreign key.
CREATE TABLE activity (
    id             TEXT PRIMARY KEY,
    occurred_at    TEXT NOT NULL,
    received_at    TEXT NOT NULL,
    source         TEXT NOT NULL,
    client_id      TEXT,
    kind           TEXT NOT NULL,
    level          TEXT NOT NULL,
    correlation_id TEXT,
    subject        TEXT NOT NULL DEFAULT '{}',
    data           TEXT NOT NULL DEFAULT '{}'
);
CREATE INDEX activity_occurred_at ON activity (occurred_at);

CREATE TABLE activity_seen (
    activity_id TEXT NOT NULL REFERENCES activity (id) ON DELETE CASCADE,
    user_id     INTEGER NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    PRIMARY KEY (activity_id, user_id)
);
