-- boxwatch schema 5: acknowledgements of alerts (`boxwatch ack`, POST /api/acks; src/alerts/acks.ts).
-- Times are milliseconds since the Unix epoch. Rows are only added (a newer ack of the same alert
-- supersedes an older one) and pruned with the alert history.
CREATE TABLE acks (
  id INTEGER PRIMARY KEY,
  key TEXT NOT NULL,             -- the alert: rule NUL serial (alert_states.key)
  rule TEXT NOT NULL,
  serial TEXT NOT NULL,
  firing_since INTEGER NOT NULL, -- the firing episode acknowledged
  severity TEXT NOT NULL,        -- the alert's severity then: a higher one ends the ack
  acked_by TEXT NOT NULL,
  comment TEXT NOT NULL,
  at INTEGER NOT NULL,
  until INTEGER                  -- NULL: until the alert resolves
);
CREATE INDEX acks_key ON acks(key, id);
CREATE INDEX acks_at ON acks(at);
