-- boxwatch schema 2: alert state, alert history, silences, and the durable notification outbox.
-- Times are milliseconds since the Unix epoch. JSON columns hold plain engine data.

-- Every (rule, box) alert that is not at rest (pending, firing, resolved, or owing a notification).
-- `state` is the engine's AlertState as JSON; rule, serial and status are copied out for queries.
CREATE TABLE alert_states (
  key TEXT PRIMARY KEY,
  rule TEXT NOT NULL,
  serial TEXT NOT NULL,
  status TEXT NOT NULL,
  state TEXT NOT NULL
) WITHOUT ROWID;
CREATE INDEX alert_states_serial ON alert_states(serial);

-- The history of every state change.
CREATE TABLE alert_transitions (
  id INTEGER PRIMARY KEY,
  key TEXT NOT NULL,
  rule TEXT NOT NULL,
  serial TEXT NOT NULL,
  severity TEXT NOT NULL,
  from_status TEXT NOT NULL,
  to_status TEXT NOT NULL,
  at INTEGER NOT NULL,
  value TEXT,            -- JSON: number, string or null
  threshold TEXT,        -- JSON
  summary TEXT,
  held_back TEXT,        -- silenced, inhibited, gateway_down, or NULL
  held_by TEXT           -- JSON array of silence ids or inhibiting alert keys
);
CREATE INDEX alert_transitions_at ON alert_transitions(at);
CREATE INDEX alert_transitions_key ON alert_transitions(key, at);

CREATE TABLE silences (
  id TEXT PRIMARY KEY,
  boxes TEXT,            -- JSON array of serial globs, or NULL
  rules TEXT,            -- JSON array of rule names (globs), or NULL
  starts_at INTEGER NOT NULL,
  ends_at INTEGER NOT NULL,
  comment TEXT NOT NULL,
  created_by TEXT,
  created_at INTEGER NOT NULL
);
CREATE INDEX silences_ends_at ON silences(ends_at);

-- Notifications routed to a notifier and waiting out group_wait; one AlertItem (JSON) per row.
-- Written in the same transaction as the cycle and the transitions that caused them.
CREATE TABLE notification_queue (
  id INTEGER PRIMARY KEY,
  notifier TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  item TEXT NOT NULL
);
CREATE INDEX notification_queue_notifier ON notification_queue(notifier, id);

-- Messages to deliver, one notifier each (a group of items), with retry bookkeeping.
CREATE TABLE outbox (
  id INTEGER PRIMARY KEY,
  notifier TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  message TEXT NOT NULL,                  -- NotificationMessage as JSON
  status TEXT NOT NULL DEFAULT 'pending', -- pending, delivered, dead
  attempts INTEGER NOT NULL DEFAULT 0,
  next_attempt_at INTEGER NOT NULL,
  last_error TEXT,
  done_at INTEGER
);
CREATE INDEX outbox_pending ON outbox(notifier, status, next_attempt_at, id);
