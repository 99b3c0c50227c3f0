-- boxwatch PostgreSQL schema 1: the alert repositories (alert state, alert history, silences,
-- the group_wait queue and the durable outbox). The same columns as the SQLite tables
-- (migrations/0002_alerts.sql, 0003_outbox_claims.sql), so one row mapping serves both
-- (src/store/repository-rows.ts). Times are milliseconds since the Unix epoch (bigint). JSON
-- columns are text holding plain engine data, read the one tolerant way (src/store/damaged-rows.ts).
-- One difference: an alert's key joins rule and serial with a NUL character, which PostgreSQL text
-- cannot hold, so alert_states and alert_transitions keep rule and serial only and the key is
-- derived from them when read (src/store/postgres/alert-states.ts).

CREATE TABLE alert_states (
  rule text NOT NULL,
  serial text NOT NULL,
  status text NOT NULL,
  state text NOT NULL,
  PRIMARY KEY (rule, serial)
);
CREATE INDEX alert_states_serial ON alert_states (serial);

CREATE TABLE alert_transitions (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  rule text NOT NULL,
  serial text NOT NULL,
  severity text NOT NULL,
  from_status text NOT NULL,
  to_status text NOT NULL,
  at bigint NOT NULL,
  value text,
  threshold text,
  summary text,
  held_back text,
  held_by text
);
CREATE INDEX alert_transitions_at ON alert_transitions (at, id);
CREATE INDEX alert_transitions_serial ON alert_transitions (serial, at, id);

CREATE TABLE silences (
  id text PRIMARY KEY,
  boxes text,
  rules text,
  starts_at bigint NOT NULL,
  ends_at bigint NOT NULL,
  comment text NOT NULL,
  created_by text,
  created_at bigint NOT NULL
);
CREATE INDEX silences_ends_at ON silences (ends_at);

CREATE TABLE notification_queue (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  notifier text NOT NULL,
  created_at bigint NOT NULL,
  item text NOT NULL
);
CREATE INDEX notification_queue_notifier ON notification_queue (notifier, id);

-- status: pending, sending (claimed until lease_until), delivered, dead.
-- reported_at: when a dead row was reported on the other notifiers (NULL: not yet).
CREATE TABLE outbox (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  notifier text NOT NULL,
  created_at bigint NOT NULL,
  message text NOT NULL,
  status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'sending', 'delivered', 'dead')),
  attempts integer NOT NULL DEFAULT 0,
  next_attempt_at bigint NOT NULL,
  last_error text,
  done_at bigint,
  lease_until bigint,
  reported_at bigint
);
CREATE INDEX outbox_waiting ON outbox (notifier, id) WHERE status IN ('pending', 'sending');
CREATE INDEX outbox_unreported ON outbox (notifier, id) WHERE status = 'dead' AND reported_at IS NULL;
CREATE INDEX outbox_created ON outbox (created_at);
