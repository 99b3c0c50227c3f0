/**
 * Property-style checks against a brute-force model of the same observations (seeded PRNG):
 * valueAt at arbitrary times after compaction, across restarts and after rollup; raw history
 * runs; hourly rollups; uptime windows; and the same answers after pruning the raw data.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { openStore, type SqliteStore } from '../../src/store/index.js';
import { METRICS, type CycleWrite, type Metric } from '../../src/domain/store.js';
import { HOUR, MAX_GAP, Model, generateCycles, mulberry32, tempDir } from './model.js';

const START = Date.parse('2026-03-01T10:17:00Z');

let tmp: ReturnType<typeof tempDir>;
beforeEach(() => {
  tmp = tempDir();
});
afterEach(() => tmp.cleanup());

/** Records the cycles, closing and reopening the store every so often (a restart). */
function record(path: string, cycles: CycleWrite[], model: Model, seed: number): SqliteStore {
  const rnd = mulberry32(seed);
  let store = openStore(path);
  for (const c of cycles) {
    store.recordCycle(c);
    model.add(c);
    if (rnd() < 0.002) {
      store.close();
      store = openStore(path);
    }
  }
  return store;
}

/** Times worth asking about: random ones, and every kind of boundary around cycles and hours. */
function probeTimes(model: Model, seed: number, n: number): number[] {
  const rnd = mulberry32(seed);
  const first = (model.cycles[0] as { t: number }).t;
  const last = (model.cycles[model.cycles.length - 1] as { t: number }).t;
  const times: number[] = [];
  for (let i = 0; i < n; i++) times.push(first - MAX_GAP + Math.floor(rnd() * (last - first + 3 * MAX_GAP)));
  for (let i = 0; i < n; i++) {
    const c = model.cycles[Math.floor(rnd() * model.cycles.length)] as { t: number };
    times.push(c.t, c.t - 1, c.t + 1, c.t + MAX_GAP - 1, c.t + MAX_GAP);
    const h = Math.floor(c.t / HOUR) * HOUR;
    times.push(h, h - 1, h + HOUR);
  }
  times.push(last, last + MAX_GAP - 1, last + MAX_GAP);
  return times;
}

function serialsOf(model: Model): string[] {
  const all = new Set<string>();
  for (const c of model.cycles) for (const s of c.seen?.keys() ?? []) all.add(s);
  return [...all].sort();
}

function expectValuesMatch(store: SqliteStore, model: Model, times: number[]): void {
  const mismatches: string[] = [];
  for (const serial of serialsOf(model)) {
    for (const metric of METRICS) {
      for (const t of times) {
        const want = model.valueAt(serial, metric, t);
        const got = store.valueAt(serial, metric, t);
        if (want?.value !== got?.value || (want === undefined) !== (got === undefined)) {
          mismatches.push(`${serial} ${metric} @${new Date(t).toISOString()} (${t}): want ${JSON.stringify(want?.value)} got ${JSON.stringify(got?.value)}`);
        }
      }
    }
  }
  expect(mismatches.slice(0, 10)).toEqual([]);
}

describe('store against a brute-force model', () => {
  for (const seed of [1, 2, 3]) {
    it(`seed ${seed}: valueAt, raw history, rollups and uptime match the model, before and after a restart`, () => {
      const path = join(tmp.dir, 'model.db');
      const model = new Model();
      const cycles = generateCycles(seed, 2000, START);
      let store = record(path, cycles, model, seed);
      const times = probeTimes(model, seed + 100, 100);
      expectValuesMatch(store, model, times);
      store.close();
      store = openStore(path);
      expectValuesMatch(store, model, times);

      const first = (model.cycles[0] as { t: number }).t;
      const last = (model.cycles[model.cycles.length - 1] as { t: number }).t;
      const rnd = mulberry32(seed + 200);
      for (const serial of serialsOf(model)) {
        // Raw history over random windows: the model's step function, runs of equal values merged.
        for (let i = 0; i < 5; i++) {
          const from = first + Math.floor(rnd() * (last - first));
          const to = from + 1 + Math.floor(rnd() * 6 * HOUR);
          for (const metric of METRICS) {
            const h = store.history(serial, metric, from, to, { kind: 'raw' });
            expect(h.kind).toBe('raw');
            if (h.kind !== 'raw') continue;
            const runs: { t: number; until: number; value: unknown }[] = [];
            for (const iv of model.intervals(serial, metric, from, to)) {
              const prev = runs[runs.length - 1];
              if (prev !== undefined && prev.until === iv.start && prev.value === iv.value) prev.until = iv.end;
              else runs.push({ t: iv.start, until: iv.end, value: iv.value });
            }
            expect(h.points).toEqual(runs);
          }
        }
        // Hourly rollups, closed and open hours alike.
        for (const metric of ['battery', 'signal', 'connected'] as Metric[]) {
          const from = Math.floor(first / HOUR) * HOUR;
          const h = store.history(serial, metric, from, last + HOUR, { kind: 'rollup', maxPoints: 10_000 });
          expect(h.kind).toBe('rollup');
          if (h.kind !== 'rollup') continue;
          expect(h.bucketMs).toBe(HOUR);
          const want = [];
          for (let t = from; t < last + HOUR; t += HOUR) {
            const st = model.hourStats(serial, metric, t);
            if (st === undefined) continue;
            if (metric === 'connected') {
              const up = model.uptime(serial, t, t + HOUR);
              want.push({ t, count: st.count, mean: up.fraction, min: st.min, max: st.max });
            } else want.push({ t, count: st.count, mean: st.mean, min: st.min, max: st.max });
          }
          expect(h.points.map((p) => ({ ...p, mean: p.mean === null ? null : Math.round(p.mean * 1000) / 1000 }))).toEqual(
            want.map((p) => ({ ...p, mean: p.mean === null ? null : Math.round(p.mean * 1000) / 1000 })),
          );
        }
        // Buckets of several hours (long charts): the hours' rollups summed, open hours included.
        for (const metric of ['battery', 'signal', 'connected'] as Metric[]) {
          const h = store.history(serial, metric, Math.floor(first / HOUR) * HOUR, last + HOUR, { kind: 'rollup', maxPoints: 5 });
          if (h.kind !== 'rollup') throw new Error('want rollups');
          expect(h.bucketMs).toBeGreaterThanOrEqual(3 * HOUR);
          const want = [];
          for (let t = Math.floor(first / h.bucketMs) * h.bucketMs; t < last + HOUR; t += h.bucketMs) {
            const st = model.hourStats(serial, metric, t, h.bucketMs);
            if (st === undefined) continue;
            const mean = metric === 'connected' ? model.uptime(serial, t, t + h.bucketMs).fraction : st.mean;
            const [min, max] = metric === 'connected' ? [mean === null ? null : mean < 1 ? 0 : 1, mean === null ? null : mean > 0 ? 1 : 0] : [st.min, st.max];
            want.push({ t, count: st.count, mean, min, max });
          }
          // Rollups keep means to a thousandth per hour: a bucket's mean is within that of the model's.
          const near = (m: number | null) => (m === null ? null : expect.closeTo(m, 2));
          expect(h.points).toEqual(want.map((p) => ({ ...p, mean: near(p.mean) })));
        }
      }
      // Uptime over random windows (partial hours at both ends, the open hour included).
      for (let i = 0; i < 6; i++) {
        const from = first - HOUR + Math.floor(rnd() * (last - first));
        const to = i === 0 ? last + HOUR : from + 1 + Math.floor(rnd() * (last - from + HOUR));
        for (const row of store.uptime(from, to)) {
          const want = model.uptime(row.serial, from, to);
          expect(row.observedMs).toBe(want.observedMs);
          if (want.fraction === null) expect(row.connectedFraction).toBeNull();
          else expect(row.connectedFraction).toBeCloseTo(want.fraction, 9);
        }
      }
      store.close();
    });
  }

  it('after pruning raw data, valueAt is exact from the horizon on and rollups still answer for older hours', () => {
    const path = join(tmp.dir, 'prune.db');
    const model = new Model();
    const store = record(path, generateCycles(7, 2000, START), model, 7);
    const first = (model.cycles[0] as { t: number }).t;
    const last = (model.cycles[model.cycles.length - 1] as { t: number }).t;
    const horizon = Math.floor((first + (last - first) / 2) / HOUR) * HOUR;
    const deleted = store.prune(last, { rawMs: last - horizon, rollupMs: 400 * 24 * HOUR });
    expect(deleted).toBeGreaterThan(0);
    const times = probeTimes(model, 77, 200);
    for (const serial of serialsOf(model)) {
      for (const t of times) {
        const got = store.valueAt(serial, 'battery', t);
        if (t < horizon) expect(got).toBeUndefined();
        else expect(got?.value).toEqual(model.valueAt(serial, 'battery', t)?.value);
      }
      // A range reaching before the horizon is answered from rollups, which match the model.
      const from = Math.floor(first / HOUR) * HOUR;
      const h = store.history(serial, 'signal', from, horizon, { maxPoints: 10_000 });
      expect(h.kind).toBe('rollup');
      if (h.kind !== 'rollup') continue;
      const want = [];
      for (let t = from; t < horizon; t += HOUR) {
        const st = model.hourStats(serial, 'signal', t);
        if (st !== undefined) want.push({ t, min: st.min, max: st.max, count: st.count });
      }
      expect(h.points.map(({ t, min, max, count }) => ({ t, min, max, count }))).toEqual(want);
    }
    store.close();
  });
});
