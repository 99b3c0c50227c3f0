/**
 * The query side of the fleet history, for every database: the value of a metric at a time,
 * histories (raw points for short ranges, rollups for long ones) and uptime. Closed hours are
 * answered from rollups, the open hour(s) from the sample rows plus the open segment kept in
 * `boxes` (a box polled a minute ago is covered up to now, not up to its last row).
 *
 * Each query is written once, as a generator ("flow") that yields the reads it needs
 * (`yield* ask((rows) => rows.samplesOfBox(...))`) and computes on their answers. A store runs a
 * flow against its own reads (HistoryRows): `runNow` when they answer at once (SQLite, whose
 * queries stay synchronous, which `boxwatch sql`'s table functions need), `runLater` when they
 * answer with Promises (PostgreSQL). The reads are few and in bulk: a query asks for a range of a
 * box's rows at once, never a row per round trip.
 */
import { accountOf } from '../../box-id.js';
import type { Awaitable } from '../../awaitable.js';
import { HOUR_MS, SLOT, decodeRow, finalValues, hourOf, pushRun, rowRuns, runStats, type HourRow, type Run, type Slot } from '../codec.js';
import { StoreError } from '../errors.js';
import type { HistoryOptions, HistoryResult, Metric, RawPoint, RollupPoint, UptimeRow } from '../../domain/store.js';
import { fromBucketRow, hourStats, pollCounter, type BoxRefRow, type HourStats, type RollupBucketRow, type RollupRow, type SampleRow } from './rows.js';
import { lastHoursOf } from './retention.js';

/** Longest range answered with raw points (beyond it: rollups); the HTTP API refuses raw history over a longer range. */
export const RAW_MAX_RANGE_MS = 31 * 24 * HOUR_MS;
/** Bucket sizes for rollup histories, smallest first. */
const BUCKETS_H = [1, 2, 3, 4, 6, 8, 12, 24, 48, 72, 168, 336, 720, 2160, 8760];

/** The reads the history queries need; each database answers them its way. */
export interface HistoryRows {
  boxRef(serial: string): Awaitable<BoxRefRow | undefined>;
  /** Every box (forgotten ones too), by serial. */
  boxRefs(): Awaitable<BoxRefRow[]>;
  /** One box's sample rows of hours fromHour..toHour (inclusive). */
  samplesOfBox(boxId: number, fromHour: number, toHour: number): Awaitable<SampleRow[]>;
  /** Every box's sample rows of these hours. */
  samplesOfHours(hours: readonly number[]): Awaitable<SampleRow[]>;
  /** One box's rollups of hours [fromHour, toHour) summed per bucket of `bucketH` hours, by bucket (rollupBucketsSql). */
  rollupBucketsOfBox(boxId: number, fromHour: number, toHour: number, bucketH: number): Awaitable<RollupBucketRow[]>;
  /** The rollups of these (box, hour) pairs that exist. */
  rollupsAt(pairs: readonly { boxId: number; hour: number }[]): Awaitable<RollupRow[]>;
  /** Per box, the sums of observed and disconnected ms of its rollups of hours [fromHour, toHour). */
  uptimeSums(boxIds: readonly number[], fromHour: number, toHour: number): Awaitable<{ box_id: number; observed: number; disconnected: number }[]>;
  /** Start of the latest cycle of each account (none: no cycle yet). */
  lastCyclesOfAccounts(): Awaitable<{ account: string; t: number }[]>;
  /** Starts of every cycle (ok or failed) of the account in [from, to), ascending. */
  cycleStarts(from: number, to: number, account: string): Awaitable<number[]>;
  /** Where complete raw history starts (-Infinity: nothing pruned). */
  rawPrunedBefore(): Awaitable<number>;
  /** The interned strings (firmware versions) of these ids. */
  strings(ids: readonly number[]): Awaitable<Map<number, string>>;
}

/** A read a flow asks for. */
type Ask = (rows: HistoryRows) => Awaitable<unknown>;
/** A query written once, run by runNow or runLater. */
export type Flow<T> = Generator<Ask, T, unknown>;

/** Inside a flow: `const x = yield* ask((rows) => rows.something())`. */
function* ask<T>(read: (rows: HistoryRows) => Awaitable<T>): Generator<Ask, T, unknown> {
  return (yield read) as T;
}

/** Runs a flow against reads that answer at once (SQLite). */
export function runNow<T>(flow: Flow<T>, rows: HistoryRows): T {
  let step = flow.next();
  while (step.done !== true) {
    const answer = step.value(rows);
    if (answer instanceof Promise) throw new Error('runNow: a read answered later; use runLater');
    step = flow.next(answer);
  }
  return step.value;
}

/** Runs a flow against reads that answer with Promises (PostgreSQL). */
export async function runLater<T>(flow: Flow<T>, rows: HistoryRows): Promise<T> {
  let step = flow.next();
  while (step.done !== true) step = flow.next(await step.value(rows));
  return step.value;
}

/** What queries need to know about a box. */
interface BoxRef {
  id: number;
  serial: string;
  name: string;
  segStart: number | null;
  lastPolled: number;
  firstSeen: number;
}

/** One box's uptime as it is summed: observed and connected ms so far, and the hours still to read raw. */
interface UptimeTotal {
  box: BoxRef;
  observed: number;
  connected: number;
  edgeHours: number[];
}

/** Sample rows of one box by hour, decoded when first used. */
class HourRows {
  private readonly decoded = new Map<number, HourRow>();
  constructor(private readonly data: ReadonlyMap<number, Uint8Array>) {}
  get(hour: number): HourRow | undefined {
    let row = this.decoded.get(hour);
    if (row === undefined) {
      const bytes = this.data.get(hour);
      if (bytes === undefined) return undefined;
      this.decoded.set(hour, (row = decodeRow(bytes)));
    }
    return row;
  }
}

export class HistoryQueries {
  constructor(private readonly maxGapMs: number) {}

  *valueAt(serial: string, metric: Metric, t: number): Flow<RawPoint | undefined> {
    const box = toBoxRef(yield* ask((r) => r.boxRef(serial)));
    if (box === undefined) return undefined;
    const hour = hourOf(t);
    // The run containing t may go on into later hours: runEnd looks up to a day ahead.
    const rows = yield* this.rowsOfBox(box, hour, hour + 24);
    const row = this.liveRow(box, hour, rows);
    if (row === undefined) return undefined;
    const slot = SLOT[metric];
    const run = rowRuns(row, hour * HOUR_MS, slot, t, t + 1)[0];
    if (run === undefined) return undefined;
    const [value] = yield* this.present(slot, [run.value]);
    return { t, value: value as RawPoint['value'], until: this.runEnd(box, slot, run, rows) };
  }

  *history(serial: string, metric: Metric, from: number, to: number, options: HistoryOptions = {}): Flow<HistoryResult> {
    if (!(to > from)) throw new StoreError('bad_range', 'the history range is empty: "to" must be after "from"');
    const box = toBoxRef(yield* ask((r) => r.boxRef(serial)));
    if (box === undefined) throw new StoreError('unknown_box', `unknown box ${serial}`);
    const maxPoints = Math.max(1, options.maxPoints ?? 500);
    const slot = SLOT[metric];
    if (options.kind === 'raw') return { kind: 'raw', metric, from, to, points: (yield* this.rawPoints(box, slot, from, to, Infinity)) as RawPoint[] };
    if (options.kind === 'rollup' && metric !== 'firmware') return yield* this.rollupHistory(box, metric, from, to, maxPoints);
    if (metric === 'firmware') {
      const points = (yield* this.rawPoints(box, slot, from, to, Infinity)) as RawPoint[];
      return { kind: 'raw', metric, from, to, points: points.slice(-maxPoints) };
    }
    const rawComplete = from >= (yield* ask((r) => r.rawPrunedBefore()));
    if (rawComplete && to - from <= RAW_MAX_RANGE_MS) {
      const points = yield* this.rawPoints(box, slot, from, to, maxPoints);
      if (points !== null) return { kind: 'raw', metric, from, to, points };
    }
    return yield* this.rollupHistory(box, metric, from, to, maxPoints);
  }

  *uptime(from: number, requestedTo: number): Flow<UptimeRow[]> {
    if (!(requestedTo > from)) throw new StoreError('bad_range', 'the uptime range is empty: "to" must be after "from"');
    const lastCycles = yield* ask((r) => r.lastCyclesOfAccounts());
    // Hours after the last cycle (and its open segment) hold no data: the loops stop there.
    const latest = lastCycles.length === 0 ? null : hourOf(Math.max(...lastCycles.map((c) => c.t)));
    const to = latest === null ? requestedTo : Math.max(from + 1, Math.min(requestedTo, (latest + 1) * HOUR_MS + this.maxGapMs));
    const boxes = (yield* ask((r) => r.boxRefs())).map((b) => toBoxRef(b) as BoxRef);
    // Each account closes its boxes' hours with its own cycles: a box's full hours before its
    // account's latest cycle's hour come from their rollups, the others (the partial first and
    // last hours, the open one) from the raw rows, or their rollups where those were pruned (an
    // account no longer polled: its last hour, closed when it was retired). No retention needed (lastHoursOf).
    const openHours = lastHoursOf(lastCycles);
    const firstFull = Math.ceil(from / HOUR_MS);
    const totals: UptimeTotal[] = [];
    for (const [open, group] of groupBy(boxes, (b) => openHours.get(accountOf(b.serial)) ?? null)) {
      const endFull = Math.max(firstFull, Math.min(Math.floor(to / HOUR_MS), open ?? Infinity));
      const edgeHours: number[] = [];
      for (let h = hourOf(from); h <= hourOf(to - 1); h++) if (h < firstFull || h >= endFull) edgeHours.push(h);
      const sums = new Map<number, { observed: number; disconnected: number }>();
      if (endFull > firstFull) for (const s of yield* ask((r) => r.uptimeSums(group.map((b) => b.id), firstFull, endFull))) sums.set(s.box_id, s);
      for (const box of group) {
        const sum = sums.get(box.id);
        const observed = sum?.observed ?? 0;
        // Only the edge hours the box can have data in (an account removed: its last hour, not every hour since).
        const [first, last] = this.dataHours(box, from, to);
        totals.push({ box, observed, connected: observed - (sum?.disconnected ?? 0), edgeHours: edgeHours.filter((h) => h >= first && h <= last) });
      }
    }
    // The edge hours' rows, and the last polled hour of a box whose open segment reaches into them.
    const needed = new Set<number>();
    for (const t of totals) {
      for (const h of t.edgeHours) needed.add(h);
      if (t.box.segStart !== null && t.edgeHours.some((h) => h > hourOf(t.box.lastPolled))) needed.add(hourOf(t.box.lastPolled));
    }
    const samples = needed.size === 0 ? [] : yield* ask((r) => r.samplesOfHours([...needed]));
    const rowsByBox = groupBy(samples, (s) => s.box_id);
    // Raw data pruned: the whole hour's rollup stands in for its part.
    const pruned: { boxId: number; hour: number }[] = [];
    for (const t of totals) {
      const rows = new HourRows(new Map((rowsByBox.get(t.box.id) ?? []).map((s) => [s.hour, s.data])));
      for (const hour of t.edgeHours) {
        const row = this.liveRow(t.box, hour, rows);
        if (row === undefined) {
          pruned.push({ boxId: t.box.id, hour });
          continue;
        }
        const st = runStats(rowRuns(row, hour * HOUR_MS, SLOT.connected, from, to));
        t.observed += st.observedMs;
        t.connected += st.weighted;
      }
    }
    const standIns = pruned.length === 0 ? [] : yield* ask((r) => r.rollupsAt(pruned));
    const byId = new Map(totals.map((t) => [t.box.id, t]));
    for (const r of standIns) {
      const t = byId.get(r.box_id);
      if (t === undefined) continue;
      t.observed += r.observed_ms;
      t.connected += r.observed_ms - r.disconnected_ms;
    }
    return boxes.map((box) => {
      const { observed, connected } = byId.get(box.id) as UptimeTotal;
      return { serial: box.serial, name: box.name, connectedFraction: observed > 0 ? connected / observed : null, observedMs: observed };
    });
  }

  /** Where the run containing a point ends, looking into later hours (bounded to one day). */
  private runEnd(box: BoxRef, slot: Slot, run: Run, rows: HourRows): number {
    let end = run.end;
    for (let i = 0; i < 24 && end % HOUR_MS === 0; i++) {
      const hour = hourOf(end);
      const row = this.liveRow(box, hour, rows);
      const next = row === undefined ? undefined : rowRuns(row, hour * HOUR_MS, slot)[0];
      if (next === undefined || next.start !== end || !Object.is(next.value, run.value)) break;
      end = next.end;
    }
    return end;
  }

  /** Raw points over [from, to): one per run of equal values; null when there are more than `limit`. */
  private *rawPoints(box: BoxRef, slot: Slot, from: number, to: number, limit: number): Flow<RawPoint[] | null> {
    const runs: Run[] = [];
    const [firstHour, lastHour] = this.dataHours(box, from, to);
    const rows = yield* this.rowsOfBox(box, firstHour, lastHour);
    for (let hour = firstHour; hour <= lastHour; hour++) {
      const row = this.liveRow(box, hour, rows);
      if (row === undefined) continue;
      for (const r of rowRuns(row, hour * HOUR_MS, slot, from, to)) pushRun(runs, r.start, r.end, r.value);
      if (runs.length > limit) return null;
    }
    const values = yield* this.present(slot, runs.map((r) => r.value));
    return runs.map((r, i) => ({ t: r.start, value: values[i] as RawPoint['value'], until: r.end }));
  }

  private *rollupHistory(box: BoxRef, metric: Metric, from: number, to: number, maxPoints: number): Flow<HistoryResult> {
    const span = to - from;
    const bucketH = BUCKETS_H.find((h) => Math.ceil(span / (h * HOUR_MS)) <= maxPoints) ?? Math.ceil(span / HOUR_MS / maxPoints);
    const bucketMs = bucketH * HOUR_MS;
    const buckets = new Map<number, HourStats[]>();
    for (const st of yield* this.hourStatsOfBox(box, hourOf(from), hourOf(to - 1) + 1, bucketH)) {
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
   * summed per bucket of `bucketH` hours by the database, and open hours from the live rows, one each.
   */
  private *hourStatsOfBox(box: BoxRef, fromHour: number, toHour: number, bucketH: number): Flow<HourStats[]> {
    const account = accountOf(box.serial);
    const open = lastHoursOf(yield* ask((r) => r.lastCyclesOfAccounts())).get(account) ?? null;
    const closedTo = open === null ? toHour : Math.min(toHour, open);
    const out: HourStats[] = [];
    if (closedTo > fromHour) for (const r of yield* ask((q) => q.rollupBucketsOfBox(box.id, fromHour, closedTo, bucketH))) out.push(fromBucketRow(r));
    const [, lastHour] = this.dataHours(box, fromHour * HOUR_MS, toHour * HOUR_MS);
    const liveFrom = Math.max(fromHour, closedTo);
    const liveTo = Math.min(toHour - 1, lastHour);
    if (liveFrom > liveTo) return out;
    const rows = yield* this.rowsOfBox(box, liveFrom, liveTo);
    const polls = pollCounter(yield* ask((r) => r.cycleStarts(liveFrom * HOUR_MS, (liveTo + 1) * HOUR_MS, account)));
    const pruned: number[] = [];
    for (let hour = liveFrom; hour <= liveTo; hour++) {
      const row = this.liveRow(box, hour, rows);
      if (row !== undefined) out.push(hourStats(row, hour, polls));
      else pruned.push(hour);
    }
    // Raw rows pruned (the last hour of an account no longer polled, closed when it was retired): the hour's rollup stands in, as in uptime.
    if (pruned.length > 0) {
      for (const r of yield* ask((q) => q.rollupBucketsOfBox(box.id, pruned[0] as number, (pruned.at(-1) as number) + 1, 1))) if (pruned.includes(r.bucket)) out.push(fromBucketRow(r));
    }
    return out;
  }

  /**
   * A box's rows of hours fromHour..toHour (bounded by its data), and the row of its last poll's
   * hour when its open segment reaches into the range (liveRow continues that row).
   */
  private *rowsOfBox(box: BoxRef, fromHour: number, toHour: number): Flow<HourRows> {
    const [first, last] = this.dataHours(box, fromHour * HOUR_MS, (toHour + 1) * HOUR_MS);
    if (first > last) return new HourRows(new Map());
    const from = box.segStart !== null ? Math.min(first, hourOf(box.lastPolled)) : first;
    const rows = yield* ask((r) => r.samplesOfBox(box.id, from, last));
    return new HourRows(new Map(rows.map((s) => [s.hour, s.data])));
  }

  /**
   * The hours [first, last] of [from, to) in which the box can have data (from its first sighting
   * to the end of its open segment): loops over a range are bounded by the data, not the range.
   */
  private dataHours(box: BoxRef, from: number, to: number): [number, number] {
    return [Math.max(hourOf(from), hourOf(box.firstSeen)), Math.min(hourOf(to - 1), hourOf(box.lastPolled + this.maxGapMs))];
  }

  /**
   * A box's row for one hour as queries see it: the stored row plus the open segment's piece, or
   * a synthetic row for the part of the open segment that reaches past its last poll's hour.
   */
  private liveRow(box: BoxRef, hour: number, rows: HourRows): HourRow | undefined {
    const stored = rows.get(hour);
    if (box.segStart === null) return stored;
    const lastHour = hourOf(box.lastPolled);
    const openEnd = box.lastPolled + this.maxGapMs;
    if (hour < lastHour || hour > hourOf(openEnd - 1)) return stored;
    const t0 = hour * HOUR_MS;
    const piece = { start: Math.max(box.segStart, t0) - t0, end: Math.min(openEnd, t0 + HOUR_MS) - t0 };
    if (hour === lastHour) return stored === undefined ? undefined : { pieces: [...stored.pieces, piece], events: stored.events };
    const last = rows.get(lastHour);
    const values = last === undefined ? null : finalValues(last);
    if (values === null) return stored;
    return { pieces: [piece], events: [{ at: 0, mask: 0b1111, values }] };
  }

  /** Values as the Store gives them: firmware ids become their text. */
  private *present(slot: Slot, values: (number | null)[]): Flow<(number | string | null)[]> {
    if (slot !== SLOT.firmware) return values;
    const ids = [...new Set(values.filter((v): v is number => v !== null))];
    const names = ids.length === 0 ? new Map<number, string>() : yield* ask((r) => r.strings(ids));
    return values.map((v) => {
      if (v === null) return null;
      const name = names.get(v);
      if (name === undefined) throw new StoreError('store_corrupt', `sample refers to unknown string id ${v}`);
      return name;
    });
  }
}

function toBoxRef(r: BoxRefRow | undefined): BoxRef | undefined {
  return r === undefined ? undefined : { id: r.id, serial: r.serial, name: r.name, segStart: r.seg_start, lastPolled: r.last_polled, firstSeen: r.first_seen };
}

function groupBy<T, K>(items: readonly T[], key: (item: T) => K): Map<K, T[]> {
  const out = new Map<K, T[]>();
  for (const item of items) {
    const k = key(item);
    let list = out.get(k);
    if (list === undefined) out.set(k, (list = []));
    list.push(item);
  }
  return out;
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
