-- Silences: maintenance windows. Matching events are stored with
-- `data.silenced` and not delivered to webhooks while one is active. `expired`
-- is set once `silence.expired` was recorded and the open incidents it held back
-- were delivered, so a restart does neither twice.
CREATE TABLE silences (
    id          TEXT PRIMARY KEY,
    cluster_key TEXT,
    client_id   TEXT,
    kind        TEXT,
    starts_at   TEXT NOT NULL,
    ends_at     TEXT NOT NULL,
    comment     TEXT NOT NULL,
    created_by  TEXT NOT NULL,
    created_at  TEXT NOT NULL,
    expired     INTEGER NOT NULL DEFAULT 0
);
