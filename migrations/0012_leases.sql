-- boxwatch schema 12: replicas and per-account leases (src/cluster/leases.ts).
--
-- replicas: the `boxwatch run` processes sharing the database, with their heartbeat.
-- leases: one row per account once it was first leased: its holder (NULL: free), a fencing token
-- raised at every change of holder, and until when the holder may work without renewing.
-- outbox and notification_queue rows gain the account whose work queued them, so that they are
-- claimed by the account's leader; rows from before accounts belong to account 'default'.
CREATE TABLE replicas (
  id TEXT PRIMARY KEY,
  host TEXT NOT NULL,
  pid INTEGER NOT NULL,
  started_at INTEGER NOT NULL,
  beat_at INTEGER NOT NULL
);

CREATE TABLE leases (
  account TEXT PRIMARY KEY,
  holder TEXT,
  token INTEGER NOT NULL,
  expires_at INTEGER NOT NULL,
  acquired_at INTEGER NOT NULL
);

ALTER TABLE outbox ADD COLUMN account TEXT NOT NULL DEFAULT 'default';
ALTER TABLE notification_queue ADD COLUMN account TEXT NOT NULL DEFAULT 'default';
CREATE INDEX outbox_account ON outbox(account, notifier, id) WHERE status IN ('pending', 'sending');
CREATE INDEX notification_queue_account ON notification_queue(account, notifier, id);
