-- boxwatch PostgreSQL schema 22: a replica's heartbeat carries the other process it found running
-- under its replica_id, as SQLite's migrations/0025_replica_conflict.sql.
ALTER TABLE replicas ADD COLUMN shared_host text;
ALTER TABLE replicas ADD COLUMN shared_pid integer;
