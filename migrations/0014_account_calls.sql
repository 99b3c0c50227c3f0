-- boxwatch schema 14: calls of several gateway accounts (docs/calls.md, "Several accounts").
--
-- A call of the account "default" keeps the gateway's call id and the box's bare serial; a call of
-- any other account is stored as ACCOUNT/CALL_ID from box ACCOUNT/SERIAL (src/box-id.ts), in
-- calls, call_rollups, test_calls and recordings alike. `calls.account` says which account's
-- call sync owns the row (whose gateway its details are read from). Each account reads its own
-- call list: call_sync gets one row per account; the row of before (id 1) becomes "default"'s.
ALTER TABLE calls ADD COLUMN account TEXT NOT NULL DEFAULT 'default';

CREATE TABLE call_sync_accounts (
  account TEXT PRIMARY KEY,
  high_water INTEGER,
  synced_at INTEGER,
  resume_top INTEGER,
  resume_below INTEGER,
  resume_floor INTEGER
);
INSERT INTO call_sync_accounts (account, high_water, synced_at, resume_top, resume_below, resume_floor)
SELECT 'default', high_water, synced_at, resume_top, resume_below, resume_floor FROM call_sync;
DROP TABLE call_sync;
ALTER TABLE call_sync_accounts RENAME TO call_sync;
