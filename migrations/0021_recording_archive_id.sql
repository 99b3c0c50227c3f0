-- boxwatch schema 21: which archive directory holds an archived recording's files
-- (docs/operations.md, "The recording archive with replicas"). `archive` is the id in the marker
-- file (.boxwatch-archive) of the archive.dir the recording was written into; NULL for recordings
-- archived before this schema (claimed by the first replica that finds their files in its
-- directory). Retention deletes only the recordings of its own archive: a replica whose archive.dir
-- is not shared with the others never forgets recordings whose files are on another disk.
ALTER TABLE recordings ADD COLUMN archive TEXT;
CREATE INDEX recordings_archive ON recordings(archive, archived_at) WHERE archived_at IS NOT NULL;
