-- boxwatch schema 6: calls placed through the boxes (docs/calls.md), their daily rollups, and
-- how far the call list has been read. Times are milliseconds since the Unix epoch.

-- One row per call_id. The destination is kept as a keyed hash (HMAC-SHA256) and a masked form;
-- `to_number` only with calls.store_numbers, `transcript`/`variables` only with
-- calls.store_transcripts. Recording URLs are never stored (they are short-lived credentials).
CREATE TABLE calls (
  call_id TEXT PRIMARY KEY,
  serial TEXT NOT NULL,            -- the box, from `from` (box:<serial>)
  agent_id INTEGER NOT NULL,
  status TEXT NOT NULL,            -- initiated, completed, failed (or what the vendor says)
  direction TEXT NOT NULL,
  started_at INTEGER NOT NULL,     -- the gateway's clock
  ended_at INTEGER,
  duration_sec INTEGER,
  to_hash TEXT NOT NULL,
  to_masked TEXT NOT NULL,
  to_number TEXT,
  recording TEXT,                  -- NULL not yet known, none, available, archived, expired
  transcript TEXT,
  variables TEXT,                  -- JSON object of strings
  first_seen INTEGER NOT NULL,     -- our clock
  checked_at INTEGER NOT NULL,     -- our clock: status last read (list or details)
  details_due INTEGER NOT NULL DEFAULT 0  -- 1: final, and its details (recording, transcript) still to read
);
CREATE INDEX calls_started ON calls(started_at);
CREATE INDEX calls_serial_started ON calls(serial, started_at);
CREATE INDEX calls_initiated ON calls(checked_at) WHERE status = 'initiated';
CREATE INDEX calls_details_due ON calls(ended_at) WHERE details_due = 1;

-- Per UTC day (floor(started_at / 86400000)), box and agent.
CREATE TABLE call_rollups (
  day INTEGER NOT NULL,
  serial TEXT NOT NULL,
  agent_id INTEGER NOT NULL,
  placed INTEGER NOT NULL,
  completed INTEGER NOT NULL,
  failed INTEGER NOT NULL,
  stuck INTEGER NOT NULL,
  talk_sec INTEGER NOT NULL,
  PRIMARY KEY (day, serial, agent_id)
) WITHOUT ROWID;

-- The reading position of the call list (one row).
CREATE TABLE call_sync (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  high_water INTEGER,              -- newest started_at of the last complete read
  synced_at INTEGER,               -- our clock: when the last complete read ended
  resume_top INTEGER,              -- an unfinished read: newest started_at it covered,
  resume_below INTEGER,            --   the oldest started_at it reached,
  resume_floor INTEGER             --   and the oldest it must reach
);
