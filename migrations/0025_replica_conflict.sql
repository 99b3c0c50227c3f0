-- boxwatch schema 25: a replica's heartbeat carries the other process it found running under its
-- replica_id (src/cluster/coordinator.ts; two `boxwatch run` given one cluster.replica_id by
-- mistake), so that `boxwatch status` can say so, not only the gauge boxwatch_replica_id_conflict
-- of the process itself. NULL: none found (and for rows written before this schema).
ALTER TABLE replicas ADD COLUMN shared_host TEXT;
ALTER TABLE replicas ADD COLUMN shared_pid INTEGER;
