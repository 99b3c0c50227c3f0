-- boxwatch schema 11: several gateway accounts (`gateways:`, docs/configuration.md).
--
-- account: the account a box belongs to and a poll cycle polled. A box of the account "default"
-- (a single `gateway:` section, and every box stored before this version) keeps its bare serial;
-- a box of any other account is stored under `ACCOUNT/SERIAL` (src/box-id.ts), so `serial` stays
-- the one key of a box. The stable views gain the column at their end.
ALTER TABLE boxes ADD COLUMN account TEXT NOT NULL DEFAULT 'default';
ALTER TABLE cycles ADD COLUMN account TEXT NOT NULL DEFAULT 'default';
CREATE INDEX cycles_account ON cycles (account, started_at);

DROP VIEW v_boxes;
CREATE VIEW v_boxes AS
SELECT serial, name, gateway_id, connected, battery, signal, firmware, location, ip,
       last_seen, registered_at, details_at, first_seen, last_polled, missing_since, account
FROM boxes;

DROP VIEW v_cycles;
CREATE VIEW v_cycles AS
SELECT started_at, duration_ms, requests, outcome, error_code, error, boxes, details_fetched, account
FROM cycles;
