/**
 * RecordingsRepo on SQLite (migrations/0009_recordings.sql), built by SqliteStore
 * (`store.recordings`). It owns the `recordings` table, and the moves of `calls.recording` from
 * `available` to `archived` or `expired`, each in one transaction with its own row.
 */
import type Database from 'better-sqlite3';
import type { ArchivedRecording, ArchiveLastArchived, ArchiveRecordings, DueRecording, LostRecordings, RecordingsRepo } from '../../domain/recordings.js';
import { fromRow, type CallRow } from './calls.js';

const BATCH = 500;

/**
 * RecordingsRepo.otherArchives: a skip scan of the index recordings_archive (archive, archived_at),
 * one seek for each archive id to the next, one to its newest recording (tests read its plan).
 */
export const OTHER_ARCHIVES = `WITH RECURSIVE ids(archive) AS (
    SELECT (SELECT archive FROM recordings WHERE archived_at IS NOT NULL AND archive > '' ORDER BY archive LIMIT 1)
    UNION ALL
    SELECT (SELECT r.archive FROM recordings r WHERE r.archived_at IS NOT NULL AND r.archive > ids.archive ORDER BY r.archive LIMIT 1) FROM ids WHERE ids.archive IS NOT NULL
  )
  SELECT archive, (SELECT max(r.archived_at) FROM recordings r WHERE r.archived_at IS NOT NULL AND r.archive = ids.archive) AS lastArchivedAt
  FROM ids WHERE archive IS NOT NULL AND archive <> @archive`;

/** A row of `recordings` of an archived recording; the PostgreSQL store reads the same rows. */
export interface ArchivedRow {
  call_id: string;
  serial: string;
  path: string;
  sha256: string;
  bytes: number;
  sidecar: string;
  sidecar_sha256: string;
  archived_at: number;
  /** Absent from a database of before schema 21 (read by the CLI without migrating). */
  archive?: string | null;
}

export class SqliteRecordingsRepo implements RecordingsRepo {
  private readonly s;

  constructor(private readonly db: Database.Database) {
    const p = (sql: string): Database.Statement => db.prepare(sql);
    this.s = {
      due: p(
        `SELECT c.*, coalesce(r.attempts, 0) AS attempts FROM calls c LEFT JOIN recordings r ON r.call_id = c.call_id
         WHERE c.recording = 'available' AND coalesce(r.next_attempt_at, 0) <= ? ORDER BY c.ended_at, c.call_id LIMIT ?`,
      ),
      archived: p(
        `INSERT INTO recordings (call_id, serial, path, sha256, bytes, sidecar, sidecar_sha256, archived_at, archive, last_error)
         VALUES (@callId, @serial, @path, @sha256, @bytes, @sidecar, @sidecarSha256, @archivedAt, @archive, NULL)
         ON CONFLICT(call_id) DO UPDATE SET path = excluded.path, sha256 = excluded.sha256, bytes = excluded.bytes, sidecar = excluded.sidecar,
           sidecar_sha256 = excluded.sidecar_sha256, archived_at = excluded.archived_at, archive = excluded.archive, last_error = NULL`,
      ),
      setArchived: p(`UPDATE calls SET recording = 'archived' WHERE call_id = ?`),
      failed: p(
        `INSERT INTO recordings (call_id, serial, attempts, next_attempt_at, last_error) VALUES (?, ?, 1, ?, ?)
         ON CONFLICT(call_id) DO UPDATE SET attempts = recordings.attempts + 1, next_attempt_at = excluded.next_attempt_at, last_error = excluded.last_error`,
      ),
      lost: p(
        `INSERT INTO recordings (call_id, serial, lost_at) VALUES (?, ?, ?)
         ON CONFLICT(call_id) DO UPDATE SET lost_at = excluded.lost_at`,
      ),
      setExpired: p(`UPDATE calls SET recording = 'expired' WHERE call_id = ? AND recording = 'available'`),
      lostSince: p('SELECT serial, count(*) AS count, max(lost_at) AS last FROM recordings WHERE lost_at >= ? GROUP BY serial'),
      all: p('SELECT * FROM recordings WHERE archived_at IS NOT NULL ORDER BY path'),
      before: p('SELECT * FROM recordings WHERE archived_at IS NOT NULL AND archived_at < ? AND archive = ? ORDER BY archived_at LIMIT ?'),
      archives: p(
        'SELECT archive, count(*) AS recordings, max(archived_at) AS lastArchivedAt FROM recordings WHERE archived_at IS NOT NULL AND archive IS NOT NULL GROUP BY archive ORDER BY archive',
      ),
      otherArchives: p(OTHER_ARCHIVES),
      claim: p('UPDATE recordings SET archive = ? WHERE call_id = ? AND archived_at IS NOT NULL'),
      remove: p('DELETE FROM recordings WHERE call_id = ?'),
      orphans: p(
        `DELETE FROM recordings WHERE call_id IN (SELECT r.call_id FROM recordings r WHERE r.archived_at IS NULL
           AND NOT EXISTS (SELECT 1 FROM calls c WHERE c.call_id = r.call_id) LIMIT ${BATCH})`,
      ),
      totals: p('SELECT count(*) AS files, coalesce(sum(bytes), 0) AS bytes FROM recordings WHERE archived_at IS NOT NULL'),
    };
  }

  due(now: number, limit: number): DueRecording[] {
    if (limit <= 0) return [];
    return (this.s.due.all(now, limit) as (CallRow & { attempts: number })[]).map((r) => ({ call: fromRow(r), attempts: r.attempts }));
  }

  archived(r: ArchivedRecording): void {
    this.db.transaction(() => {
      this.s.archived.run(r);
      this.s.setArchived.run(r.callId);
    })();
  }

  failed(callId: string, serial: string, nextAttemptAt: number, error: string): void {
    this.s.failed.run(callId, serial, nextAttemptAt, error);
  }

  lost(callId: string, serial: string, now: number): void {
    this.db.transaction(() => {
      this.s.lost.run(callId, serial, now);
      this.s.setExpired.run(callId);
    })();
  }

  lostSince(since: number): Map<string, LostRecordings> {
    const rows = this.s.lostSince.all(since) as { serial: string; count: number; last: number }[];
    return new Map(rows.map((r) => [r.serial, { count: r.count, last: r.last }]));
  }

  archivedAll(): ArchivedRecording[] {
    return (this.s.all.all() as ArchivedRow[]).map(fromArchivedRow);
  }

  archivedBefore(before: number, limit: number, archive: string): ArchivedRecording[] {
    return (this.s.before.all(before, archive, limit) as ArchivedRow[]).map(fromArchivedRow);
  }

  archives(): ArchiveRecordings[] {
    return this.s.archives.all() as ArchiveRecordings[];
  }

  otherArchives(archive: string): ArchiveLastArchived[] {
    return (this.s.otherArchives.all({ archive }) as ArchiveLastArchived[]).sort((a, b) => (a.archive < b.archive ? -1 : 1));
  }

  claim(callIds: readonly string[], archive: string): void {
    this.db.transaction(() => {
      for (const id of callIds) this.s.claim.run(archive, id);
    })();
  }

  remove(callIds: readonly string[]): void {
    this.db.transaction(() => {
      for (const id of callIds) this.s.remove.run(id);
    })();
  }

  pruneOrphans(): number {
    let deleted = 0;
    for (;;) {
      const n = this.s.orphans.run().changes;
      deleted += n;
      if (n < BATCH) return deleted;
    }
  }

  totals(): { files: number; bytes: number } {
    return this.s.totals.get() as { files: number; bytes: number };
  }
}

export function fromArchivedRow(r: ArchivedRow): ArchivedRecording {
  return {
    callId: r.call_id,
    serial: r.serial,
    path: r.path,
    sha256: r.sha256,
    bytes: r.bytes,
    sidecar: r.sidecar,
    sidecarSha256: r.sidecar_sha256,
    archivedAt: r.archived_at,
    archive: r.archive ?? null,
  };
}
