-- Indexes into the activity list for what the dashboard asks most.
--
-- Which stored events name which cluster: the cluster detail asks for the events
-- of one cluster, and finding them by reading every event's JSON took seconds
-- at 50,000 events. One row per network of the event's `data.cluster`,
-- matching what `activity::is_about_cluster` accepts (a missing or non-text site
-- is the empty site; the VRID only when it is a number; text networks only).
-- Kept by the database itself: the trigger fills it as events are stored, the
-- foreign key empties it as they are deleted (retention, delete all).
CREATE TABLE activity_clusters (
    activity_id TEXT NOT NULL REFERENCES activity (id) ON DELETE CASCADE,
    site        TEXT NOT NULL,
    vrid        INTEGER NOT NULL,
    network     TEXT NOT NULL
);
CREATE INDEX activity_clusters_key ON activity_clusters (site, vrid, network);
CREATE INDEX activity_clusters_activity ON activity_clusters (activity_id);

CREATE TRIGGER activity_clusters_on_insert AFTER INSERT ON activity
WHEN json_valid(NEW.data)
 AND json_type(NEW.data, '$.cluster') = 'object'
 AND json_type(NEW.data, '$.cluster.vrid') = 'integer'
 AND json_type(NEW.data, '$.cluster.networks') = 'array'
BEGIN
    INSERT INTO activity_clusters (activity_id, site, vrid, network)
    SELECT NEW.id,
           CASE WHEN json_type(NEW.data, '$.cluster.site') = 'text'
                THEN json_extract(NEW.data, '$.cluster.site') ELSE '' END,
           json_extract(NEW.data, '$.cluster.vrid'),
           n.value
    FROM json_each(NEW.data, '$.cluster.networks') AS n
    WHERE n.type = 'text'
    GROUP BY n.value;
END;

INSERT INTO activity_clusters (activity_id, site, vrid, network)
SELECT a.id,
       CASE WHEN json_type(a.data, '$.cluster.site') = 'text'
            THEN json_extract(a.data, '$.cluster.site') ELSE '' END,
       json_extract(a.data, '$.cluster.vrid'),
       n.value
FROM activity AS a, json_each(a.data, '$.cluster.networks') AS n
WHERE json_valid(a.data)
  AND json_type(a.data, '$.cluster') = 'object'
  AND json_type(a.data, '$.cluster.vrid') = 'integer'
  AND json_type(a.data, '$.cluster.networks') = 'array'
  AND n.type = 'text'
GROUP BY a.id, n.value;

-- The events of one incident (its correlation id): the dashboard's open
-- incidents and an incident's own events are found without reading the list.
CREATE INDEX activity_correlation ON activity (correlation_id) WHERE correlation_id IS NOT NULL;
