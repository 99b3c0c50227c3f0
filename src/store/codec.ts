/**
 * The compact form of one box's samples over one hour: the stretches of the hour that polls
 * covered ("pieces") and the points at which a metric changed ("events"), delta-encoded into a
 * small byte string with varints and zigzag integers. See docs/storage.md for the layout.
 *
 * Values are numbers here: battery and signal as reported (null = absent), connected as 0/1 and
 * firmware as the id of an interned string. Times inside a row are millisecond offsets from the
 * start of the hour.
 */
import { StoreError } from './errors.js';

export const HOUR_MS = 3_600_000;
/** Metric slots in a row, in this order; bit i of an event's mask says slot i changed. */
export const SLOT = { battery: 0, signal: 1, connected: 2, firmware: 3 } as const;
export const SLOTS = 4;
const FULL_MASK = (1 << SLOTS) - 1;
const FORMAT = 1;

export type Slot = (typeof SLOT)[keyof typeof SLOT];
/** The four metric values of one observation. */
export type Values = [battery: number | null, signal: number | null, connected: number, firmware: number];

/** A covered stretch [start, end) of the hour, in ms offsets. */
export interface Piece {
  start: number;
  end: number;
}

/** At offset `at`, the slots in `mask` took the values in `values` (other entries are ignored). */
export interface RowEvent {
  at: number;
  mask: number;
  values: Values;
}

export interface HourRow {
  pieces: Piece[];
  events: RowEvent[];
}

/** A stretch [start, end) of absolute time during which a metric held one value. */
export interface Run {
  start: number;
  end: number;
  value: number | null;
}

export function hourOf(t: number): number {
  return Math.floor(t / HOUR_MS);
}

export function emptyRow(): HourRow {
  return { pieces: [], events: [] };
}

/** Bits of the slots whose values differ; every slot when there is no previous observation. */
export function diffMask(prev: Values | null, next: Values): number {
  if (prev === null) return FULL_MASK;
  let mask = 0;
  for (let i = 0; i < SLOTS; i++) if (!Object.is(prev[i], next[i])) mask |= 1 << i;
  return mask;
}

/**
 * Appends an observation at offset `at`: a full event when the row has none yet (so that every
 * row decodes on its own), else only the slots that changed since `prev`.
 */
export function addObservation(row: HourRow, at: number, prev: Values | null, next: Values): boolean {
  const mask = row.events.length === 0 ? FULL_MASK : diffMask(prev, next);
  if (mask === 0) return false;
  const last = row.events[row.events.length - 1];
  if (last !== undefined && last.at === at) {
    last.mask |= mask;
    last.values = [...next] as Values;
  } else {
    row.events.push({ at, mask, values: [...next] as Values });
  }
  return true;
}

// ---- bytes ----

class Writer {
  private buf = Buffer.allocUnsafe(128);
  private len = 0;

  private room(n: number): void {
    if (this.len + n <= this.buf.length) return;
    const next = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.len + n));
    this.buf.copy(next, 0, 0, this.len);
    this.buf = next;
  }

  byte(b: number): void {
    this.room(1);
    this.buf[this.len++] = b;
  }

  /** Unsigned varint of a non-negative safe integer (7 bits per byte, low first). */
  varint(v: number): void {
    this.room(8);
    while (v >= 0x80) {
      this.buf[this.len++] = (v % 0x80) | 0x80;
      v = Math.floor(v / 0x80);
    }
    this.buf[this.len++] = v;
  }

  double(v: number): void {
    this.room(8);
    this.buf.writeDoubleLE(v, this.len);
    this.len += 8;
  }

  bytes(): Buffer {
    return Buffer.from(this.buf.subarray(0, this.len));
  }
}

class Reader {
  private pos = 0;
  constructor(private readonly buf: Uint8Array) {}

  get done(): boolean {
    return this.pos >= this.buf.length;
  }

  byte(): number {
    if (this.pos >= this.buf.length) throw corrupt();
    return this.buf[this.pos++] as number;
  }

  varint(): number {
    let v = 0;
    let scale = 1;
    for (;;) {
      const b = this.byte();
      v += (b & 0x7f) * scale;
      if (b < 0x80) return v;
      scale *= 0x80;
      if (scale > 2 ** 56) throw corrupt();
    }
  }

  double(): number {
    if (this.pos + 8 > this.buf.length) throw corrupt();
    const v = Buffer.from(this.buf.buffer, this.buf.byteOffset + this.pos, 8).readDoubleLE(0);
    this.pos += 8;
    return v;
  }
}

function corrupt(): StoreError {
  return new StoreError('store_corrupt', 'a stored sample row is damaged (truncated or malformed)');
}

const zigzag = (d: number): number => (d >= 0 ? 2 * d : -2 * d - 1);
const unzigzag = (z: number): number => (z % 2 === 0 ? z / 2 : -(z + 1) / 2);
const MAX_DELTA = 2 ** 50;

/**
 * Value codes: 0 = null; 1 = a float64 follows; n >= 2 = integer whose zigzag delta from the
 * slot's previous integer is n - 2.
 */
function writeValue(w: Writer, base: number[], slot: number, v: number | null): void {
  if (v === null) {
    w.byte(0);
    return;
  }
  const prev = base[slot] as number;
  if (Number.isSafeInteger(v) && Math.abs(v - prev) < MAX_DELTA) {
    w.varint(zigzag(v - prev) + 2);
    base[slot] = v;
  } else {
    w.byte(1);
    w.double(v);
  }
}

function readValue(r: Reader, base: number[], slot: number): number | null {
  const code = r.varint();
  if (code === 0) return null;
  if (code === 1) return r.double();
  const v = (base[slot] as number) + unzigzag(code - 2);
  base[slot] = v;
  return v;
}

/** Layout: format byte, piece count, pieces (start as gap from previous end, end as distance to the hour's end), then events (time delta, mask byte, masked values). */
export function encodeRow(row: HourRow): Buffer {
  const w = new Writer();
  w.byte(FORMAT);
  w.varint(row.pieces.length);
  let prevEnd = 0;
  for (const p of row.pieces) {
    w.varint(p.start - prevEnd);
    w.varint(HOUR_MS - p.end);
    prevEnd = p.end;
  }
  let prevAt = 0;
  const base = [0, 0, 0, 0];
  for (const e of row.events) {
    w.varint(e.at - prevAt);
    prevAt = e.at;
    w.byte(e.mask);
    for (let s = 0; s < SLOTS; s++) if (e.mask & (1 << s)) writeValue(w, base, s, e.values[s] as number | null);
  }
  return w.bytes();
}

export function decodeRow(data: Uint8Array): HourRow {
  const r = new Reader(data);
  if (r.byte() !== FORMAT) throw corrupt();
  const n = r.varint();
  const pieces: Piece[] = [];
  let prevEnd = 0;
  for (let i = 0; i < n; i++) {
    const start = prevEnd + r.varint();
    const end = HOUR_MS - r.varint();
    if (end < start) throw corrupt();
    pieces.push({ start, end });
    prevEnd = end;
  }
  const events: RowEvent[] = [];
  const base = [0, 0, 0, 0];
  const current: Values = [null, null, 0, 0];
  let at = 0;
  while (!r.done) {
    at += r.varint();
    const mask = r.byte();
    if (mask === 0 || mask > FULL_MASK) throw corrupt();
    for (let s = 0; s < SLOTS; s++) if (mask & (1 << s)) current[s] = readValue(r, base, s) as number;
    events.push({ at, mask, values: [...current] as Values });
  }
  return { pieces, events };
}

/** The values after the last event of a row (what a box looked like at the end of it). */
export function finalValues(row: HourRow): Values | null {
  let current: Values | null = null;
  for (const e of row.events) current = current === null ? [...e.values] : merge(current, e);
  return current;
}

function merge(current: Values, e: RowEvent): Values {
  const next: Values = [...current];
  for (let s = 0; s < SLOTS; s++) if (e.mask & (1 << s)) next[s] = e.values[s] as number;
  return next;
}

/**
 * The runs of one slot over the covered pieces of a row whose hour starts at `hourStart`,
 * clipped to [from, to), adjacent equal values merged.
 */
export function rowRuns(row: HourRow, hourStart: number, slot: Slot, from = -Infinity, to = Infinity): Run[] {
  const bit = 1 << slot;
  // Change points of this slot.
  const steps: { at: number; value: number | null }[] = [];
  for (const e of row.events) if (e.mask & bit) steps.push({ at: e.at, value: e.values[slot] });
  const runs: Run[] = [];
  let k = -1; // index of the last step at or before the cursor
  for (const p of row.pieces) {
    let cursor = Math.max(p.start, from - hourStart);
    const end = Math.min(p.end, to - hourStart);
    if (cursor >= end) continue;
    while (k + 1 < steps.length && (steps[k + 1] as { at: number }).at <= cursor) k++;
    while (cursor < end) {
      const next = k + 1 < steps.length ? Math.min((steps[k + 1] as { at: number }).at, end) : end;
      if (k >= 0 && next > cursor) pushRun(runs, hourStart + cursor, hourStart + next, (steps[k] as { value: number | null }).value);
      cursor = next;
      if (k + 1 < steps.length && (steps[k + 1] as { at: number }).at <= cursor) k++;
    }
  }
  return runs;
}

/** Appends a run, merging it into the previous one when contiguous and equal. */
export function pushRun(runs: Run[], start: number, end: number, value: number | null): void {
  const last = runs[runs.length - 1];
  if (last !== undefined && last.end === start && Object.is(last.value, value)) last.end = end;
  else runs.push({ start, end, value });
}

/** Statistics of one slot's runs, for rollups. */
export interface RunStats {
  /** Covered ms. */
  observedMs: number;
  /** Covered ms with a non-null value. */
  valueMs: number;
  min: number | null;
  max: number | null;
  /** Time-weighted sum of value × ms. */
  weighted: number;
}

export function runStats(runs: readonly Run[]): RunStats {
  const s: RunStats = { observedMs: 0, valueMs: 0, min: null, max: null, weighted: 0 };
  for (const r of runs) {
    const ms = r.end - r.start;
    s.observedMs += ms;
    if (r.value === null) continue;
    s.valueMs += ms;
    s.weighted += r.value * ms;
    if (s.min === null || r.value < s.min) s.min = r.value;
    if (s.max === null || r.value > s.max) s.max = r.value;
  }
  return s;
}
