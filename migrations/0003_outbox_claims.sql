-- boxwatch schema 3: outbox claims and durable delivery-failure reports.
--
-- status gains 'sending': a delivery pass claimed the row until lease_until (a second pass skips
-- it; a claim whose process died expires). reported_at: when a dead row was reported on the other
-- notifiers as a delivery failure (NULL: not yet; rows that are not to be reported get it set
-- when they die).
ALTER TABLE outbox ADD COLUMN lease_until INTEGER;
ALTER TABLE outbox ADD COLUMN reported_at INTEGER;
-- Rows given up before this version were reported (or not) by the process that gave them up.
UPDATE outbox SET reported_at = done_at WHERE status = 'dead';
CREATE INDEX outbox_unreported ON outbox(notifier, id) WHERE status = 'dead' AND reported_at IS NULL;
