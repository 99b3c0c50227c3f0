-- boxwatch schema 1: current box state, poll cycles, compact samples, hourly rollups.
-- Times are milliseconds since the Unix epoch; `hour` is floor(time / 3600000).

-- Interned strings (firmware versions), referenced by id from sample rows.
CREATE TABLE strings (
  id INTEGER PRIMARY KEY,
  value TEXT NOT NULL UNIQUE
);

-- Small key/value facts about the database (e.g. how far raw samples were pruned).
CREATE TABLE meta (
  key TEXT PRIMARY KEY,
  value TEXT NOT NULL
) WITHOUT ROWID;

-- Current state of every box ever seen, plus the head of its open coverage segment.
CREATE TABLE boxes (
  id INTEGER PRIMARY KEY,              -- internal id, the compact key of samples and rollups
  serial TEXT NOT NULL UNIQUE,
  gateway_id INTEGER NOT NULL,
  name TEXT NOT NULL,
  connected INTEGER NOT NULL,
  battery INTEGER,
  signal INTEGER,
  firmware TEXT NOT NULL,
  last_seen INTEGER NOT NULL,
  registered_at INTEGER,
  location TEXT,
  ip TEXT,
  details_at INTEGER,
  first_seen INTEGER NOT NULL,
  last_polled INTEGER NOT NULL,        -- last cycle in which the box was in the device list
  missing_since INTEGER,               -- set while absent from the list
  seg_start INTEGER                    -- start of the open run of consecutive polls; NULL when closed
);

-- One row per poll cycle, failed ones included.
CREATE TABLE cycles (
  started_at INTEGER PRIMARY KEY,
  duration_ms INTEGER NOT NULL,
  requests INTEGER NOT NULL,
  outcome TEXT NOT NULL CHECK (outcome IN ('ok', 'failed')),
  error_code TEXT,
  error TEXT,
  boxes INTEGER NOT NULL,
  details_fetched INTEGER NOT NULL
);

-- One row per box and hour: covered pieces and value changes, delta-encoded (src/store/codec.ts).
-- Keyed by hour first: the open hour's rows sit together, pruning removes whole leading hours.
CREATE TABLE samples (
  hour INTEGER NOT NULL,
  box_id INTEGER NOT NULL REFERENCES boxes (id),
  data BLOB NOT NULL,
  PRIMARY KEY (hour, box_id)
) WITHOUT ROWID;

-- Hourly rollups, written when an hour closes. Keyed by box first: long histories read one range.
-- *_gap_ms columns are observed_ms minus the time with a non-null value (usually 0, stored free).
CREATE TABLE rollups (
  box_id INTEGER NOT NULL REFERENCES boxes (id),
  hour INTEGER NOT NULL,
  polls INTEGER NOT NULL,
  observed_ms INTEGER NOT NULL,
  disconnected_ms INTEGER NOT NULL,
  battery_gap_ms INTEGER NOT NULL,
  battery_min INTEGER,
  battery_max INTEGER,
  battery_mean_milli INTEGER,
  signal_gap_ms INTEGER NOT NULL,
  signal_min INTEGER,
  signal_max INTEGER,
  signal_mean_milli INTEGER,
  PRIMARY KEY (box_id, hour)
) WITHOUT ROWID;
