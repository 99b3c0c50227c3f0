/**
 * What every implementation of the fleet history shares (SQLite in src/store/sqlite/, PostgreSQL
 * in src/store/postgres/): the row shapes of `boxes`, `cycles` and `rollups` (the same columns in
 * both databases), their mapping to the Store's types, and the hourly statistics a rollup row
 * holds (written by the writer when an hour closes, computed live by the reader for open hours).
 */
import { HOUR_MS, SLOT, rowRuns, runStats, type HourRow } from '../codec.js';
import type { BoxState, CycleRecord } from '../../domain/store.js';

/** Longest statement batch of the pruning deletes. */
export const PRUNE_BATCH = 500;

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
  /** The box's account (src/box-id.ts). */
  account: string;
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
  account: string;
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

/** The columns of `rollups`, in the order rollupValues gives them. */
export const ROLLUP_COLUMNS = [
  'box_id', 'hour', 'polls', 'observed_ms', 'disconnected_ms', 'battery_gap_ms', 'battery_min', 'battery_max',
  'battery_mean_milli', 'signal_gap_ms', 'signal_min', 'signal_max', 'signal_mean_milli',
] as const;

/** One box's closed hours summed per bucket of hours (`rollupBucketsOfBox`): what long charts read. */
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

/**
 * The SQL (the same in SQLite and PostgreSQL) that sums one box's rollups of hours [from, to) per
 * bucket of `bucketH` hours. A metric's hours count only where they hold a value, as bucketPoint
 * does. Parameters: :bucketH, :box, :from, :to (each store binds them its way). `%` works on
 * integers whatever the bound number's type; `/` would divide as a float in SQLite.
 */
export function rollupBucketsSql(param: (name: 'bucketH' | 'box' | 'from' | 'to') => string, sumOf: (expr: string) => string = (e) => `sum(${e})`): string {
  const metricSums = (m: 'battery' | 'signal'): string => {
    const has = `${m}_mean_milli IS NOT NULL AND observed_ms > ${m}_gap_ms`;
    return `${sumOf(`CASE WHEN ${has} THEN observed_ms - ${m}_gap_ms ELSE 0 END`)} AS ${m}_ms,
    min(CASE WHEN ${has} THEN ${m}_min END) AS ${m}_min, max(CASE WHEN ${has} THEN ${m}_max END) AS ${m}_max,
    ${sumOf(`CASE WHEN ${has} THEN ${m}_mean_milli * (observed_ms - ${m}_gap_ms) END`)} AS ${m}_weighted_milli`;
  };
  return `SELECT hour - hour % ${param('bucketH')} AS bucket, ${sumOf('polls')} AS polls, ${sumOf('observed_ms')} AS observed_ms,
       ${sumOf('observed_ms - disconnected_ms')} AS connected_ms,
       ${metricSums('battery')}, ${metricSums('signal')}
     FROM rollups WHERE box_id = ${param('box')} AND hour >= ${param('from')} AND hour < ${param('to')} GROUP BY bucket ORDER BY bucket`;
}

/** The statistics of a bucket of summed rollups. */
export function fromBucketRow(r: RollupBucketRow): HourStats {
  const stats = (ms: number, min: number | null, max: number | null, weightedMilli: number | null): NumStats => ({
    ms,
    min,
    max,
    mean: weightedMilli === null || ms === 0 ? null : weightedMilli / ms / 1000,
  });
  return {
    hour: r.bucket,
    polls: r.polls,
    observedMs: r.observed_ms,
    connectedMs: r.connected_ms,
    battery: stats(r.battery_ms, r.battery_min, r.battery_max, r.battery_weighted_milli),
    signal: stats(r.signal_ms, r.signal_min, r.signal_max, r.signal_weighted_milli),
  };
}

export interface BoxRefRow {
  id: number;
  serial: string;
  name: string;
  seg_start: number | null;
  last_polled: number;
  first_seen: number;
}

/** One stored sample row (one box, one hour; the BLOB of src/store/codec.ts). */
export interface SampleRow {
  hour: number;
  box_id: number;
  data: Uint8Array;
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
    account: b.account,
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
    account: r.account,
  };
}

/**
 * Counts poll cycles in [from, to) among `starts` (cycle start times, ascending): how many polls a
 * covered piece of an hour holds.
 */
export function pollCounter(starts: readonly number[]): (from: number, to: number) => number {
  const firstAtOrAfter = (t: number): number => {
    let lo = 0;
    let hi = starts.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if ((starts[mid] as number) < t) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  };
  return (from, to) => firstAtOrAfter(to) - firstAtOrAfter(from);
}

/** Rollup statistics of one stored hour row; `polls` counts the cycles in a covered stretch. */
export function hourStats(row: HourRow, hour: number, polls: (from: number, to: number) => number): HourStats {
  const t0 = hour * HOUR_MS;
  let count = 0;
  for (const p of row.pieces) count += polls(t0 + p.start, t0 + p.end);
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

/** A rollup row's values in ROLLUP_COLUMNS order (means stored in thousandths). */
export function rollupValues(boxId: number, st: HourStats): (number | null)[] {
  const milli = (v: number | null): number | null => (v === null ? null : Math.round(v * 1000));
  return [
    boxId, st.hour, st.polls, st.observedMs, st.observedMs - st.connectedMs,
    st.observedMs - st.battery.ms, st.battery.min, st.battery.max, milli(st.battery.mean),
    st.observedMs - st.signal.ms, st.signal.min, st.signal.max, milli(st.signal.mean),
  ];
}
