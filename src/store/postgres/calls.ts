/**
 * CallsRepo on PostgreSQL (migrations/postgres/0003_calls.sql), built by PostgresStore
 * (`store.calls`), answering with Promises. The same rows and rules as SQLite
 * (src/store/sqlite/calls.ts, whose row mapping it reuses): rollups are recomputed from the calls
 * of every (day, box, agent) a write touches, so they never drift from the rows.
 */
import { dayOf, DAY_MS, type CallRecord, type CallRollup, type CallsRepo, type CallStats, type CallsWrite, type CallSyncState, type FailureCount, type ListedCall, type RecordingState, type StuckCalls } from '../../domain/calls.js';
import { AGENT_KEY, bindings, fromRow, median, type CallRow } from '../sqlite/calls.js';
import type { PostgresDatabase } from './database.js';

const BATCH = 500;
/** The columns of an upsert, in the order of the `bindings` keys they take. */
const UPSERT_KEYS = ['callId', 'serial', 'agentId', 'status', 'direction', 'startedAt', 'endedAt', 'durationSec', 'toHash', 'toMasked', 'toNumber', 'recording', 'transcript', 'variables', 'now', 'detailsDue', 'account'];
const UPSERT = `INSERT INTO calls (call_id, serial, agent_id, status, direction, started_at, ended_at, duration_sec, to_hash, to_masked, to_number,
    recording, transcript, variables, first_seen, checked_at, details_due, account)
  VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $15, $16, $17)
  ON CONFLICT (call_id) DO UPDATE SET
    status = excluded.status, ended_at = excluded.ended_at, duration_sec = excluded.duration_sec, checked_at = excluded.checked_at,
    recording = CASE WHEN calls.recording IN ('archived', 'expired') THEN calls.recording ELSE coalesce(excluded.recording, calls.recording) END,
    transcript = coalesce(excluded.transcript, calls.transcript),
    variables = coalesce(excluded.variables, calls.variables),
    details_due = CASE WHEN excluded.recording IS NOT NULL OR calls.recording IS NOT NULL THEN 0 ELSE greatest(calls.details_due, excluded.details_due) END`;
const ROLLUP = `INSERT INTO call_rollups (day, serial, agent_id, placed, completed, failed, stuck, talk_sec)
  SELECT $1, $2, $3, count(*), count(*) FILTER (WHERE status = 'completed'), count(*) FILTER (WHERE status = 'failed'),
    count(*) FILTER (WHERE status = 'initiated' AND started_at < $6), coalesce(sum(duration_sec), 0)
  FROM calls WHERE serial = $2 AND started_at >= $4 AND started_at < $5 AND agent_id = $3
  ON CONFLICT (day, serial, agent_id) DO UPDATE SET placed = excluded.placed, completed = excluded.completed, failed = excluded.failed,
    stuck = excluded.stuck, talk_sec = excluded.talk_sec`;
const FINAL = "status IN ('completed', 'failed')";

function statsSql(key: string): string {
  return `SELECT ${key} AS key, count(*)::bigint AS placed, count(*) FILTER (WHERE status = 'completed')::bigint AS completed,
      count(*) FILTER (WHERE status = 'failed')::bigint AS failed, count(*) FILTER (WHERE status = 'initiated' AND started_at < $2)::bigint AS stuck,
      count(*) FILTER (WHERE recording = 'archived')::bigint AS archived, count(*) FILTER (WHERE recording = 'expired')::bigint AS lost,
      count(*) FILTER (WHERE call_id IN (SELECT call_id FROM test_calls WHERE call_id IS NOT NULL))::bigint AS test
    FROM calls WHERE started_at >= $1 GROUP BY 1 ORDER BY (${key}) COLLATE "C"`;
}

export class PostgresCallsRepo implements CallsRepo {
  constructor(private readonly db: PostgresDatabase) {}

  async syncState(account: string): Promise<CallSyncState> {
    const [row] = await this.db.query<{ high_water: number | null; synced_at: number | null; resume_top: number | null; resume_below: number | null; resume_floor: number | null }>(
      'SELECT high_water, synced_at, resume_top, resume_below, resume_floor FROM call_sync WHERE account = $1',
      [account],
    );
    if (row === undefined) return { highWater: null, syncedAt: null, resume: null };
    const resume =
      row.resume_top !== null && row.resume_below !== null && row.resume_floor !== null ? { top: row.resume_top, below: row.resume_below, floor: row.resume_floor } : null;
    return { highWater: row.high_water, syncedAt: row.synced_at, resume };
  }

  async known(callIds: readonly string[]): Promise<Map<string, { status: string; recording: RecordingState | null }>> {
    const rows = await this.db.query<{ call_id: string; status: string; recording: RecordingState | null }>('SELECT call_id, status, recording FROM calls WHERE call_id = ANY($1::text[])', [callIds]);
    return new Map(rows.map((r) => [r.call_id, { status: r.status, recording: r.recording }]));
  }

  async write(w: CallsWrite): Promise<void> {
    await this.db.transaction(async (tx) => {
      const touched = new Map<string, { day: number; serial: string; agentId: number }>();
      const touch = (startedAt: number, serial: string, agentId: number): void => {
        const day = dayOf(startedAt);
        touched.set(`${day}\u0000${serial}\u0000${agentId}`, { day, serial, agentId });
      };
      for (const c of w.upserts) {
        const b = bindings(c, w.now, w.account);
        await tx.query(UPSERT, UPSERT_KEYS.map((k) => b[k]));
        touch(c.startedAt, c.serial, c.agentId);
      }
      if (w.checked.length > 0) {
        const keys = await tx.query<{ started_at: number; serial: string; agent_id: number }>('UPDATE calls SET checked_at = $1 WHERE call_id = ANY($2::text[]) RETURNING started_at, serial, agent_id', [
          w.now,
          w.checked,
        ]);
        for (const k of keys) touch(k.started_at, k.serial, k.agent_id);
      }
      for (const k of touched.values()) await tx.query(ROLLUP, [k.day, k.serial, k.agentId, k.day * DAY_MS, (k.day + 1) * DAY_MS, w.now - w.stuckAfterMs]);
      const r = w.sync.resume;
      await tx.query(
        `INSERT INTO call_sync (account, high_water, synced_at, resume_top, resume_below, resume_floor) VALUES ($6, $1, $2, $3, $4, $5)
         ON CONFLICT (account) DO UPDATE SET high_water = excluded.high_water, synced_at = excluded.synced_at,
           resume_top = excluded.resume_top, resume_below = excluded.resume_below, resume_floor = excluded.resume_floor`,
        [w.sync.highWater, w.sync.syncedAt, r?.top ?? null, r?.below ?? null, r?.floor ?? null, w.account],
      );
    });
  }

  async dueForDetails(limit: number, options: { account: string; checkedBefore: number; initiatedSince: number }): Promise<CallRecord[]> {
    if (limit <= 0) return [];
    const due = (await this.db.query<CallRow>('SELECT * FROM calls WHERE details_due = 1 AND account = $2 ORDER BY ended_at LIMIT $1', [limit, options.account])).map(fromRow);
    if (due.length >= limit) return due;
    const open = await this.db.query<CallRow>("SELECT * FROM calls WHERE status = 'initiated' AND account = $4 AND checked_at < $1 AND started_at >= $2 ORDER BY checked_at LIMIT $3", [
      options.checkedBefore,
      options.initiatedSince,
      limit - due.length,
      options.account,
    ]);
    return [...due, ...open.map(fromRow)];
  }

  async countSince(since: number, account: string): Promise<number> {
    return (await this.db.query<{ n: number }>('SELECT count(*)::bigint AS n FROM calls WHERE started_at >= $1 AND account = $2', [since, account]))[0]?.n ?? 0;
  }

  /** With the test_calls entry that placed the call, if one did (as SQLite). */
  async list(options: { serial?: string; since?: number; until?: number; limit: number }): Promise<ListedCall[]> {
    const listed = 'SELECT c.*, t.entry AS test_entry FROM calls c LEFT JOIN test_calls t ON t.call_id = c.call_id';
    const order = 'ORDER BY c.started_at DESC, c.call_id COLLATE "C" DESC';
    const since = options.since ?? 0;
    const until = options.until ?? Number.MAX_SAFE_INTEGER;
    const rows =
      options.serial === undefined
        ? await this.db.query<CallRow & { test_entry: string | null }>(`${listed} WHERE c.started_at >= $1 AND c.started_at < $2 ${order} LIMIT $3`, [since, until, options.limit])
        : await this.db.query<CallRow & { test_entry: string | null }>(`${listed} WHERE c.serial = $1 AND c.started_at >= $2 AND c.started_at < $3 ${order} LIMIT $4`, [
            options.serial,
            since,
            until,
            options.limit,
          ]);
    return rows.map((r) => ({ ...fromRow(r), testCall: r.test_entry }));
  }

  async stats(options: { since: number; by: 'box' | 'agent'; stuckBefore: number }): Promise<CallStats[]> {
    const key = options.by === 'box' ? 'serial' : AGENT_KEY;
    const rows = await this.db.query<Omit<CallStats, 'medianDurationSec'>>(statsSql(key), [options.since, options.stuckBefore]);
    const durations = new Map<string, number[]>();
    for (const r of await this.db.query<{ key: string; d: number }>(
      `SELECT ${key} AS key, duration_sec AS d FROM calls WHERE started_at >= $1 AND status = 'completed' AND duration_sec IS NOT NULL ORDER BY (${key}) COLLATE "C", 2`,
      [options.since],
    )) {
      const list = durations.get(r.key);
      if (list) list.push(r.d);
      else durations.set(r.key, [r.d]);
    }
    return rows.map((r) => ({ ...r, medianDurationSec: median(durations.get(r.key)) }));
  }

  failureBuckets(serial: string, from: number, to: number, bucketMs: number): Promise<{ index: number; calls: number; failed: number }[]> {
    return this.db.query(
      `SELECT ((started_at - $2) / $4)::bigint AS "index", count(*)::bigint AS calls, count(*) FILTER (WHERE status = 'failed')::bigint AS failed FROM calls
       WHERE serial = $1 AND started_at >= $2 AND started_at < $3 AND ${FINAL} GROUP BY 1 ORDER BY 1`,
      [serial, from, to, bucketMs],
    );
  }

  async rollups(fromDay: number, toDay: number): Promise<CallRollup[]> {
    const rows = await this.db.query<{ day: number; serial: string; agent_id: number; placed: number; completed: number; failed: number; stuck: number; talk_sec: number }>(
      'SELECT * FROM call_rollups WHERE day >= $1 AND day <= $2 ORDER BY day, serial COLLATE "C", agent_id',
      [fromDay, toDay],
    );
    return rows.map((r) => ({ day: r.day, serial: r.serial, agentId: r.agent_id, placed: r.placed, completed: r.completed, failed: r.failed, stuck: r.stuck, talkSec: r.talk_sec }));
  }

  async failureCounts(options: { since: number; lastCalls?: number }): Promise<Map<string, FailureCount>> {
    const counts = "SELECT serial, count(*)::bigint AS calls, count(*) FILTER (WHERE status = 'failed')::bigint AS failed FROM";
    const rows =
      options.lastCalls === undefined
        ? await this.db.query<{ serial: string; calls: number; failed: number }>(`${counts} calls WHERE started_at >= $1 AND ${FINAL} GROUP BY serial`, [options.since])
        : await this.db.query<{ serial: string; calls: number; failed: number }>(
            `${counts} (SELECT serial, status, row_number() OVER (PARTITION BY serial ORDER BY started_at DESC, call_id COLLATE "C" DESC) AS n
               FROM calls WHERE started_at >= $1 AND ${FINAL}) AS c WHERE n <= $2 GROUP BY serial`,
            [options.since, options.lastCalls],
          );
    return new Map(rows.map((r) => [r.serial, { calls: r.calls, failed: r.failed }]));
  }

  async stuckCalls(startedBefore: number, startedAfter: number): Promise<Map<string, StuckCalls>> {
    const rows = await this.db.query<{ serial: string; count: number; oldest: number }>(
      "SELECT serial, count(*)::bigint AS count, min(started_at) AS oldest FROM calls WHERE status = 'initiated' AND started_at < $1 AND started_at >= $2 GROUP BY serial",
      [startedBefore, startedAfter],
    );
    return new Map(rows.map((r) => [r.serial, { count: r.count, oldest: r.oldest }]));
  }

  async lastCallAt(): Promise<Map<string, number>> {
    return new Map((await this.db.query<{ serial: string; at: number }>('SELECT serial, max(started_at) AS at FROM calls GROUP BY serial')).map((r) => [r.serial, r.at]));
  }

  async dailyCallers(fromDay: number, toDay: number): Promise<Set<string>> {
    const rows = await this.db.query<{ serial: string }>(
      `SELECT serial FROM (SELECT serial, day FROM call_rollups WHERE day >= $1 AND day <= $2 GROUP BY serial, day HAVING sum(placed) > 0) AS d
       GROUP BY serial HAVING count(*) = $3`,
      [fromDay, toDay, toDay - fromDay + 1],
    );
    return new Set(rows.map((r) => r.serial));
  }

  async prune(callsBefore: number, rollupsBefore: number, maxRows = Number.POSITIVE_INFINITY): Promise<number> {
    let deleted = 0;
    for (const [sql, arg] of [
      [`DELETE FROM calls WHERE call_id IN (SELECT call_id FROM calls WHERE started_at < $1 LIMIT ${BATCH}) RETURNING 1`, callsBefore],
      [`DELETE FROM call_rollups WHERE (day, serial, agent_id) IN (SELECT day, serial, agent_id FROM call_rollups WHERE day < $1 LIMIT ${BATCH}) RETURNING 1`, dayOf(rollupsBefore)],
    ] as const) {
      for (;;) {
        if (deleted >= maxRows) return deleted;
        const n = (await this.db.query(sql, [arg])).length;
        deleted += n;
        if (n < BATCH) break;
      }
    }
    return deleted;
  }
}
