-- boxwatch PostgreSQL schema 24: a replica's heartbeat carries the id of the archive directory it
-- archives into, as SQLite's migrations/0027_replica_archive.sql.
ALTER TABLE replicas ADD COLUMN archive text;
