-- boxwatch schema 20: a poll cycle is keyed by its account and start, as on PostgreSQL
-- (migrations/postgres/0008): each account's cycle times move forward on their own, so two
-- accounts' cycles may start in the same millisecond (before, a cycle of another account recorded
-- meanwhile moved a cycle 1 ms later). SQLite cannot change a primary key: the table is built
-- again with its rows; the stable views that read it (v_cycles, and v_boxes for a box's last
-- poll: migration 0018) are dropped first and made again as they were.
DROP VIEW v_cycles;
DROP VIEW v_boxes;
CREATE TABLE cycles_by_account (
  started_at INTEGER NOT NULL,
  duration_ms INTEGER NOT NULL,
  requests INTEGER NOT NULL,
  outcome TEXT NOT NULL CHECK (outcome IN ('ok', 'failed')),
  error_code TEXT,
  error TEXT,
  boxes INTEGER NOT NULL,
  details_fetched INTEGER NOT NULL,
  account TEXT NOT NULL DEFAULT 'default',
  PRIMARY KEY (account, started_at)
) WITHOUT ROWID;
INSERT INTO cycles_by_account (started_at, duration_ms, requests, outcome, error_code, error, boxes, details_fetched, account)
SELECT started_at, duration_ms, requests, outcome, error_code, error, boxes, details_fetched, account FROM cycles;
DROP TABLE cycles;
ALTER TABLE cycles_by_account RENAME TO cycles;
-- The latest cycle of the fleet, the successful cycles of a range, pruning: by start.
CREATE INDEX cycles_started ON cycles (started_at);

CREATE VIEW v_cycles AS
SELECT started_at, duration_ms, requests, outcome, error_code, error, boxes, details_fetched, account
FROM cycles;

CREATE VIEW v_boxes AS
SELECT serial, name, gateway_id, connected, battery, signal, firmware, location, ip,
       last_seen, registered_at, details_at, first_seen,
       CASE WHEN seg_start IS NULL THEN last_polled
         ELSE coalesce((SELECT max(c.started_at) FROM cycles c WHERE c.account = boxes.account), last_polled) END AS last_polled,
       missing_since, account
FROM boxes;
