/**
 * What the SQLite history modules (writer.ts, reader.ts, retention.ts) share: the prepared
 * statements, the row shapes of `boxes`, `cycles` and `rollups`, the interned firmware strings and
 * the hourly statistics a rollup row holds (written by the writer when an hour closes, computed
 * live by the reader for open hours).
 */
import type Database from 'better-sqlite3';
import { HOUR_MS, SLOT, rowRuns, runStats, type HourRow } from '../codec.js';
import { StoreError } from '../errors.js';
import type { BoxState, CycleRecord } from '../types.js';

/** Longest statement batch of the pruning deletes. */
export const PRUNE_BATCH = 500;

/** Every history statement the store runs, prepared once. */
export function prepareStatements(db: Database.Database) {
  const p = (sql: string): Database.Statement => db.prepare(sql);
  return {
    insertCycle: p('INSERT INTO cycles (started_at, duration_ms, requests, outcome, error_code, error, boxes, details_fetched) VALUES (?, ?, ?, ?, ?, ?, ?, ?)'),
    lastCycle: p('SELECT * FROM cycles ORDER BY started_at DESC LIMIT 1'),
    maxCycle: p('SELECT max(started_at) FROM cycles').pluck(),
    countCycles: p('SELECT count(*) FROM cycles WHERE started_at >= ? AND started_at < ?').pluck(),
    insertBox: p(
      `INSERT INTO boxes (serial, gateway_id, name, connected, battery, signal, firmware, last_seen, registered_at, location, ip,
         details_at, first_seen, last_polled, missing_since, seg_start) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, ?)`,
    ),
    updateBox: p(
      `UPDATE boxes SET gateway_id = ?, name = ?, connected = ?, battery = ?, signal = ?, firmware = ?, last_seen = ?,
         registered_at = ?, location = ?, ip = ?, details_at = ?, last_polled = ?, missing_since = NULL, forgotten_at = NULL, seg_start = ? WHERE id = ?`,
    ),
    closeSegment: p('UPDATE boxes SET seg_start = NULL WHERE id = ?'),
    markMissing: p('UPDATE boxes SET missing_since = coalesce(missing_since, ?) WHERE serial = ?'),
    allBoxes: p('SELECT * FROM boxes ORDER BY serial'),
    serials: p('SELECT serial FROM boxes ORDER BY serial').pluck(),
    /** Changes when another connection commits (SQLite's PRAGMA data_version). */
    dataVersion: p('PRAGMA data_version').pluck(),
    /** The fleet: every box not forgotten. */
    fleetBoxes: p('SELECT * FROM boxes WHERE forgotten_at IS NULL ORDER BY serial'),
    forgetBox: p('UPDATE boxes SET forgotten_at = ? WHERE serial = ? AND forgotten_at IS NULL'),
    box: p('SELECT * FROM boxes WHERE serial = ?'),
    boxRef: p('SELECT id, serial, name, seg_start, last_polled, first_seen FROM boxes WHERE serial = ?'),
    boxRefs: p('SELECT id, serial, name, seg_start, last_polled, first_seen FROM boxes ORDER BY serial'),
    sample: p('SELECT data FROM samples WHERE hour = ? AND box_id = ?').pluck(),
    firstSampleHour: p('SELECT min(hour) FROM samples').pluck(),
    okCycleStarts: p("SELECT started_at FROM cycles WHERE outcome = 'ok' AND started_at >= ? AND started_at < ? ORDER BY started_at").pluck(),
    samplesFrom: p('SELECT hour, box_id, data FROM samples WHERE hour >= ?'),
    upsertSample: p('INSERT INTO samples (hour, box_id, data) VALUES (?, ?, ?) ON CONFLICT (hour, box_id) DO UPDATE SET data = excluded.data'),
    upsertRollup: p(
      `INSERT OR REPLACE INTO rollups (box_id, hour, polls, observed_ms, disconnected_ms, battery_gap_ms, battery_min, battery_max,
         battery_mean_milli, signal_gap_ms, signal_min, signal_max, signal_mean_milli) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    ),
    // One box's closed hours summed per bucket of @bucketH hours (long charts read a few rows, not
    // thousands). A metric's hours count only where they hold a value, as bucketPoint does. (`%`
    // works on integers whatever the bound number's type; `/` would divide as a float.)
    rollupBucketsOfBox: p(
      `SELECT hour - hour % @bucketH AS bucket, sum(polls) AS polls, sum(observed_ms) AS observed_ms,
         sum(observed_ms - disconnected_ms) AS connected_ms,
         ${metricSums('battery')}, ${metricSums('signal')}
       FROM rollups WHERE box_id = @box AND hour >= @from AND hour < @to GROUP BY bucket ORDER BY bucket`,
    ),
    uptimeOfBox: p('SELECT sum(observed_ms) AS observed, sum(disconnected_ms) AS disconnected FROM rollups WHERE box_id = ? AND hour >= ? AND hour < ?'),
    rollupOf: p('SELECT * FROM rollups WHERE box_id = ? AND hour = ?'),
    internInsert: p('INSERT INTO strings (value) VALUES (?) ON CONFLICT (value) DO NOTHING'),
    internGet: p('SELECT id FROM strings WHERE value = ?').pluck(),
    allStrings: p('SELECT id, value FROM strings'),
    getMeta: p('SELECT value FROM meta WHERE key = ?').pluck(),
    setMeta: p('INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value'),
    pruneSamples: p(`DELETE FROM samples WHERE (hour, box_id) IN (SELECT hour, box_id FROM samples WHERE hour < ? LIMIT ${PRUNE_BATCH})`),
    pruneRollups: p(`DELETE FROM rollups WHERE box_id = ? AND hour IN (SELECT hour FROM rollups WHERE box_id = ? AND hour < ? LIMIT ${PRUNE_BATCH})`),
    pruneCycles: p(`DELETE FROM cycles WHERE started_at IN (SELECT started_at FROM cycles WHERE started_at < ? LIMIT ${PRUNE_BATCH})`),
    boxIds: p('SELECT id FROM boxes ORDER BY id').pluck(),
  };
}

export type Statements = ReturnType<typeof prepareStatements>;

/** The `meta` key under which the start of complete raw history is kept. */
export const RAW_PRUNED_BEFORE = 'raw_pruned_before';

export interface BoxRow {
  id: number;
  serial: string;
  gateway_id: number;
  name: string;
  connected: number;
  battery: number | null;
  signal: number | null;
  firmware: string;
  last_seen: number;
  registered_at: number | null;
  location: string | null;
  ip: string | null;
  details_at: number | null;
  first_seen: number;
  last_polled: number;
  missing_since: number | null;
  seg_start: number | null;
  forgotten_at: number | null;
}

export interface CycleRow {
  started_at: number;
  duration_ms: number;
  requests: number;
  outcome: 'ok' | 'failed';
  error_code: string | null;
  error: string | null;
  boxes: number;
  details_fetched: number;
}

/** The SQL that sums one metric's rollup columns over a bucket (see rollupBucketsOfBox). */
function metricSums(m: 'battery' | 'signal'): string {
  const has = `${m}_mean_milli IS NOT NULL AND observed_ms > ${m}_gap_ms`;
  return `sum(CASE WHEN ${has} THEN observed_ms - ${m}_gap_ms ELSE 0 END) AS ${m}_ms,
    min(CASE WHEN ${has} THEN ${m}_min END) AS ${m}_min, max(CASE WHEN ${has} THEN ${m}_max END) AS ${m}_max,
    sum(CASE WHEN ${has} THEN ${m}_mean_milli * (observed_ms - ${m}_gap_ms) END) AS ${m}_weighted_milli`;
}

/** One row of rollupBucketsOfBox: a bucket's summed rollups. */
export interface RollupBucketRow {
  /** The first hour of the bucket. */
  bucket: number;
  polls: number;
  observed_ms: number;
  connected_ms: number;
  battery_ms: number;
  battery_min: number | null;
  battery_max: number | null;
  battery_weighted_milli: number | null;
  signal_ms: number;
  signal_min: number | null;
  signal_max: number | null;
  signal_weighted_milli: number | null;
}

export interface RollupRow {
  box_id: number;
  hour: number;
  polls: number;
  observed_ms: number;
  disconnected_ms: number;
  battery_gap_ms: number;
  battery_min: number | null;
  battery_max: number | null;
  battery_mean_milli: number | null;
  signal_gap_ms: number;
  signal_min: number | null;
  signal_max: number | null;
  signal_mean_milli: number | null;
}

export interface BoxRefRow {
  id: number;
  serial: string;
  name: string;
  seg_start: number | null;
  last_polled: number;
  first_seen: number;
}

/** Statistics of one numeric metric over one hour (or bucket). */
export interface NumStats {
  /** ms with a non-null value */
  ms: number;
  min: number | null;
  max: number | null;
  mean: number | null;
}

/** One box's statistics over one hour: what a rollup row holds. */
export interface HourStats {
  hour: number;
  polls: number;
  observedMs: number;
  connectedMs: number;
  battery: NumStats;
  signal: NumStats;
}

export function toBoxState(b: BoxRow): BoxState {
  return {
    serial: b.serial,
    id: b.gateway_id,
    name: b.name,
    connected: b.connected === 1,
    battery: b.battery,
    signal: b.signal,
    firmware: b.firmware,
    lastSeen: b.last_seen,
    registeredAt: b.registered_at,
    location: b.location,
    ip: b.ip,
    detailsAt: b.details_at,
    firstSeen: b.first_seen,
    lastPolled: b.last_polled,
    missingSince: b.missing_since,
  };
}

export function toCycleRecord(r: CycleRow): CycleRecord {
  return {
    startedAt: r.started_at,
    durationMs: r.duration_ms,
    requests: r.requests,
    outcome: r.outcome,
    errorCode: r.error_code,
    error: r.error,
    boxes: r.boxes,
    detailsFetched: r.details_fetched,
  };
}

/**
 * Rollup statistics of one stored hour row; `polls` memoizes cycle counts per covered piece (one
 * query per distinct piece, shared by every box of the hour).
 */
export function hourStats(s: Statements, row: HourRow, hour: number, polls: Map<string, number>): HourStats {
  const t0 = hour * HOUR_MS;
  let count = 0;
  for (const p of row.pieces) {
    const key = `${t0 + p.start}:${t0 + p.end}`;
    let n = polls.get(key);
    if (n === undefined) polls.set(key, (n = s.countCycles.get(t0 + p.start, t0 + p.end) as number));
    count += n;
  }
  const conn = runStats(rowRuns(row, t0, SLOT.connected));
  return {
    hour,
    polls: count,
    observedMs: conn.observedMs,
    connectedMs: conn.weighted,
    battery: numStats(runStats(rowRuns(row, t0, SLOT.battery))),
    signal: numStats(runStats(rowRuns(row, t0, SLOT.signal))),
  };
}

function numStats(s: { valueMs: number; min: number | null; max: number | null; weighted: number }): NumStats {
  return { ms: s.valueMs, min: s.min, max: s.max, mean: s.valueMs > 0 ? s.weighted / s.valueMs : null };
}

/**
 * The interned firmware strings (table `strings`), cached both ways. Shared by the writer (which
 * interns new values) and the reader (which turns ids back into text).
 */
export class StringTable {
  private readonly ids = new Map<string, number>();
  private readonly values = new Map<number, string>();

  constructor(private readonly s: Statements) {
    this.load();
  }

  idOf(value: string): number | undefined {
    return this.ids.get(value);
  }

  /** The id of `value`, inserting it first if it is new (a write: inside the cycle's transaction). */
  intern(value: string): number {
    const known = this.ids.get(value);
    if (known !== undefined) return known;
    this.s.internInsert.run(value);
    const id = this.s.internGet.get(value) as number;
    this.ids.set(value, id);
    this.values.set(id, value);
    return id;
  }

  valueOf(id: number): string {
    let v = this.values.get(id);
    if (v === undefined) {
      this.load(); // another connection (the daemon) interned it after we loaded
      v = this.values.get(id);
    }
    if (v === undefined) throw new StoreError('store_corrupt', `sample refers to unknown string id ${id}`);
    return v;
  }

  /** Reloads from the table (after a rolled-back transaction, whose inserts are gone). */
  load(): void {
    this.ids.clear();
    this.values.clear();
    for (const r of this.s.allStrings.all() as { id: number; value: string }[]) {
      this.ids.set(r.value, r.id);
      this.values.set(r.id, r.value);
    }
  }
}
