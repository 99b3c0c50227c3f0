-- boxwatch schema 27: a replica's heartbeat carries the id of the archive directory it archives
-- recordings into (src/archive/identity.ts, the marker's id), so that each replica tells whether
-- another live replica archives into another directory (archive.dir not shared: archive_failing,
-- `unshared_dir`; src/archive/archiver.ts). NULL: no archive, not made yet, or a row written
-- before this schema.
ALTER TABLE replicas ADD COLUMN archive TEXT;
