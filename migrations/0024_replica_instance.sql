-- boxwatch schema 24: a replica's heartbeat carries a random token of its process's life
-- (src/cluster/leases.ts, `instance`), so that two `boxwatch run` processes given one
-- cluster.replica_id by mistake tell each other apart: each finds at its heartbeat that the other
-- beat under its id since its own last one (src/cluster/coordinator.ts). NULL for rows written
-- before this schema.
ALTER TABLE replicas ADD COLUMN instance TEXT;
