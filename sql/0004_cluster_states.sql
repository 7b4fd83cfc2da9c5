-- The confirmed state of each cluster (roles, incident health, open incident), so
-- a restart of the server neither reports every cluster anew nor misses a change.
CREATE TABLE cluster_states (
    key        TEXT PRIMARY KEY,
    state      TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
