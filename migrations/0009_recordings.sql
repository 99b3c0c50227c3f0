-- boxwatch schema 9: the recording archive (docs/calls.md, "Recording archive"). Times are
-- milliseconds since the Unix epoch, on boxwatch's clock.
--
-- The recording state of a call stays in calls.recording (none, available, archived, expired):
-- the archive moves it from available to archived or expired. This table holds what the archive
-- needs besides: the retry schedule of a recording not archived yet, where an archived one is and
-- its checksums, and when a lost one was found expired. Recording URLs are never stored.
CREATE TABLE recordings (
  call_id TEXT PRIMARY KEY,
  serial TEXT NOT NULL,
  attempts INTEGER NOT NULL DEFAULT 0,     -- failed download attempts
  next_attempt_at INTEGER NOT NULL DEFAULT 0,
  last_error TEXT,                         -- the code of the last failure (e.g. ENOSPC, http_503)
  path TEXT,                               -- archived: the recording, relative to archive.dir
  sha256 TEXT,                             -- of the recording file (hex)
  bytes INTEGER,
  sidecar TEXT,                            -- the JSON sidecar, relative to archive.dir
  sidecar_sha256 TEXT,
  archived_at INTEGER,
  lost_at INTEGER                          -- found expired before it could be archived
);
CREATE INDEX recordings_archived ON recordings(archived_at) WHERE archived_at IS NOT NULL;
CREATE INDEX recordings_lost ON recordings(lost_at) WHERE lost_at IS NOT NULL;

-- The calls whose recording is still to be archived, oldest end first (they expire first).
CREATE INDEX calls_recording_available ON calls(ended_at) WHERE recording = 'available';
