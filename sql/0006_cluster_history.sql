-- Cluster history: one row per interval in which a cluster's confirmed
-- state (masters, incident health, open incident) held. Times are Unix
-- milliseconds so a year of a thousand clusters reads quickly. An open interval
-- (`open` = 1) is the one holding now; its `to_ms` is the last moment the server
-- knew it held (touched every 30 s), so after a crash or stop it is closed there
-- and the time the server was away stays unobserved, never guessed.
CREATE TABLE cluster_history (
    key         TEXT    NOT NULL,
    from_ms     INTEGER NOT NULL,
    to_ms       INTEGER NOT NULL,
    open        INTEGER NOT NULL DEFAULT 0,
    -- JSON [[clientId, host], ...] of the confirmed masters, host as named then.
    masters     TEXT    NOT NULL,
    health      TEXT    NOT NULL,
    incident_id TEXT,
    PRIMARY KEY (key, from_ms)
) WITHOUT ROWID;
CREATE INDEX cluster_history_to ON cluster_history (to_ms);
CREATE INDEX cluster_history_open ON cluster_history (key) WHERE open = 1;
