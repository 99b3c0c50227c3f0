/**
 * `boxwatch export` reads a box's history a week at a time (src/export/points.ts, RUNS_WINDOW_MS),
 * so that its memory does not grow with the range exported (BENCHMARKS.md, "Export: memory at 90
 * days × 10,000 boxes"): the store is asked for a week at most at once, and a run that goes on
 * across weeks is still one line, as one read of the whole range gives it. A real SQLite file
 * written by the store.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, expect, it, vi } from 'vitest';
import { exportHistory } from '../../src/export/export.js';
import { RUNS_WINDOW_MS, storedSpan } from '../../src/export/points.js';
import { callbackSink } from '../../src/export/sink.js';
import { openStore, type RawPoint, type SqliteStore } from '../../src/store/index.js';
import { HOUR, okCycle, snap } from '../store/model.js';

const DAY = 24 * HOUR;
const T0 = Date.parse('2026-03-01T00:00:00Z');
let dir: string | undefined;
let store: SqliteStore | undefined;

afterEach(() => {
  vi.restoreAllMocks();
  store?.close();
  store = undefined;
  if (dir) rmSync(dir, { recursive: true, force: true });
  dir = undefined;
});

it('exports three weeks a week at a time, a battery level held for 11 days across a week’s end as one line', async () => {
  dir = mkdtempSync(join(tmpdir(), 'boxwatch-export-windows-'));
  store = openStore(join(dir, 'boxwatch.db'), { maxGapMs: HOUR });
  // One box polled every 30 minutes for 21 days: battery 80 %, 50 % from day 5 to day 16, the signal a new value every day.
  for (let t = T0; t < T0 + 21 * DAY; t += 30 * 60_000) {
    const day = Math.floor((t - T0) / DAY);
    store.recordCycle(okCycle(t, [snap('BX-1', { battery: day >= 5 && day < 16 ? 50 : 80, signal: -60 - day })]));
  }
  store.close();
  store = openStore(join(dir, 'boxwatch.db'), { maxGapMs: HOUR, readonly: true }); // as `boxwatch export` opens it
  const span = storedSpan(store);
  if (span === null) throw new Error('nothing stored');
  // What one read of the whole range answers (after the export: it reads three weeks of rows at once).
  const whole = (metric: 'battery' | 'signal'): string[] =>
    (store!.history('BX-1', metric, span.from, span.to, { kind: 'raw' }).points as RawPoint[]).map((p) => `BX-1,${metric},${p.t},${p.until ?? p.t},${new Date(p.t).toISOString()},${p.value}`);

  const history = vi.spyOn(store, 'history');
  let out = '';
  await exportHistory(store, { span, boxes: '*', metrics: ['battery', 'signal'], format: 'csv' }, callbackSink((text) => (out += text)));

  const ranges = history.mock.calls.map(([, , from, to]) => to - from);
  expect(ranges).toHaveLength(2 * 4); // 2 metrics × 4 windows (21 days and the last poll's validity)
  expect(Math.max(...ranges)).toBe(RUNS_WINDOW_MS);
  history.mockRestore();
  const lines = out.trimEnd().split('\n').slice(1);
  expect(lines).toEqual([...whole('battery'), ...whole('signal')]);
  const battery = lines.filter((l) => l.startsWith('BX-1,battery,')).map((l) => l.split(','));
  expect(battery.map((f) => f[5])).toEqual(['80', '50', '80']);
  expect(Number(battery[1]![3]) - Number(battery[1]![2])).toBe(11 * DAY);
  expect(lines.filter((l) => l.startsWith('BX-1,signal,'))).toHaveLength(21);
});
