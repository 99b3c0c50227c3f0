-- boxwatch PostgreSQL schema 21: a replica's heartbeat carries a random token of its process's
-- life, as SQLite's migrations/0024_replica_instance.sql.
ALTER TABLE replicas ADD COLUMN instance text;
