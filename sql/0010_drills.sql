-- Failover drills: one row per drill asked for (refused ones too), the report
-- kept whole as JSON (`body`), the columns a list filters and orders by.
CREATE TABLE drills (
    id          TEXT PRIMARY KEY,
    cluster_key TEXT NOT NULL,
    status      TEXT NOT NULL,
    started_at  TEXT NOT NULL,
    body        TEXT NOT NULL
);
CREATE INDEX drills_cluster ON drills (cluster_key, started_at);
