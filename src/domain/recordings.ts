/**
 * The recordings repository: what the recording archive (src/archive/) writes and what the rules,
 * `boxwatch recordings verify` and /metrics read about archived and lost recordings. The
 * recording state itself stays in the calls table (`calls.recording`); this repository moves it
 * from `available` to `archived` or `expired`, in the same transaction as its own row. SQLite
 * implementation: sqlite/recordings.ts (schema: migrations/0009_recordings.sql).
 */
import type { Awaitable } from '../awaitable.js';
import type { CallRecord } from './calls.js';

/** A call whose recording is to be archived, and how many attempts failed so far. */
export interface DueRecording {
  call: CallRecord;
  attempts: number;
}

/** An archived recording as stored. Paths are relative to `archive.dir`. */
export interface ArchivedRecording {
  callId: string;
  serial: string;
  path: string;
  sha256: string;
  bytes: number;
  sidecar: string;
  sidecarSha256: string;
  /** boxwatch's clock. */
  archivedAt: number;
  /**
   * The archive directory its files are in: the id of that `archive.dir`'s marker file
   * (src/archive/identity.ts); null for recordings archived before archives had ids.
   */
  archive: string | null;
}

/** The archived recordings of one archive directory (`ArchivedRecording.archive`). */
export interface ArchiveRecordings {
  archive: string;
  recordings: number;
  /** boxwatch's clock: the newest one. */
  lastArchivedAt: number;
}

/** An archive directory and the time of its newest archived recording (RecordingsRepo.otherArchives). */
export type ArchiveLastArchived = Pick<ArchiveRecordings, 'archive' | 'lastArchivedAt'>;

/** Recordings of one box found expired before they could be archived. */
export interface LostRecordings {
  count: number;
  /** boxwatch's clock: the last one found. */
  last: number;
}

export interface RecordingsRepo {
  /** Calls whose recording is `available` and whose next attempt is due at `now`, oldest end first. */
  due(now: number, limit: number): Awaitable<DueRecording[]>;
  /** The recording is in the archive: `calls.recording` becomes `archived`. */
  archived(recording: ArchivedRecording): Awaitable<void>;
  /** An attempt failed: counted, with the next attempt's time and the failure's code. */
  failed(callId: string, serial: string, nextAttemptAt: number, error: string): Awaitable<void>;
  /** The recording expired before it was archived: `calls.recording` becomes `expired`. */
  lost(callId: string, serial: string, now: number): Awaitable<void>;
  /** Per box, the recordings found expired at or after `since`. */
  lostSince(since: number): Awaitable<Map<string, LostRecordings>>;
  /** Every archived recording, in path order. */
  archivedAll(): Awaitable<ArchivedRecording[]>;
  /** Archived recordings of archive directory `archive` archived before `before`, oldest first, at most `limit`. */
  archivedBefore(before: number, limit: number, archive: string): Awaitable<ArchivedRecording[]>;
  /** Per archive directory, its archived recordings (those archived before archives had ids not counted), by archive id. */
  archives(): Awaitable<ArchiveRecordings[]>;
  /**
   * Each archive directory other than `archive` that archived recordings are listed in, with the
   * time of its newest (those archived before archives had ids not counted), by id: the probe of
   * every archive pass, two index lookups per archive directory listed (a handful), whatever the
   * archive's size (`archives` counts their recordings).
   */
  otherArchives(archive: string): Awaitable<ArchiveLastArchived[]>;
  /** Records that the archived recordings `callIds` are in archive directory `archive` (their files were found there), whatever archive they were listed in. */
  claim(callIds: readonly string[], archive: string): Awaitable<void>;
  /** Forgets archived recordings whose files retention deleted (`calls.recording` stays `archived`). */
  remove(callIds: readonly string[]): Awaitable<void>;
  /** Forgets retry and loss records of calls no longer in the calls table (pruned by storage retention); returns how many. */
  pruneOrphans(): Awaitable<number>;
  /** Files and bytes of the recordings in the archive (sidecars not counted). */
  totals(): Awaitable<{ files: number; bytes: number }>;
}
