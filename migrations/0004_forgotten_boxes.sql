-- boxwatch schema 4: forgotten boxes (`boxwatch box forget SERIAL`, the missing rule's forget_after).
--
-- forgotten_at: when the box was forgotten (NULL: it is part of the fleet). A forgotten box keeps
-- its history but leaves the fleet (status, metrics, the API, alert evaluation) until the gateway
-- lists it again, which clears the column.
ALTER TABLE boxes ADD COLUMN forgotten_at INTEGER;
