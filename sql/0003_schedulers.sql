-- The last run of each cleanup scheduler. A run is written as `running` when it
-- starts, so a run cut short by a stop shows as `interrupted` at the next start.
CREATE TABLE scheduler_runs (
    scheduler   TEXT PRIMARY KEY,
    trigger     TEXT NOT NULL,
    status      TEXT NOT NULL,
    started_at  TEXT NOT NULL,
    finished_at TEXT,
    removed     INTEGER,
    error       TEXT
);
