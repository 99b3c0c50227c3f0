/**
 * RecordingsRepo on PostgreSQL (migrations/postgres/0003_calls.sql), built by PostgresStore
 * (`store.recordings`), answering with Promises. The same rows and rules as SQLite
 * (src/store/sqlite/recordings.ts, whose row mappings it reuses): it owns the `recordings` table,
 * and the moves of `calls.recording` from `available` to `archived` or `expired`, each in one
 * transaction with its own row.
 */
import type { ArchivedRecording, ArchiveLastArchived, ArchiveRecordings, DueRecording, LostRecordings, RecordingsRepo } from '../../domain/recordings.js';
import { fromRow, type CallRow } from '../sqlite/calls.js';
import { fromArchivedRow, type ArchivedRow } from '../sqlite/recordings.js';
import type { PostgresDatabase } from './database.js';

const BATCH = 500;

/** RecordingsRepo.otherArchives: as SQLite's (a skip scan of the index recordings_archive; tests read its plan). */
export const OTHER_ARCHIVES = `WITH RECURSIVE ids(archive) AS (
    SELECT (SELECT archive FROM recordings WHERE archived_at IS NOT NULL AND archive > '' ORDER BY archive LIMIT 1)
    UNION ALL
    SELECT (SELECT r.archive FROM recordings r WHERE r.archived_at IS NOT NULL AND r.archive > ids.archive ORDER BY r.archive LIMIT 1) FROM ids WHERE ids.archive IS NOT NULL
  )
  SELECT archive, (SELECT max(r.archived_at) FROM recordings r WHERE r.archived_at IS NOT NULL AND r.archive = ids.archive) AS "lastArchivedAt"
  FROM ids WHERE archive IS NOT NULL AND archive <> $1`;

export class PostgresRecordingsRepo implements RecordingsRepo {
  constructor(private readonly db: PostgresDatabase) {}

  async due(now: number, limit: number): Promise<DueRecording[]> {
    if (limit <= 0) return [];
    const rows = await this.db.query<CallRow & { attempts: number }>(
      `SELECT c.*, coalesce(r.attempts, 0) AS attempts FROM calls c LEFT JOIN recordings r ON r.call_id = c.call_id
       WHERE c.recording = 'available' AND coalesce(r.next_attempt_at, 0) <= $1 ORDER BY c.ended_at NULLS FIRST, c.call_id COLLATE "C" LIMIT $2`,
      [now, limit],
    );
    return rows.map((r) => ({ call: fromRow(r), attempts: r.attempts }));
  }

  async archived(r: ArchivedRecording): Promise<void> {
    await this.db.transaction(async (tx) => {
      await tx.query(
        `INSERT INTO recordings (call_id, serial, path, sha256, bytes, sidecar, sidecar_sha256, archived_at, archive, last_error)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, NULL)
         ON CONFLICT (call_id) DO UPDATE SET path = excluded.path, sha256 = excluded.sha256, bytes = excluded.bytes, sidecar = excluded.sidecar,
           sidecar_sha256 = excluded.sidecar_sha256, archived_at = excluded.archived_at, archive = excluded.archive, last_error = NULL`,
        [r.callId, r.serial, r.path, r.sha256, r.bytes, r.sidecar, r.sidecarSha256, r.archivedAt, r.archive],
      );
      await tx.query(`UPDATE calls SET recording = 'archived' WHERE call_id = $1`, [r.callId]);
    });
  }

  async failed(callId: string, serial: string, nextAttemptAt: number, error: string): Promise<void> {
    await this.db.query(
      `INSERT INTO recordings (call_id, serial, attempts, next_attempt_at, last_error) VALUES ($1, $2, 1, $3, $4)
       ON CONFLICT (call_id) DO UPDATE SET attempts = recordings.attempts + 1, next_attempt_at = excluded.next_attempt_at, last_error = excluded.last_error`,
      [callId, serial, nextAttemptAt, error],
    );
  }

  async lost(callId: string, serial: string, now: number): Promise<void> {
    await this.db.transaction(async (tx) => {
      await tx.query('INSERT INTO recordings (call_id, serial, lost_at) VALUES ($1, $2, $3) ON CONFLICT (call_id) DO UPDATE SET lost_at = excluded.lost_at', [callId, serial, now]);
      await tx.query(`UPDATE calls SET recording = 'expired' WHERE call_id = $1 AND recording = 'available'`, [callId]);
    });
  }

  async lostSince(since: number): Promise<Map<string, LostRecordings>> {
    const rows = await this.db.query<{ serial: string; count: number; last: number }>(
      'SELECT serial, count(*)::bigint AS count, max(lost_at) AS last FROM recordings WHERE lost_at >= $1 GROUP BY serial',
      [since],
    );
    return new Map(rows.map((r) => [r.serial, { count: r.count, last: r.last }]));
  }

  async archivedAll(): Promise<ArchivedRecording[]> {
    return (await this.db.query<ArchivedRow>('SELECT * FROM recordings WHERE archived_at IS NOT NULL ORDER BY path COLLATE "C"')).map(fromArchivedRow);
  }

  async archivedBefore(before: number, limit: number, archive: string): Promise<ArchivedRecording[]> {
    const rows = await this.db.query<ArchivedRow>('SELECT * FROM recordings WHERE archived_at IS NOT NULL AND archived_at < $1 AND archive = $2 ORDER BY archived_at LIMIT $3', [before, archive, limit]);
    return rows.map(fromArchivedRow);
  }

  async archives(): Promise<ArchiveRecordings[]> {
    return this.db.query<ArchiveRecordings>(
      `SELECT archive, count(*)::bigint AS recordings, max(archived_at) AS "lastArchivedAt" FROM recordings
       WHERE archived_at IS NOT NULL AND archive IS NOT NULL GROUP BY archive ORDER BY archive COLLATE "C"`,
    );
  }

  async otherArchives(archive: string): Promise<ArchiveLastArchived[]> {
    return (await this.db.query<ArchiveLastArchived>(OTHER_ARCHIVES, [archive])).sort((a, b) => (a.archive < b.archive ? -1 : 1));
  }

  async claim(callIds: readonly string[], archive: string): Promise<void> {
    if (callIds.length === 0) return;
    await this.db.query('UPDATE recordings SET archive = $1 WHERE call_id = ANY($2::text[]) AND archived_at IS NOT NULL', [archive, callIds]);
  }

  async remove(callIds: readonly string[]): Promise<void> {
    if (callIds.length === 0) return;
    await this.db.query('DELETE FROM recordings WHERE call_id = ANY($1::text[])', [callIds]);
  }

  /** In batches of 500 rows, each its own statement. */
  async pruneOrphans(): Promise<number> {
    let deleted = 0;
    for (;;) {
      const rows = await this.db.query<{ call_id: string }>(
        `DELETE FROM recordings WHERE call_id IN (SELECT r.call_id FROM recordings r WHERE r.archived_at IS NULL
           AND NOT EXISTS (SELECT 1 FROM calls c WHERE c.call_id = r.call_id) LIMIT $1) RETURNING call_id`,
        [BATCH],
      );
      deleted += rows.length;
      if (rows.length < BATCH) return deleted;
    }
  }

  async totals(): Promise<{ files: number; bytes: number }> {
    const [row] = await this.db.query<{ files: number; bytes: number }>(
      'SELECT count(*)::bigint AS files, coalesce(sum(bytes), 0)::bigint AS bytes FROM recordings WHERE archived_at IS NOT NULL',
    );
    return row ?? { files: 0, bytes: 0 };
  }
}
