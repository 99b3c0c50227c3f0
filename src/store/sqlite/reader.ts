/**
 * The query side of the SQLite history: current box states, the last cycle, the value of a metric
 * at a time, histories (raw points for short ranges, rollups for long ones) and uptime. Closed
 * hours are answered from `rollups`, the open hour(s) from the sample rows plus the open segment
 * kept in `boxes` (a box polled a minute ago is covered up to now, not up to its last row).
 * Read-only: safe on a connection opened read-only next to the daemon.
 */
import { HOUR_MS, SLOT, decodeRow, finalValues, hourOf, pushRun, rowRuns, runStats, type HourRow, type Run, type Slot } from '../codec.js';
import { StoreError } from '../errors.js';
import type { BoxState, CycleRecord, HistoryOptions, HistoryResult, Metric, RawPoint, RollupPoint, UptimeRow } from '../types.js';
import {
  RAW_PRUNED_BEFORE,
  hourStats,
  toBoxState,
  toCycleRecord,
  type BoxRefRow,
  type BoxRow,
  type CycleRow,
  type HourStats,
  type RollupBucketRow,
  type RollupRow,
  type Statements,
  type StringTable,
} from './rows.js';

/** Longest range answered with raw points (beyond it: rollups); the HTTP API refuses raw history over a longer range. */
export const RAW_MAX_RANGE_MS = 31 * 24 * HOUR_MS;
/** Bucket sizes for rollup histories, smallest first. */
const BUCKETS_H = [1, 2, 3, 4, 6, 8, 12, 24, 48, 72, 168, 336, 720, 2160, 8760];

/** What queries need to know about a box. */
interface BoxRef {
  id: number;
  serial: string;
  name: string;
  segStart: number | null;
  lastPolled: number;
  firstSeen: number;
}

export class HistoryReader {
  constructor(
    private readonly s: Statements,
    private readonly strings: StringTable,
    private readonly maxGapMs: number,
  ) {}

  boxes(): BoxState[] {
    return (this.s.fleetBoxes.all() as BoxRow[]).map(toBoxState);
  }

  box(serial: string): BoxState | undefined {
    const row = this.s.box.get(serial) as BoxRow | undefined;
    return row === undefined ? undefined : toBoxState(row);
  }

  lastCycle(): CycleRecord | undefined {
    const r = this.s.lastCycle.get() as CycleRow | undefined;
    return r === undefined ? undefined : toCycleRecord(r);
  }

  valueAt(serial: string, metric: Metric, t: number): RawPoint | undefined {
    const box = this.boxRef(serial);
    if (box === undefined) return undefined;
    const hour = hourOf(t);
    const row = this.liveRow(box, hour);
    if (row === undefined) return undefined;
    const slot = SLOT[metric];
    const run = rowRuns(row, hour * HOUR_MS, slot, t, t + 1)[0];
    return run === undefined ? undefined : { t, value: this.present(slot, run.value), until: this.runEnd(box, slot, run) };
  }

  history(serial: string, metric: Metric, from: number, to: number, options: HistoryOptions = {}): HistoryResult {
    if (!(to > from)) throw new StoreError('bad_range', 'the history range is empty: "to" must be after "from"');
    const box = this.boxRef(serial);
    if (box === undefined) throw new StoreError('unknown_box', `unknown box ${serial}`);
    const maxPoints = Math.max(1, options.maxPoints ?? 500);
    const slot = SLOT[metric];
    if (options.kind === 'raw') return { kind: 'raw', metric, from, to, points: this.rawPoints(box, slot, from, to, Infinity) as RawPoint[] };
    if (options.kind === 'rollup' && metric !== 'firmware') return this.rollupHistory(box, metric, from, to, maxPoints);
    if (metric === 'firmware') {
      const points = this.rawPoints(box, slot, from, to, Infinity) as RawPoint[];
      return { kind: 'raw', metric, from, to, points: points.slice(-maxPoints) };
    }
    const rawComplete = from >= this.rawPrunedBefore();
    if (rawComplete && to - from <= RAW_MAX_RANGE_MS) {
      const points = this.rawPoints(box, slot, from, to, maxPoints);
      if (points !== null) return { kind: 'raw', metric, from, to, points };
    }
    return this.rollupHistory(box, metric, from, to, maxPoints);
  }

  uptime(from: number, requestedTo: number): UptimeRow[] {
    if (!(requestedTo > from)) throw new StoreError('bad_range', 'the uptime range is empty: "to" must be after "from"');
    const open = this.currentOpenHour();
    // Hours after the last cycle (and its open segment) hold no data: the loops stop there.
    const to = open === null ? requestedTo : Math.max(from + 1, Math.min(requestedTo, (open + 1) * HOUR_MS + this.maxGapMs));
    const firstFull = Math.ceil(from / HOUR_MS);
    const endFull = Math.max(firstFull, Math.min(Math.floor(to / HOUR_MS), open ?? Infinity));
    // Hours answered from raw rows: the partial first and last hours and the open ones.
    const edgeHours: number[] = [];
    for (let h = hourOf(from); h <= hourOf(to - 1); h++) if (h < firstFull || h >= endFull) edgeHours.push(h);
    const result: UptimeRow[] = [];
    for (const box of this.s.boxRefs.all() as BoxRefRow[]) {
      const ref = toBoxRef(box);
      let observed = 0;
      let connected = 0;
      if (endFull > firstFull) {
        const sum = this.s.uptimeOfBox.get(ref.id, firstFull, endFull) as { observed: number | null; disconnected: number | null };
        observed += sum.observed ?? 0;
        connected += (sum.observed ?? 0) - (sum.disconnected ?? 0);
      }
      for (const hour of edgeHours) {
        const row = this.liveRow(ref, hour);
        if (row !== undefined) {
          const st = runStats(rowRuns(row, hour * HOUR_MS, SLOT.connected, from, to));
          observed += st.observedMs;
          connected += st.weighted;
          continue;
        }
        // Raw data pruned: the whole hour's rollup stands in for its part.
        const r = this.s.rollupOf.get(ref.id, hour) as RollupRow | undefined;
        if (r !== undefined) {
          observed += r.observed_ms;
          connected += r.observed_ms - r.disconnected_ms;
        }
      }
      result.push({ serial: ref.serial, name: ref.name, connectedFraction: observed > 0 ? connected / observed : null, observedMs: observed });
    }
    return result;
  }

  /** Where the run containing a point ends, looking into later hours (bounded to one day). */
  private runEnd(box: BoxRef, slot: Slot, run: Run): number {
    let end = run.end;
    for (let i = 0; i < 24 && end % HOUR_MS === 0; i++) {
      const hour = hourOf(end);
      const row = this.liveRow(box, hour);
      const next = row === undefined ? undefined : rowRuns(row, hour * HOUR_MS, slot)[0];
      if (next === undefined || next.start !== end || !Object.is(next.value, run.value)) break;
      end = next.end;
    }
    return end;
  }

  /** Raw points over [from, to): one per run of equal values; null when there are more than `limit`. */
  private rawPoints(box: BoxRef, slot: Slot, from: number, to: number, limit: number): RawPoint[] | null {
    const runs: Run[] = [];
    const [firstHour, lastHour] = this.dataHours(box, from, to);
    for (let hour = firstHour; hour <= lastHour; hour++) {
      const row = this.liveRow(box, hour);
      if (row === undefined) continue;
      for (const r of rowRuns(row, hour * HOUR_MS, slot, from, to)) pushRun(runs, r.start, r.end, r.value);
      if (runs.length > limit) return null;
    }
    return runs.map((r) => ({ t: r.start, value: this.present(slot, r.value), until: r.end }));
  }

  private rollupHistory(box: BoxRef, metric: Metric, from: number, to: number, maxPoints: number): HistoryResult {
    const span = to - from;
    const bucketH = BUCKETS_H.find((h) => Math.ceil(span / (h * HOUR_MS)) <= maxPoints) ?? Math.ceil(span / HOUR_MS / maxPoints);
    const bucketMs = bucketH * HOUR_MS;
    const buckets = new Map<number, HourStats[]>();
    for (const st of this.hourStatsOfBox(box, hourOf(from), hourOf(to - 1) + 1, bucketH)) {
      const key = Math.floor((st.hour * HOUR_MS) / bucketMs) * bucketMs;
      let list = buckets.get(key);
      if (list === undefined) buckets.set(key, (list = []));
      list.push(st);
    }
    const points: RollupPoint[] = [];
    for (const [t, list] of [...buckets].sort((a, b) => a[0] - b[0])) points.push(bucketPoint(t, metric, list));
    return { kind: 'rollup', metric, from, to, bucketMs, points };
  }

  /**
   * Statistics of one box for hours [fromHour, toHour): closed hours from the rollups, already
   * summed per bucket of `bucketH` hours by SQLite, and open hours from the live rows, one each.
   */
  private hourStatsOfBox(box: BoxRef, fromHour: number, toHour: number, bucketH: number): HourStats[] {
    const open = this.currentOpenHour();
    const out: HourStats[] = [];
    const closedTo = open === null ? toHour : Math.min(toHour, open);
    for (const r of this.s.rollupBucketsOfBox.all({ bucketH, box: box.id, from: fromHour, to: closedTo }) as RollupBucketRow[]) out.push(fromBucketRow(r));
    const polls = new Map<string, number>();
    const [, lastHour] = this.dataHours(box, fromHour * HOUR_MS, toHour * HOUR_MS);
    for (let hour = Math.max(fromHour, closedTo); hour < toHour && hour <= lastHour; hour++) {
      const row = this.liveRow(box, hour);
      if (row !== undefined) out.push(hourStats(this.s, row, hour, polls));
    }
    return out;
  }

  /** Start of the oldest stored sample hour (ms), or null when nothing was sampled yet. */
  historyStart(): number | null {
    const hour = this.s.firstSampleHour.get() as number | null;
    return hour === null ? null : hour * HOUR_MS;
  }

  /** Start times of the successful poll cycles in [from, to), ascending. */
  okCycleStarts(from: number, to: number): number[] {
    return this.s.okCycleStarts.all(from, to) as number[];
  }

  /**
   * The hours [first, last] of [from, to) in which the box can have data (from its first sighting
   * to the end of its open segment): loops over a range are bounded by the data, not the range.
   */
  private dataHours(box: BoxRef, from: number, to: number): [number, number] {
    return [Math.max(hourOf(from), hourOf(box.firstSeen)), Math.min(hourOf(to - 1), hourOf(box.lastPolled + this.maxGapMs))];
  }

  /** The hour of the latest cycle: rows of this hour (and later) have no rollup yet. */
  private currentOpenHour(): number | null {
    const t = this.s.maxCycle.get() as number | null;
    return t === null ? null : hourOf(t);
  }

  private boxRef(serial: string): BoxRef | undefined {
    const r = this.s.boxRef.get(serial) as BoxRefRow | undefined;
    return r === undefined ? undefined : toBoxRef(r);
  }

  /**
   * A box's row for one hour as queries see it: the stored row plus the open segment's piece, or
   * a synthetic row for the part of the open segment that reaches past its last poll's hour.
   */
  private liveRow(box: BoxRef, hour: number): HourRow | undefined {
    const data = this.s.sample.get(hour, box.id) as Buffer | undefined;
    const stored = data === undefined ? undefined : decodeRow(data);
    if (box.segStart === null) return stored;
    const lastHour = hourOf(box.lastPolled);
    const openEnd = box.lastPolled + this.maxGapMs;
    if (hour < lastHour || hour > hourOf(openEnd - 1)) return stored;
    const t0 = hour * HOUR_MS;
    const piece = { start: Math.max(box.segStart, t0) - t0, end: Math.min(openEnd, t0 + HOUR_MS) - t0 };
    if (hour === lastHour) return stored === undefined ? undefined : { pieces: [...stored.pieces, piece], events: stored.events };
    const lastData = this.s.sample.get(lastHour, box.id) as Buffer | undefined;
    const values = lastData === undefined ? null : finalValues(decodeRow(lastData));
    if (values === null) return stored;
    return { pieces: [piece], events: [{ at: 0, mask: 0b1111, values }] };
  }

  private present(slot: Slot, value: number | null): number | string | null {
    if (slot === SLOT.firmware && value !== null) return this.strings.valueOf(value);
    return value;
  }

  private rawPrunedBefore(): number {
    const v = this.s.getMeta.get(RAW_PRUNED_BEFORE) as string | undefined;
    return v === undefined ? -Infinity : Number(v);
  }
}

function toBoxRef(r: BoxRefRow): BoxRef {
  return { id: r.id, serial: r.serial, name: r.name, segStart: r.seg_start, lastPolled: r.last_polled, firstSeen: r.first_seen };
}

function fromBucketRow(r: RollupBucketRow): HourStats {
  const stats = (ms: number, min: number | null, max: number | null, weightedMilli: number | null) => ({
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

/** Aggregates hourly (or already bucketed) statistics into one bucket's point. */
function bucketPoint(t: number, metric: Metric, hours: readonly HourStats[]): RollupPoint {
  let count = 0;
  if (metric === 'connected') {
    let observed = 0;
    let connected = 0;
    for (const h of hours) {
      count += h.polls;
      observed += h.observedMs;
      connected += h.connectedMs;
    }
    if (observed === 0) return { t, min: null, max: null, mean: null, count };
    return { t, min: connected < observed ? 0 : 1, max: connected > 0 ? 1 : 0, mean: connected / observed, count };
  }
  let ms = 0;
  let sum = 0;
  let min: number | null = null;
  let max: number | null = null;
  for (const h of hours) {
    count += h.polls;
    const s = metric === 'battery' ? h.battery : h.signal;
    if (s.ms === 0 || s.mean === null) continue;
    ms += s.ms;
    sum += s.mean * s.ms;
    if (s.min !== null && (min === null || s.min < min)) min = s.min;
    if (s.max !== null && (max === null || s.max > max)) max = s.max;
  }
  return { t, min, max, mean: ms > 0 ? sum / ms : null, count };
}
