-- boxwatch PostgreSQL schema 18: which archive directory holds an archived recording's files, as
-- SQLite's migrations/0021_recording_archive_id.sql (the id of the archive.dir's marker file; NULL
-- for recordings archived before it).
ALTER TABLE recordings ADD COLUMN archive text;
CREATE INDEX recordings_archive ON recordings (archive, archived_at) WHERE archived_at IS NOT NULL;
