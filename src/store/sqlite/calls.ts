/**
 * CallsRepo on SQLite (migrations/0006_calls.sql), built by SqliteStore (`store.calls`). It shares the store's connection and owns the
 * `calls`, `call_rollups` and `call_sync` tables; nothing else writes them. Rollups are recomputed
 * from the calls of every (day, box, agent) a write touches, so they never drift from the rows.
 */
import type Database from 'better-sqlite3';
import { dayOf, DAY_MS, type CallObservation, type CallRecord, type CallRollup, type CallsRepo, type CallStats, type CallsWrite, type CallSyncState, type FailureCount, type ListedCall, type RecordingState, type StuckCalls } from '../../domain/calls.js';
import { DEFAULT_ACCOUNT } from '../../box-id.js';

const BATCH = 500;
const LISTED = 'SELECT c.*, t.entry AS test_entry FROM calls c LEFT JOIN test_calls t ON t.call_id = c.call_id';

export interface CallRow {
  call_id: string;
  serial: string;
  agent_id: number;
  status: string;
  direction: string;
  started_at: number;
  ended_at: number | null;
  duration_sec: number | null;
  to_hash: string;
  to_masked: string;
  to_number: string | null;
  recording: RecordingState | null;
  transcript: string | null;
  variables: string | null;
}

export class SqliteCallsRepo implements CallsRepo {
  private readonly s;

  constructor(private readonly db: Database.Database) {
    const p = (sql: string): Database.Statement => db.prepare(sql);
    this.s = {
      sync: p('SELECT high_water, synced_at, resume_top, resume_below, resume_floor FROM call_sync WHERE account = ?'),
      setSync: p(
        `INSERT INTO call_sync (account, high_water, synced_at, resume_top, resume_below, resume_floor) VALUES (?, ?, ?, ?, ?, ?)
         ON CONFLICT(account) DO UPDATE SET high_water = excluded.high_water, synced_at = excluded.synced_at,
           resume_top = excluded.resume_top, resume_below = excluded.resume_below, resume_floor = excluded.resume_floor`,
      ),
      upsert: p(
        `INSERT INTO calls (call_id, serial, agent_id, status, direction, started_at, ended_at, duration_sec, to_hash, to_masked, to_number,
           recording, transcript, variables, first_seen, checked_at, details_due, account)
         VALUES (@callId, @serial, @agentId, @status, @direction, @startedAt, @endedAt, @durationSec, @toHash, @toMasked, @toNumber,
           @recording, @transcript, @variables, @now, @now, @detailsDue, @account)
         ON CONFLICT(call_id) DO UPDATE SET
           status = excluded.status, ended_at = excluded.ended_at, duration_sec = excluded.duration_sec, checked_at = excluded.checked_at,
           recording = CASE WHEN calls.recording IN ('archived', 'expired') THEN calls.recording ELSE coalesce(excluded.recording, calls.recording) END,
           transcript = coalesce(excluded.transcript, calls.transcript),
           variables = coalesce(excluded.variables, calls.variables),
           details_due = CASE WHEN excluded.recording IS NOT NULL OR calls.recording IS NOT NULL THEN 0 ELSE max(calls.details_due, excluded.details_due) END`,
      ),
      check: p('UPDATE calls SET checked_at = ? WHERE call_id = ?'),
      keyOf: p('SELECT started_at, serial, agent_id FROM calls WHERE call_id = ?'),
      rollup: p(
        `INSERT OR REPLACE INTO call_rollups (day, serial, agent_id, placed, completed, failed, stuck, talk_sec)
         SELECT @day, @serial, @agentId, count(*),
           coalesce(sum(status = 'completed'), 0), coalesce(sum(status = 'failed'), 0),
           coalesce(sum(status = 'initiated' AND started_at < @stuckBefore), 0), coalesce(sum(duration_sec), 0)
         FROM calls WHERE serial = @serial AND started_at >= @from AND started_at < @to AND agent_id = @agentId`,
      ),
      due: p('SELECT * FROM calls WHERE details_due = 1 AND account = ? ORDER BY ended_at LIMIT ?'),
      initiated: p(`SELECT * FROM calls WHERE status = 'initiated' AND account = ? AND checked_at < ? AND started_at >= ? ORDER BY checked_at LIMIT ?`),
      countSince: p('SELECT count(*) FROM calls WHERE started_at >= ? AND account = ?').pluck(),
      // With the test_calls entry that placed the call (migrations/0010_test_calls.sql), if one did.
      list: p(`${LISTED} WHERE c.started_at >= ? AND c.started_at < ? ORDER BY c.started_at DESC, c.call_id DESC LIMIT ?`),
      listBox: p(`${LISTED} WHERE c.serial = ? AND c.started_at >= ? AND c.started_at < ? ORDER BY c.started_at DESC, c.call_id DESC LIMIT ?`),
      statsBox: p(statsSql('serial')),
      statsAgent: p(statsSql(AGENT_KEY)),
      durationsBox: p(`SELECT serial AS key, duration_sec AS d FROM calls WHERE started_at >= ? AND status = 'completed' AND duration_sec IS NOT NULL ORDER BY 1, 2`),
      durationsAgent: p(
        `SELECT ${AGENT_KEY} AS key, duration_sec AS d FROM calls WHERE started_at >= ? AND status = 'completed' AND duration_sec IS NOT NULL ORDER BY 1, 2`,
      ),
      buckets: p(
        `SELECT CAST((started_at - @from) / @bucket AS INTEGER) AS "index", count(*) AS calls, sum(status = 'failed') AS failed FROM calls
         WHERE serial = @serial AND started_at >= @from AND started_at < @to AND status IN ('completed', 'failed') GROUP BY 1 ORDER BY 1`,
      ),
      rollups: p('SELECT * FROM call_rollups WHERE day >= ? AND day <= ? ORDER BY day, serial, agent_id'),
      failuresSince: p(
        `SELECT serial, count(*) AS calls, sum(status = 'failed') AS failed FROM calls
         WHERE started_at >= ? AND status IN ('completed', 'failed') GROUP BY serial`,
      ),
      failuresLast: p(
        `SELECT serial, count(*) AS calls, sum(status = 'failed') AS failed FROM (
           SELECT serial, status, row_number() OVER (PARTITION BY serial ORDER BY started_at DESC, call_id DESC) AS n
           FROM calls WHERE started_at >= ? AND status IN ('completed', 'failed'))
         WHERE n <= ? GROUP BY serial`,
      ),
      stuck: p(
        `SELECT serial, count(*) AS count, min(started_at) AS oldest FROM calls
         WHERE status = 'initiated' AND started_at < ? AND started_at >= ? GROUP BY serial`,
      ),
      lastCall: p('SELECT serial, max(started_at) AS at FROM calls GROUP BY serial'),
      daily: p(
        `SELECT serial FROM (SELECT serial, day FROM call_rollups WHERE day >= ? AND day <= ? GROUP BY serial, day HAVING sum(placed) > 0)
         GROUP BY serial HAVING count(*) = ?`,
      ).pluck(),
      pruneCalls: p(`DELETE FROM calls WHERE call_id IN (SELECT call_id FROM calls WHERE started_at < ? LIMIT ${BATCH})`),
      pruneRollups: p(`DELETE FROM call_rollups WHERE (day, serial, agent_id) IN (SELECT day, serial, agent_id FROM call_rollups WHERE day < ? LIMIT ${BATCH})`),
    };
  }

  syncState(account: string): CallSyncState {
    const row = this.s.sync.get(account) as
      | { high_water: number | null; synced_at: number | null; resume_top: number | null; resume_below: number | null; resume_floor: number | null }
      | undefined;
    if (!row) return { highWater: null, syncedAt: null, resume: null };
    const resume =
      row.resume_top !== null && row.resume_below !== null && row.resume_floor !== null
        ? { top: row.resume_top, below: row.resume_below, floor: row.resume_floor }
        : null;
    return { highWater: row.high_water, syncedAt: row.synced_at, resume };
  }

  known(callIds: readonly string[]): Map<string, { status: string; recording: RecordingState | null }> {
    const out = new Map<string, { status: string; recording: RecordingState | null }>();
    for (let i = 0; i < callIds.length; i += BATCH) {
      const chunk = callIds.slice(i, i + BATCH);
      const rows = this.db
        .prepare(`SELECT call_id, status, recording FROM calls WHERE call_id IN (${chunk.map(() => '?').join(',')})`)
        .all(...chunk) as { call_id: string; status: string; recording: RecordingState | null }[];
      for (const r of rows) out.set(r.call_id, { status: r.status, recording: r.recording });
    }
    return out;
  }

  write(w: CallsWrite): void {
    this.db.transaction(() => {
      const touched = new Map<string, { day: number; serial: string; agentId: number }>();
      const touch = (startedAt: number, serial: string, agentId: number): void => {
        const day = dayOf(startedAt);
        touched.set(`${day}\u0000${serial}\u0000${agentId}`, { day, serial, agentId });
      };
      for (const c of w.upserts) {
        this.s.upsert.run(bindings(c, w.now, w.account));
        touch(c.startedAt, c.serial, c.agentId);
      }
      for (const id of w.checked) {
        this.s.check.run(w.now, id);
        const key = this.s.keyOf.get(id) as { started_at: number; serial: string; agent_id: number } | undefined;
        if (key) touch(key.started_at, key.serial, key.agent_id);
      }
      for (const k of touched.values()) {
        this.s.rollup.run({ ...k, from: k.day * DAY_MS, to: (k.day + 1) * DAY_MS, stuckBefore: w.now - w.stuckAfterMs });
      }
      const r = w.sync.resume;
      this.s.setSync.run(w.account, w.sync.highWater, w.sync.syncedAt, r?.top ?? null, r?.below ?? null, r?.floor ?? null);
    })();
  }

  dueForDetails(limit: number, options: { account: string; checkedBefore: number; initiatedSince: number }): CallRecord[] {
    if (limit <= 0) return [];
    const due = (this.s.due.all(options.account, limit) as CallRow[]).map(fromRow);
    if (due.length >= limit) return due;
    const open = (this.s.initiated.all(options.account, options.checkedBefore, options.initiatedSince, limit - due.length) as CallRow[]).map(fromRow);
    return [...due, ...open];
  }

  countSince(since: number, account: string): number {
    return this.s.countSince.get(since, account) as number;
  }

  list(options: { serial?: string; since?: number; until?: number; limit: number }): ListedCall[] {
    const since = options.since ?? 0;
    const until = options.until ?? Number.MAX_SAFE_INTEGER;
    const rows = options.serial === undefined ? this.s.list.all(since, until, options.limit) : this.s.listBox.all(options.serial, since, until, options.limit);
    return (rows as (CallRow & { test_entry: string | null })[]).map((r) => ({ ...fromRow(r), testCall: r.test_entry }));
  }

  stats(options: { since: number; by: 'box' | 'agent'; stuckBefore: number }): CallStats[] {
    const box = options.by === 'box';
    const rows = (box ? this.s.statsBox : this.s.statsAgent).all({ since: options.since, stuckBefore: options.stuckBefore }) as Omit<CallStats, 'medianDurationSec'>[];
    // The median of each key's completed durations, read in order (one pass).
    const durations = new Map<string, number[]>();
    for (const r of (box ? this.s.durationsBox : this.s.durationsAgent).iterate(options.since) as Iterable<{ key: string; d: number }>) {
      const list = durations.get(r.key);
      if (list) list.push(r.d);
      else durations.set(r.key, [r.d]);
    }
    return rows.map((r) => ({ ...r, medianDurationSec: median(durations.get(r.key)) }));
  }

  failureBuckets(serial: string, from: number, to: number, bucketMs: number): { index: number; calls: number; failed: number }[] {
    return this.s.buckets.all({ serial, from, to, bucket: bucketMs }) as { index: number; calls: number; failed: number }[];
  }

  rollups(fromDay: number, toDay: number): CallRollup[] {
    return (this.s.rollups.all(fromDay, toDay) as { day: number; serial: string; agent_id: number; placed: number; completed: number; failed: number; stuck: number; talk_sec: number }[]).map(
      (r) => ({ day: r.day, serial: r.serial, agentId: r.agent_id, placed: r.placed, completed: r.completed, failed: r.failed, stuck: r.stuck, talkSec: r.talk_sec }),
    );
  }

  failureCounts(options: { since: number; lastCalls?: number }): Map<string, FailureCount> {
    const rows = (options.lastCalls === undefined ? this.s.failuresSince.all(options.since) : this.s.failuresLast.all(options.since, options.lastCalls)) as {
      serial: string;
      calls: number;
      failed: number;
    }[];
    return new Map(rows.map((r) => [r.serial, { calls: r.calls, failed: r.failed }]));
  }

  stuckCalls(startedBefore: number, startedAfter: number): Map<string, StuckCalls> {
    const rows = this.s.stuck.all(startedBefore, startedAfter) as { serial: string; count: number; oldest: number }[];
    return new Map(rows.map((r) => [r.serial, { count: r.count, oldest: r.oldest }]));
  }

  lastCallAt(): Map<string, number> {
    return new Map((this.s.lastCall.all() as { serial: string; at: number }[]).map((r) => [r.serial, r.at]));
  }

  dailyCallers(fromDay: number, toDay: number): Set<string> {
    return new Set(this.s.daily.all(fromDay, toDay, toDay - fromDay + 1) as string[]);
  }

  prune(callsBefore: number, rollupsBefore: number, maxRows = Number.POSITIVE_INFINITY): number {
    let deleted = 0;
    for (const [stmt, arg] of [
      [this.s.pruneCalls, callsBefore],
      [this.s.pruneRollups, dayOf(rollupsBefore)],
    ] as const) {
      for (;;) {
        if (deleted >= maxRows) return deleted;
        const n = stmt.run(arg).changes;
        deleted += n;
        if (n < BATCH) break;
      }
    }
    return deleted;
  }
}

/**
 * An agent's key in `calls stats --by agent`: agent ids are the vendor account's own, so they are
 * counted per account, keyed like a box (src/box-id.ts `boxKey`): the id for `default`, else `ACCOUNT/ID`.
 * The same SQL on SQLite and PostgreSQL.
 */
export const AGENT_KEY = `CASE WHEN account = '${DEFAULT_ACCOUNT}' THEN CAST(agent_id AS TEXT) ELSE account || '/' || agent_id END`;

function statsSql(key: string): string {
  return `SELECT ${key} AS key, count(*) AS placed, coalesce(sum(status = 'completed'), 0) AS completed, coalesce(sum(status = 'failed'), 0) AS failed,
      coalesce(sum(status = 'initiated' AND started_at < @stuckBefore), 0) AS stuck,
      coalesce(sum(recording = 'archived'), 0) AS archived, coalesce(sum(recording = 'expired'), 0) AS lost,
      coalesce(sum(call_id IN (SELECT call_id FROM test_calls WHERE call_id IS NOT NULL)), 0) AS test
    FROM calls WHERE started_at >= @since GROUP BY 1 ORDER BY 1`;
}

/** The middle value of sorted numbers (the mean of the two middle ones for an even count). */
export function median(sorted: readonly number[] | undefined): number | null {
  if (sorted === undefined || sorted.length === 0) return null;
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? (sorted[mid] as number) : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
}

export function bindings(c: CallObservation, now: number, account: string): Record<string, unknown> {
  return {
    callId: c.callId,
    serial: c.serial,
    agentId: c.agentId,
    status: c.status,
    direction: c.direction,
    startedAt: c.startedAt,
    endedAt: c.endedAt,
    durationSec: c.durationSec,
    toHash: c.toHash,
    toMasked: c.toMasked,
    toNumber: c.toNumber,
    recording: c.recording,
    transcript: c.transcript,
    variables: c.variables === null ? null : JSON.stringify(c.variables),
    now,
    detailsDue: c.wantsDetails && !c.detailsRead ? 1 : 0,
    account,
  };
}

export function fromRow(r: CallRow): CallRecord {
  return {
    callId: r.call_id,
    serial: r.serial,
    agentId: r.agent_id,
    status: r.status,
    direction: r.direction,
    startedAt: r.started_at,
    endedAt: r.ended_at,
    durationSec: r.duration_sec,
    toHash: r.to_hash,
    toMasked: r.to_masked,
    toNumber: r.to_number,
    recording: r.recording,
    transcript: r.transcript,
    variables: r.variables === null ? null : (JSON.parse(r.variables) as Record<string, string>),
  };
}
