-- boxwatch PostgreSQL schema 4: several gateway accounts, as SQLite's migrations/0011_accounts.sql.
-- A box of the account "default" keeps its bare serial; others are stored as ACCOUNT/SERIAL.
ALTER TABLE boxes ADD COLUMN account text NOT NULL DEFAULT 'default';
ALTER TABLE cycles ADD COLUMN account text NOT NULL DEFAULT 'default';
CREATE INDEX cycles_account ON cycles (account, started_at);
