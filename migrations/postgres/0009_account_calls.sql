-- boxwatch PostgreSQL schema 9: calls of several gateway accounts, as SQLite's
-- migrations/0014_account_calls.sql: `calls.account`, and one call_sync row per account (the row
-- of before becomes the account "default"'s).
ALTER TABLE calls ADD COLUMN account text NOT NULL DEFAULT 'default';
ALTER TABLE call_sync ADD COLUMN account text NOT NULL DEFAULT 'default';
ALTER TABLE call_sync DROP CONSTRAINT call_sync_pkey;
ALTER TABLE call_sync DROP CONSTRAINT IF EXISTS call_sync_id_check;
ALTER TABLE call_sync DROP COLUMN id;
ALTER TABLE call_sync ADD PRIMARY KEY (account);
