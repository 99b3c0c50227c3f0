-- boxwatch PostgreSQL schema 6: replicas and per-account leases (src/cluster/leases.ts), as
-- SQLite's migrations/0012_leases.sql.
--
-- replicas: the `boxwatch run` processes sharing the database, with their heartbeat.
-- leases: one row per account once it was first leased: its holder (NULL: free), a fencing token
-- raised at every change of holder, and until when the holder may work without renewing. A
-- holder's write checks its token on this row FOR SHARE in its own transaction, so a takeover
-- (an UPDATE of the row) waits for a write in flight and every later write of the old holder fails.
-- outbox and notification_queue rows gain the account whose work queued them, so that they are
-- claimed by the account's leader; rows from before accounts belong to account 'default'.
CREATE TABLE replicas (
  id text PRIMARY KEY,
  host text NOT NULL,
  pid integer NOT NULL,
  started_at bigint NOT NULL,
  beat_at bigint NOT NULL
);

CREATE TABLE leases (
  account text PRIMARY KEY,
  holder text,
  token bigint NOT NULL,
  expires_at bigint NOT NULL,
  acquired_at bigint NOT NULL
);

ALTER TABLE outbox ADD COLUMN account text NOT NULL DEFAULT 'default';
ALTER TABLE notification_queue ADD COLUMN account text NOT NULL DEFAULT 'default';
CREATE INDEX outbox_account ON outbox (account, notifier, id) WHERE status IN ('pending', 'sending');
CREATE INDEX notification_queue_account ON notification_queue (account, notifier, id);
