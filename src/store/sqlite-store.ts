/**
 * The SQLite implementation of the Store: current box state, poll cycles, compact per-box hourly
 * sample rows (codec.ts) and hourly rollups. How time coverage works:
 *
 * - A value observed at a poll holds until the next poll attempt (ok or failed), but at most
 *   `maxGapMs`. Consecutive polls in which a box was listed form a segment; a failed cycle, a
 *   cycle without the box, or a pause longer than `maxGapMs` ends it. Outside segments there is
 *   no data (a gap): valueAt answers undefined.
 * - Each box has one row per hour it was covered in: the covered pieces of the hour and the value
 *   changes, first event full so that every row decodes on its own. The open hour's rows are kept
 *   in memory (write path) and written when they change; the open segment's start and last poll
 *   live in the box's row of `boxes`, which every cycle updates anyway. Everything one cycle
 *   writes is one transaction, so kill -9 loses at most the cycle in flight.
 * - When the first cycle of a new hour is recorded, the previous hour's rows are final: their
 *   rollups are computed from them and written.
 */
import type Database from 'better-sqlite3';
import { systemClock, type Clock } from '../clock.js';
import type { Logger } from '../log.js';
import type { BoxSnapshot } from '../model.js';
import {
  HOUR_MS,
  SLOT,
  type HourRow,
  type Run,
  type Slot,
  type Values,
  addObservation,
  decodeRow,
  emptyRow,
  encodeRow,
  finalValues,
  hourOf,
  pushRun,
  rowRuns,
  runStats,
} from './codec.js';
import { StoreError } from './errors.js';
import { damagedOr, openDatabase } from './migrate.js';
import type {
  BoxState,
  CycleRecord,
  CycleWrite,
  HistoryOptions,
  HistoryResult,
  Metric,
  RawPoint,
  RollupPoint,
  Store,
  UptimeRow,
} from './types.js';

const MINUTE = 60_000;
/** Default longest pause between two polls that still counts as continuous observation. */
export const DEFAULT_MAX_GAP_MS = 5 * MINUTE;
/** Longest range answered with raw points (beyond it: rollups). */
/** Longer ranges are answered with rollups; the HTTP API refuses raw history over a longer range. */
export const RAW_MAX_RANGE_MS = 31 * 24 * HOUR_MS;
/** Bucket sizes for rollup histories, smallest first. */
const BUCKETS_H = [1, 2, 3, 4, 6, 8, 12, 24, 48, 72, 168, 336, 720, 2160, 8760];
const PRUNE_BATCH = 500;
/** Raw retention shorter than this is taken as this. */
const MIN_RAW_RETENTION_MS = 2 * HOUR_MS;

export interface StoreOptions {
  clock?: Clock;
  logger?: Logger;
  /** Where the NNNN_name.sql files are; default: the package's migrations/ folder. */
  migrationsDir?: string;
  /** Open an existing database for queries only (the CLI); no migrations are applied. */
  readonly?: boolean;
  /**
   * An observation holds until the next poll attempt, but at most this long; polls further apart
   * leave a gap between them. Default 5 minutes; must exceed the poll interval.
   */
  maxGapMs?: number;
}

export interface RetentionMs {
  rawMs: number;
  rollupMs: number;
}

export interface PruneOptions {
  /** Stop after about this many rows (the caller yields and calls again). Default: no limit. */
  maxRows?: number;
}

/** One box and hour of stored or live data, with the open segment's pieces added. */
interface RowRef {
  id: number;
  hour: number;
  row: HourRow;
}

/** Write-path state of one box. */
interface Head {
  id: number;
  serial: string;
  segStart: number | null;
  lastObs: number | null;
  values: Values | null;
  ref: RowRef | null;
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

interface BoxRow {
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
}

interface CycleRow {
  started_at: number;
  duration_ms: number;
  requests: number;
  outcome: 'ok' | 'failed';
  error_code: string | null;
  error: string | null;
  boxes: number;
  details_fetched: number;
}

interface RollupRow {
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

/** Statistics of one numeric metric over one hour (or bucket). */
interface NumStats {
  /** ms with a non-null value */
  ms: number;
  min: number | null;
  max: number | null;
  mean: number | null;
}

/** One box's statistics over one hour: what a rollup row holds. */
interface HourStats {
  hour: number;
  polls: number;
  observedMs: number;
  connectedMs: number;
  battery: NumStats;
  signal: NumStats;
}

/** Opens (creating and migrating as needed) the store at `path`. */
export function openStore(path: string, options: StoreOptions = {}): SqliteStore {
  const clock = options.clock ?? systemClock;
  const db = openDatabase(path, {
    clock,
    logger: options.logger,
    migrationsDir: options.migrationsDir,
    readonly: options.readonly,
  });
  try {
    return new SqliteStore(db, options.maxGapMs ?? DEFAULT_MAX_GAP_MS);
  } catch (err) {
    db.close();
    throw damagedOr(err, path);
  }
}

export class SqliteStore implements Store {
  private readonly s: Statements;
  private heads: Map<string, Head> | null = null;
  private lastCycleT: number | null = null;
  private openHour: number | null = null;
  private stringIds = new Map<string, number>();
  private stringValues = new Map<number, string>();
  /** Rows changed by the cycle being recorded. */
  private dirty = new Set<RowRef>();
  /** Rows of earlier hours replaced by a newer row during the cycle being recorded. */
  private superseded: RowRef[] = [];

  constructor(
    /** The connection; later features add their tables through migrations and use it directly. */
    readonly db: Database.Database,
    readonly maxGapMs: number,
  ) {
    if (!(maxGapMs > 0)) throw new RangeError('maxGapMs must be positive');
    this.s = prepareStatements(db);
    this.loadStrings();
  }

  // ---------------------------------------------------------------- writing

  /** Records one poll cycle in one transaction. Cycles must come in increasing startedAt order. */
  recordCycle(write: CycleWrite): void {
    const t = write.cycle.startedAt;
    const heads = this.loadHeads();
    if (this.lastCycleT !== null && t <= this.lastCycleT) {
      throw new StoreError(
        'store_time_order',
        `cycle start ${new Date(t).toISOString()} is not after the previous cycle (${new Date(this.lastCycleT).toISOString()})`,
      );
    }
    try {
      this.db.transaction(() => this.writeCycle(write, heads))();
      this.lastCycleT = t;
    } catch (err) {
      this.resetCaches();
      throw err;
    } finally {
      this.dirty.clear();
      this.superseded = [];
    }
  }

  /**
   * Runs `fn` in one transaction; a later feature writes its rows together with a cycle this way
   * (`store.transaction(() => { store.recordCycle(w); alerts.write(...) })`). If `fn` throws,
   * everything rolls back and the store's caches are reloaded from the database.
   */
  transaction<T>(fn: () => T): T {
    try {
      return this.db.transaction(fn)();
    } catch (err) {
      this.resetCaches();
      throw err;
    }
  }

  private writeCycle(write: CycleWrite, heads: Map<string, Head>): void {
    const c = write.cycle;
    const t = c.startedAt;
    const s = this.writer();
    s.insertCycle.run(t, c.durationMs, c.requests, c.outcome, c.errorCode, c.error, c.boxes, c.detailsFetched);

    const seen = new Set<number>();
    if (c.outcome === 'ok') {
      for (const snap of write.seen) {
        let head = heads.get(snap.serial);
        if (head === undefined) {
          const id = Number(
            s.insertBox.run(snap.serial, snap.id, snap.name, snap.connected ? 1 : 0, snap.battery, snap.signal, snap.firmware, snap.lastSeen,
              snap.registeredAt, snap.location, snap.ip, snap.detailsAt, t, t, t).lastInsertRowid,
          );
          head = { id, serial: snap.serial, segStart: null, lastObs: null, values: null, ref: null };
          heads.set(snap.serial, head);
        }
        this.observe(head, this.valuesOf(snap), t);
        s.updateBox.run(snap.id, snap.name, snap.connected ? 1 : 0, snap.battery, snap.signal, snap.firmware, snap.lastSeen,
          snap.registeredAt, snap.location, snap.ip, snap.detailsAt, t, head.segStart, head.id);
        seen.add(head.id);
      }
    }
    // Every other open segment ends at this cycle (the box was not polled: failed cycle or absent).
    for (const head of heads.values()) {
      if (head.segStart === null || seen.has(head.id)) continue;
      this.closeSegment(head, Math.min(t, (head.lastObs as number) + this.maxGapMs));
      s.closeSegment.run(head.id);
    }
    if (c.outcome === 'ok') for (const serial of write.missing) s.markMissing.run(t, serial);

    const hour = hourOf(t);
    if (this.openHour === null || hour > this.openHour) {
      for (const head of heads.values()) {
        if (head.ref !== null && head.ref.hour < hour) {
          this.superseded.push(head.ref);
          head.ref = null;
        }
      }
      this.openHour = hour;
    }
    for (const ref of this.dirty) s.upsertSample.run(ref.hour, ref.id, encodeRow(ref.row));
    const polls = new Map<string, number>();
    for (const ref of this.superseded) this.writeRollup(this.hourStats(ref.row, ref.hour, polls), ref.id);
  }

  /** The box was in the device list at cycle t with these values. */
  private observe(head: Head, values: Values, t: number): void {
    if (head.segStart !== null) {
      const last = head.lastObs as number;
      if (t - last <= this.maxGapMs) this.extendSegment(head, t);
      else this.closeSegment(head, last + this.maxGapMs);
    }
    const ref = this.rowFor(head, hourOf(t));
    if (head.segStart === null) head.segStart = t;
    if (addObservation(ref.row, t - ref.hour * HOUR_MS, head.values, values)) this.dirty.add(ref);
    head.values = values;
    head.lastObs = t;
  }

  /** Carries an open segment across hour boundaries up to t: the old hour is covered to its end. */
  private extendSegment(head: Head, t: number): void {
    const target = hourOf(t);
    while (head.ref !== null && head.ref.hour < target) {
      const ref = head.ref;
      const t0 = ref.hour * HOUR_MS;
      ref.row.pieces.push({ start: Math.max(head.segStart as number, t0) - t0, end: HOUR_MS });
      this.dirty.add(ref);
      const next = this.rowFor(head, ref.hour + 1);
      addObservation(next.row, 0, head.values, head.values as Values);
    }
  }

  /** Ends the open segment of a box at `end`, writing its pieces into every hour it reaches. */
  private closeSegment(head: Head, end: number): void {
    const segStart = head.segStart as number;
    for (;;) {
      const ref = head.ref;
      if (ref === null) break; // cannot happen: an open segment always has a row
      const t0 = ref.hour * HOUR_MS;
      const start = Math.max(segStart, t0) - t0;
      this.dirty.add(ref);
      if (end <= t0 + HOUR_MS) {
        ref.row.pieces.push({ start, end: end - t0 });
        break;
      }
      ref.row.pieces.push({ start, end: HOUR_MS });
      const next = this.rowFor(head, ref.hour + 1);
      addObservation(next.row, 0, head.values, head.values as Values);
    }
    head.segStart = null;
  }

  /** The box's row for `hour`, creating it (and retiring the previous one) if needed. */
  private rowFor(head: Head, hour: number): RowRef {
    if (head.ref !== null && head.ref.hour === hour) return head.ref;
    if (head.ref !== null) this.superseded.push(head.ref);
    head.ref = { id: head.id, hour, row: emptyRow() };
    this.dirty.add(head.ref);
    return head.ref;
  }

  private writeRollup(st: HourStats, boxId: number): void {
    const milli = (v: number | null): number | null => (v === null ? null : Math.round(v * 1000));
    this.writer().upsertRollup.run(
      boxId, st.hour, st.polls, st.observedMs, st.observedMs - st.connectedMs,
      st.observedMs - st.battery.ms, st.battery.min, st.battery.max, milli(st.battery.mean),
      st.observedMs - st.signal.ms, st.signal.min, st.signal.max, milli(st.signal.mean),
    );
  }

  private valuesOf(snap: BoxSnapshot): Values {
    return [snap.battery, snap.signal, snap.connected ? 1 : 0, this.intern(snap.firmware)];
  }

  private intern(value: string): number {
    const known = this.stringIds.get(value);
    if (known !== undefined) return known;
    this.writer().internInsert.run(value);
    const id = this.s.internGet.get(value) as number;
    this.stringIds.set(value, id);
    this.stringValues.set(id, value);
    return id;
  }

  private stringOf(id: number): string {
    let v = this.stringValues.get(id);
    if (v === undefined) {
      this.loadStrings();
      v = this.stringValues.get(id);
    }
    if (v === undefined) throw new StoreError('store_corrupt', `sample refers to unknown string id ${id}`);
    return v;
  }

  private loadStrings(): void {
    for (const r of this.s.allStrings.all() as { id: number; value: string }[]) {
      this.stringIds.set(r.value, r.id);
      this.stringValues.set(r.id, r.value);
    }
  }

  /** Write-path state, loaded from the database on first use (and after a rollback). */
  private loadHeads(): Map<string, Head> {
    if (this.heads !== null) return this.heads;
    this.loadStrings();
    const heads = new Map<string, Head>();
    const byId = new Map<number, Head>();
    for (const b of this.s.allBoxes.all() as BoxRow[]) {
      const head: Head = {
        id: b.id,
        serial: b.serial,
        segStart: b.seg_start,
        lastObs: b.last_polled,
        values: [b.battery, b.signal, b.connected, this.stringIds.get(b.firmware) ?? this.internReadOnly(b.firmware)],
        ref: null,
      };
      heads.set(b.serial, head);
      byId.set(b.id, head);
    }
    this.lastCycleT = this.s.maxCycle.get() as number | null;
    this.openHour = this.lastCycleT === null ? null : hourOf(this.lastCycleT);
    if (this.openHour !== null) {
      for (const r of this.s.samplesFrom.all(this.openHour) as { hour: number; box_id: number; data: Buffer }[]) {
        const head = byId.get(r.box_id);
        if (head !== undefined && (head.ref === null || head.ref.hour < r.hour)) head.ref = { id: r.box_id, hour: r.hour, row: decodeRow(r.data) };
      }
    }
    this.heads = heads;
    return heads;
  }

  /** A firmware string with no id yet (a box never sampled): interned lazily; -1 never matches. */
  private internReadOnly(value: string): number {
    return this.db.readonly ? -1 : this.intern(value);
  }

  private resetCaches(): void {
    this.heads = null;
    this.lastCycleT = null;
    this.openHour = null;
    this.stringIds.clear();
    this.stringValues.clear();
  }

  private writer(): Statements {
    if (this.db.readonly) throw new StoreError('store_read_only', 'the store was opened read-only');
    return this.s;
  }

  // ---------------------------------------------------------------- reading

  boxes(): BoxState[] {
    return (this.s.allBoxes.all() as BoxRow[]).map(toBoxState);
  }

  box(serial: string): BoxState | undefined {
    const row = this.s.box.get(serial) as BoxRow | undefined;
    return row === undefined ? undefined : toBoxState(row);
  }

  lastCycle(): CycleRecord | undefined {
    const r = this.s.lastCycle.get() as CycleRow | undefined;
    if (r === undefined) return undefined;
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
    for (const st of this.hourStatsOfBox(box, hourOf(from), hourOf(to - 1) + 1)) {
      const key = Math.floor((st.hour * HOUR_MS) / bucketMs) * bucketMs;
      let list = buckets.get(key);
      if (list === undefined) buckets.set(key, (list = []));
      list.push(st);
    }
    const points: RollupPoint[] = [];
    for (const [t, list] of [...buckets].sort((a, b) => a[0] - b[0])) points.push(bucketPoint(t, metric, list));
    return { kind: 'rollup', metric, from, to, bucketMs, points };
  }

  /** Hourly statistics of one box for hours [fromHour, toHour): rollups for closed hours, live for open ones. */
  private hourStatsOfBox(box: BoxRef, fromHour: number, toHour: number): HourStats[] {
    const open = this.currentOpenHour();
    const out: HourStats[] = [];
    const closedTo = open === null ? toHour : Math.min(toHour, open);
    for (const r of this.s.rollupsOfBox.all(box.id, fromHour, closedTo) as RollupRow[]) out.push(fromRollupRow(r));
    const polls = new Map<string, number>();
    const [, lastHour] = this.dataHours(box, fromHour * HOUR_MS, toHour * HOUR_MS);
    for (let hour = Math.max(fromHour, closedTo); hour < toHour && hour <= lastHour; hour++) {
      const row = this.liveRow(box, hour);
      if (row !== undefined) out.push(this.hourStats(row, hour, polls));
    }
    return out;
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

  /** Rollup statistics of one row; `polls` memoizes cycle counts per covered piece. */
  private hourStats(row: HourRow, hour: number, polls: Map<string, number>): HourStats {
    const t0 = hour * HOUR_MS;
    let count = 0;
    for (const p of row.pieces) {
      const key = `${t0 + p.start}:${t0 + p.end}`;
      let n = polls.get(key);
      if (n === undefined) polls.set(key, (n = this.s.countCycles.get(t0 + p.start, t0 + p.end) as number));
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

  private present(slot: Slot, value: number | null): number | string | null {
    if (slot === SLOT.firmware && value !== null) return this.stringOf(value);
    return value;
  }

  /**
   * How the database's times were taken: `simulated` for a demo database (the app ran on the
   * simulator's clock, ahead of the wall clock), absent otherwise.
   */
  clockKind(): string | undefined {
    return this.s.getMeta.get('clock') as string | undefined;
  }

  /** Marks the database's times as simulated (`boxwatch demo`). */
  markSimulatedClock(): void {
    this.s.setMeta.run('clock', 'simulated');
  }

  private rawPrunedBefore(): number {
    const v = this.s.getMeta.get('raw_pruned_before') as string | undefined;
    return v === undefined ? -Infinity : Number(v);
  }

  // ---------------------------------------------------------------- retention

  /**
   * Deletes raw sample rows older than `rawMs`, and rollups and cycles older than `rollupMs`, in
   * statements of at most 500 rows, each its own transaction (other connections and the next
   * cycle get the database between them). With `maxRows`, stops after about that many rows so
   * that the caller can yield; see pruneGradually. Returns the number of rows deleted. Raw
   * retention under 2 hours counts as 2 hours.
   */
  prune(now: number, retention: RetentionMs, options: PruneOptions = {}): number {
    const s = this.writer();
    const budget = options.maxRows ?? Infinity;
    let deleted = 0;
    this.loadHeads();
    // The open hour's rows stay, whatever the setting: they are still being written.
    let rawHour = hourOf(now - Math.max(retention.rawMs, MIN_RAW_RETENTION_MS));
    if (this.openHour !== null) rawHour = Math.min(rawHour, this.openHour);
    const rollupHour = hourOf(now - retention.rollupMs);
    const drain = (stmt: Database.Statement, ...args: number[]): boolean => {
      for (;;) {
        if (deleted >= budget) return false;
        const n = stmt.run(...args).changes;
        deleted += n;
        if (n < PRUNE_BATCH) return true;
      }
    };
    if (!drain(s.pruneSamples, rawHour)) return deleted;
    if (rawHour * HOUR_MS > this.rawPrunedBefore()) s.setMeta.run('raw_pruned_before', String(rawHour * HOUR_MS));
    for (const id of s.boxIds.all() as number[]) if (!drain(s.pruneRollups, id, id, rollupHour)) return deleted;
    drain(s.pruneCycles, now - retention.rollupMs);
    return deleted;
  }

  close(): void {
    this.db.close();
  }
}

/**
 * Prunes in steps of about `batch` rows, yielding to the event loop between them so that a
 * daemon keeps polling while a large backlog is deleted. Returns the rows deleted.
 */
export async function pruneGradually(store: SqliteStore, now: number, retention: RetentionMs, options: { batch?: number; signal?: AbortSignal } = {}): Promise<number> {
  const batch = options.batch ?? PRUNE_BATCH;
  let total = 0;
  for (;;) {
    options.signal?.throwIfAborted();
    const n = store.prune(now, retention, { maxRows: batch });
    total += n;
    if (n < batch) return total;
    await new Promise<void>((resolve) => setImmediate(resolve));
  }
}

/** Every statement the store runs, prepared once. */
function prepareStatements(db: Database.Database) {
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
             registered_at = ?, location = ?, ip = ?, details_at = ?, last_polled = ?, missing_since = NULL, seg_start = ? WHERE id = ?`,
        ),
    closeSegment: p('UPDATE boxes SET seg_start = NULL WHERE id = ?'),
    markMissing: p('UPDATE boxes SET missing_since = coalesce(missing_since, ?) WHERE serial = ?'),
    allBoxes: p('SELECT * FROM boxes ORDER BY serial'),
    box: p('SELECT * FROM boxes WHERE serial = ?'),
    boxRef: p('SELECT id, serial, name, seg_start, last_polled, first_seen FROM boxes WHERE serial = ?'),
    boxRefs: p('SELECT id, serial, name, seg_start, last_polled, first_seen FROM boxes ORDER BY serial'),
    sample: p('SELECT data FROM samples WHERE hour = ? AND box_id = ?').pluck(),
    samplesOfHour: p('SELECT box_id, data FROM samples WHERE hour = ?'),
    samplesFrom: p('SELECT hour, box_id, data FROM samples WHERE hour >= ?'),
    upsertSample: p('INSERT INTO samples (hour, box_id, data) VALUES (?, ?, ?) ON CONFLICT (hour, box_id) DO UPDATE SET data = excluded.data'),
    upsertRollup: p(
          `INSERT OR REPLACE INTO rollups (box_id, hour, polls, observed_ms, disconnected_ms, battery_gap_ms, battery_min, battery_max,
             battery_mean_milli, signal_gap_ms, signal_min, signal_max, signal_mean_milli) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
        ),
    rollupsOfBox: p('SELECT * FROM rollups WHERE box_id = ? AND hour >= ? AND hour < ? ORDER BY hour'),
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

type Statements = ReturnType<typeof prepareStatements>;

interface BoxRefRow {
  id: number;
  serial: string;
  name: string;
  seg_start: number | null;
  last_polled: number;
  first_seen: number;
}

function toBoxRef(r: BoxRefRow): BoxRef {
  return { id: r.id, serial: r.serial, name: r.name, segStart: r.seg_start, lastPolled: r.last_polled, firstSeen: r.first_seen };
}

function toBoxState(b: BoxRow): BoxState {
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

function numStats(s: { valueMs: number; min: number | null; max: number | null; weighted: number }): NumStats {
  return { ms: s.valueMs, min: s.min, max: s.max, mean: s.valueMs > 0 ? s.weighted / s.valueMs : null };
}

function fromRollupRow(r: RollupRow): HourStats {
  const mean = (v: number | null): number | null => (v === null ? null : v / 1000);
  return {
    hour: r.hour,
    polls: r.polls,
    observedMs: r.observed_ms,
    connectedMs: r.observed_ms - r.disconnected_ms,
    battery: { ms: r.observed_ms - r.battery_gap_ms, min: r.battery_min, max: r.battery_max, mean: mean(r.battery_mean_milli) },
    signal: { ms: r.observed_ms - r.signal_gap_ms, min: r.signal_min, max: r.signal_max, mean: mean(r.signal_mean_milli) },
  };
}

/** Aggregates hourly statistics into one bucket's point. */
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
