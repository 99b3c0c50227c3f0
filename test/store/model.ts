/**
 * A brute-force model of what the store must answer, built from the same cycles: every poll is
 * kept. A value observed at a cycle holds until the next cycle (ok or failed), at most maxGap.
 * Also a seeded generator of cycle sequences with the awkward cases: failed cycles, missing and
 * returning boxes, pauses just under, at and over maxGap, long outages, nulls, non-integer values,
 * firmware changes, boxes appearing late.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BoxSnapshot } from '../../src/domain/model.js';
import type { CycleWrite, Metric } from '../../src/domain/store.js';

export const MINUTE = 60_000;
export const HOUR = 3_600_000;
export const MAX_GAP = 5 * MINUTE;

export function tempDir(): { dir: string; cleanup: () => void } {
  const dir = mkdtempSync(join(tmpdir(), 'boxwatch-store-'));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

export function snap(serial: string, over: Partial<BoxSnapshot> = {}): BoxSnapshot {
  return {
    serial,
    id: Number(serial.replace(/\D/g, '')) || 1,
    name: `Box ${serial}`,
    connected: true,
    battery: 80,
    signal: -70,
    firmware: '3.4.2',
    lastSeen: 0,
    registeredAt: 1_600_000_000_000,
    location: 'Lyon, Depot',
    ip: '10.0.0.1',
    detailsAt: null,
    ...over,
  };
}

export function okCycle(t: number, seen: BoxSnapshot[], missing: string[] = []): CycleWrite {
  return {
    cycle: { startedAt: t, durationMs: 120, requests: 1 + seen.length, outcome: 'ok', errorCode: null, error: null, boxes: seen.length, detailsFetched: 0 },
    seen,
    missing,
  };
}

export function failedCycle(t: number, code = 'unavailable'): CycleWrite {
  return {
    cycle: { startedAt: t, durationMs: 10_000, requests: 3, outcome: 'failed', errorCode: code, error: 'gateway unreachable', boxes: 0, detailsFetched: 0 },
    seen: [],
    missing: [],
  };
}

export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

type Value = number | string | null;

export function metricOf(s: BoxSnapshot, metric: Metric): Value {
  switch (metric) {
    case 'battery':
      return s.battery;
    case 'signal':
      return s.signal;
    case 'connected':
      return s.connected ? 1 : 0;
    case 'firmware':
      return s.firmware;
  }
}

/** Every cycle, every observation. */
export class Model {
  readonly cycles: { t: number; seen: Map<string, BoxSnapshot> | null }[] = [];
  constructor(readonly maxGap = MAX_GAP) {}

  add(write: CycleWrite): void {
    this.cycles.push({ t: write.cycle.startedAt, seen: write.cycle.outcome === 'ok' ? new Map(write.seen.map((s) => [s.serial, s])) : null });
  }

  /** Index of the last cycle at or before t, -1 if none. */
  private indexAt(t: number): number {
    let lo = 0;
    let hi = this.cycles.length - 1;
    let found = -1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      if ((this.cycles[mid] as { t: number }).t <= t) {
        found = mid;
        lo = mid + 1;
      } else hi = mid - 1;
    }
    return found;
  }

  valueAt(serial: string, metric: Metric, t: number): { value: Value } | undefined {
    const i = this.indexAt(t);
    if (i < 0) return undefined;
    const c = this.cycles[i] as { t: number; seen: Map<string, BoxSnapshot> | null };
    const s = c.seen?.get(serial);
    if (s === undefined || t >= c.t + this.maxGap) return undefined;
    return { value: metricOf(s, metric) };
  }

  /** The step function of one metric as [start, end, value] intervals over [from, to). */
  intervals(serial: string, metric: Metric, from: number, to: number): { start: number; end: number; value: Value; cycleT: number }[] {
    const out: { start: number; end: number; value: Value; cycleT: number }[] = [];
    for (let i = Math.max(0, this.indexAt(from)); i < this.cycles.length; i++) {
      const c = this.cycles[i] as { t: number; seen: Map<string, BoxSnapshot> | null };
      if (c.t >= to) break;
      const s = c.seen?.get(serial);
      if (s === undefined) continue;
      const next = this.cycles[i + 1]?.t ?? Infinity;
      const start = Math.max(c.t, from);
      const end = Math.min(next, c.t + this.maxGap, to);
      if (end > start) out.push({ start, end, value: metricOf(s, metric), cycleT: c.t });
    }
    return out;
  }

  /** Hourly statistics as a rollup would hold them. */
  /** Statistics of [start, start + span): one hour by default, or a longer bucket of hours. */
  hourStats(serial: string, metric: Metric, start: number, span = HOUR): { min: number | null; max: number | null; mean: number | null; count: number; observed: number } | undefined {
    const iv = this.intervals(serial, metric, start, start + span);
    const count = this.cycles.filter((c) => c.t >= start && c.t < start + span && c.seen?.has(serial)).length;
    if (iv.length === 0) return undefined;
    let observed = 0;
    let ms = 0;
    let sum = 0;
    let min: number | null = null;
    let max: number | null = null;
    for (const { start, end, value } of iv) {
      observed += end - start;
      if (value === null) continue;
      const v = value as number;
      ms += end - start;
      sum += v * (end - start);
      if (min === null || v < min) min = v;
      if (max === null || v > max) max = v;
    }
    return { min, max, mean: ms > 0 ? sum / ms : null, count, observed };
  }

  uptime(serial: string, from: number, to: number): { fraction: number | null; observedMs: number } {
    let observed = 0;
    let connected = 0;
    for (const { start, end, value } of this.intervals(serial, 'connected', from, to)) {
      observed += end - start;
      if (value === 1) connected += end - start;
    }
    return { fraction: observed > 0 ? connected / observed : null, observedMs: observed };
  }
}

/** A seeded sequence of cycles over a few boxes with all the awkward cases. */
export function generateCycles(seed: number, count: number, start: number, boxes = 5): CycleWrite[] {
  const rnd = mulberry32(seed);
  const int = (a: number, b: number): number => a + Math.floor(rnd() * (b - a + 1));
  const firmwares = ['3.4.2', '3.4.1', '3.5.0-rc1'];
  const state = Array.from({ length: boxes }, (_, i) =>
    snap(`BX-${String(i + 1).padStart(3, '0')}`, { battery: int(20, 100), signal: int(-110, -60), firmware: firmwares[0] as string }),
  );
  const present = state.map((_, i) => i === 0);
  const appearAt = state.map((_, i) => (i === 0 ? 0 : int(0, Math.floor(count / 2))));
  const wasPresent = new Set<string>();
  const out: CycleWrite[] = [];
  let t = start;
  for (let i = 0; i < count; i++) {
    const r = rnd();
    if (r < 0.004) t += int(10 * MINUTE, 3 * HOUR); // daemon down
    else if (r < 0.01) t += MAX_GAP; // just continuous
    else if (r < 0.016) t += MAX_GAP + 1; // just a gap
    else if (r < 0.03) t += int(MINUTE, 4 * MINUTE); // a skipped tick or two
    else t += 30_000 + int(-800, 800);
    if (rnd() < 0.03) {
      out.push(failedCycle(t));
      continue;
    }
    const seen = [];
    const missing = [];
    for (let b = 0; b < boxes; b++) {
      const s = state[b] as ReturnType<typeof snap>;
      if (i >= (appearAt[b] as number) && !present[b] && rnd() < (wasPresent.has(s.serial) ? 0.3 : 1)) present[b] = true;
      else if (present[b] && rnd() < 0.01) present[b] = false;
      if (rnd() < 0.01) s.connected = !s.connected;
      if (!s.connected) s.battery = null;
      else if (s.battery === null || rnd() < 0.05) s.battery = Math.max(0, Math.min(100, (s.battery ?? 50) + int(-3, 3)));
      if (s.connected && rnd() < 0.01) s.battery = int(0, 100) + 0.5;
      if (rnd() < 0.1) {
        s.signal = int(-120, -50);
        s.detailsAt = t;
      }
      if (rnd() < 0.003) s.firmware = firmwares[int(0, 2)] as string;
      if (rnd() < 0.002) s.signal = null;
      s.lastSeen = t - int(0, 30_000);
      if (present[b]) {
        seen.push({ ...s });
        wasPresent.add(s.serial);
      } else if (wasPresent.has(s.serial)) missing.push(s.serial);
    }
    out.push(okCycle(t, seen, missing));
  }
  return out;
}
